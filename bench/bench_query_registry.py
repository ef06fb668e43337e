"""Micro-benchmark: what sharing running queries between query-api replicas costs a query.

One query-api and one indexer-api in this process (ASGI, no sockets: the time measured is query-api's own) on a
fresh database of the bench PostgreSQL, an index of 20,000 metrics rows in one window, and one small query run on
DuckDB again and again (`Cache-Control: no-store`, so each one plans from the kept plan and executes). Rounds of
each mode alternate, so both see the same machine:

- `local only`: the registry keeps running queries in this process's memory and writes nothing (what query-api did
  before the registry was shared);
- `shared`: the registry of production (`SharedQueryRegistry`): each query is noted locally and its row sent to
  PostgreSQL off the query's path, in batches.

Printed: per mode, the latency of POST /v1/query (p50, p90, mean) and how many queries' rows reached PostgreSQL
(a query that ends before its batch is sent leaves none).

    .tools/bin/uv run python -m bench.bench_query_registry [--queries 600]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import httpx
from asgi_lifespan import LifespanManager

from bench.harness import Stack
from strata_core.config import Settings
from strata_query.dependencies import query_service_of
from strata_query.shared_registry import SharedQueryRegistry
from strata_services.client import arrow_ipc
from strata_services.sample_data import metrics_index_config, metrics_rows

INDEX = "registry-bench"
ROWS = 20_000
ROUND = 50


class LocalOnlyRegistry(SharedQueryRegistry):
    """The baseline: running queries in memory only, as query-api kept them before they were shared."""

    def _write_soon(self) -> None:
        self._unsent.clear()
        self._ended.clear()


class CountingRegistry(SharedQueryRegistry):
    """Production's registry, counting the rows its writer sends."""

    rows_sent = 0

    def _batch_finished(self) -> None:
        CountingRegistry.rows_sent += len(self._sending)
        super()._batch_finished()


async def _measure(settings: Settings, keys, queries: int) -> dict[str, list[float]]:
    from strata_indexer.app import create_app as indexer_app
    from strata_query.app import create_app as query_app

    admin = {"Authorization": f"Bearer {keys.admin}"}
    indexer, query = indexer_app(settings, background=False), query_app(settings)
    async with LifespanManager(indexer), LifespanManager(query):
        async with (httpx.AsyncClient(transport=httpx.ASGITransport(app=indexer), base_url="http://i") as ic,
                    httpx.AsyncClient(transport=httpx.ASGITransport(app=query), base_url="http://q") as qc):
            created = await ic.post("/v1/indexes", json=metrics_index_config(INDEX), headers=admin)
            assert created.status_code == 201, created.text
            now = int(time.time())
            ingested = await ic.post(f"/v1/indexes/{INDEX}/ingest", headers={
                **admin, "Content-Type": "application/vnd.apache.arrow.stream"},
                content=arrow_ipc(metrics_rows(ROWS, start=now - 1800, span_secs=900)))
            assert ingested.status_code == 200, ingested.text
            service = query_service_of(query)
            shared = service.registry
            registries = {
                "local only": LocalOnlyRegistry(shared.sessions, shared.reads, shared.owner,
                                                settings.query_timeout_secs, shared.problem_form),
                "shared": CountingRegistry(shared.sessions, shared.reads, shared.owner, settings.query_timeout_secs,
                                           shared.problem_form)}
            sql = f'SELECT host, count(*) AS n, max(value) AS m FROM "{INDEX}" WHERE service = \'api\' GROUP BY host'
            headers = {**admin, "Cache-Control": "no-store"}
            latencies: dict[str, list[float]] = {name: [] for name in registries}
            for _ in range(20):  # warm: plan cache, hot tier, DuckDB
                assert (await qc.post("/v1/query", json={"sql": sql}, headers=headers)).status_code == 200
            for round_start in range(0, queries, ROUND):
                for name, registry in registries.items():
                    _use(service, registry)
                    for _ in range(min(ROUND, queries - round_start)):
                        started = time.perf_counter()
                        response = await qc.post("/v1/query", json={"sql": sql}, headers=headers)
                        latencies[name].append(time.perf_counter() - started)
                        assert response.status_code == 200, response.text
            await asyncio.sleep(0.5)
            for registry in registries.values():
                await registry.close()
            _use(service, shared)
    return latencies


def _use(service, registry) -> None:
    """The registry every part of the query service works with: the run's and the cancel poll's (on a query's
    path), the asynchronous plans', and the one the service shows."""
    service.registry = service.runner.registry = service.cancellation.registry = service.plans.registry = registry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=600, help="queries per mode")
    args = parser.parse_args()
    with Stack() as stack:
        settings = Settings(database_url=stack.create_database("strata_registry"),
                            storage_uri=stack.path("objects").resolve().as_uri(), api_keys=stack.keys.as_json(),
                            home=stack.path("home"))
        latencies = asyncio.run(_measure(settings, stack.keys, args.queries))
    print(f"{'mode':<12} {'queries':>8} {'p50 ms':>8} {'p90 ms':>8} {'mean ms':>8}")
    for name, values in latencies.items():
        ordered = sorted(values)
        print(f"{name:<12} {len(values):>8} {ordered[len(ordered) // 2] * 1000:>8.2f} "
              f"{ordered[int(len(ordered) * 0.9)] * 1000:>8.2f} {statistics.fmean(values) * 1000:>8.2f}")
    print(f"rows sent to PostgreSQL by the shared registry: {CountingRegistry.rows_sent} "
          f"of {len(latencies['shared'])} queries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
