"""A small indexed dataset for the query tests: three windows of metrics-like rows in two tenants, most files
indexed (published snapshots), one left without artifacts so planning falls back to Parquet statistics."""

from __future__ import annotations

from dataclasses import dataclass

from strata_services.sample_data import metrics_rows
from tests.helpers import ndjson
from tests.indexer.indexing_helpers import create_indexed_index, make_runner, run_until_indexed

HOSTS = [f"host-{i:02d}" for i in range(40)]
SERVICES = ["api", "db", "cache", "queue"]
METRICS = ["cpu.user", "cpu.system", "cpu.idle"]


@dataclass(frozen=True)
class Dataset:
    index_id: str
    window: int
    split_ids: list[str]
    unindexed_split_id: str
    rows: list[dict]
    published_uris: list[str]

    @property
    def table(self) -> str:
        """The index as a SQL table name: quoted, since index ids may hold '-'."""
        return f'"{self.index_id}"'


def generate_rows(window: int, count: int, seed: int, host_offset: int) -> list[dict]:
    """Sample rows of one window; a file's rows live on eight hosts of its own (from `host_offset`), so host
    predicates prune whole files, and every 97th value is null."""
    hosts = [HOSTS[(host_offset + k) % len(HOSTS)] for k in range(8)]
    return metrics_rows(count, start=window, span_secs=900, seed=seed, metrics=METRICS, services=SERVICES,
                        hosts=hosts, messages=True, null_value_every=97).to_pylist()


async def ingest(indexer, keys, index_id: str, rows: list[dict], partition: str) -> list[str]:
    response = await indexer.post(f"/v1/indexes/{index_id}/ingest", content=ndjson(rows),
                                  params={"partition_id": partition},
                                  headers={**keys.header(keys.writer), "Content-Type": "application/x-ndjson"})
    assert response.status_code == 200, response.text
    return [s["split_id"] for s in response.json()["splits"]]


async def build_dataset(indexer, keys, spark_factory, window: int) -> Dataset:
    """Files of ~2,000 rows in row groups of 1,024 (so row-group pruning has something to do)."""
    index_id = await create_indexed_index(indexer, keys, parquet={"row_group_size": 1024},
                                          query={"default_lookback_secs": 3 * 86400})
    rows, indexed = [], []
    for w in range(3):
        for part, partition in enumerate(["default", "default", "acme"]):
            batch = generate_rows(window + w * 900, 2000, seed=w * 10 + part, host_offset=(w * 3 + part) * 8)
            for row in batch:
                row["partition_id"] = partition
            rows.extend(batch)
            indexed += await ingest(indexer, keys, index_id, [{k: v for k, v in r.items() if k != "partition_id"}
                                                               for r in batch], partition)
    await run_until_indexed(indexer, keys, make_runner(indexer, spark_factory), indexed)
    late = generate_rows(window + 1800, 500, seed=99, host_offset=35)
    for row in late:
        row["partition_id"] = "default"
    [unindexed] = await ingest(indexer, keys, index_id, [{k: v for k, v in r.items() if k != "partition_id"}
                                                         for r in late], "default")
    rows.extend(late)
    listing = await indexer.get(f"/v1/indexes/{index_id}/splits", params={"state": "published", "limit": 1000},
                                headers=keys.header(keys.writer))
    uris = [s["uri"] for s in listing.json()["splits"]]
    assert len(uris) == len(indexed) + 1
    return Dataset(index_id, window, indexed, unindexed, rows, uris)
