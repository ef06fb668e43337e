"""Benchmark: OTLP ingest next to NDJSON ingest of the same rows.

Log records (and spans) in batches of 512, as an OTLP exporter sends them, to `POST /v1/logs` (`/v1/traces`) of
one indexer-api process: OTLP protobuf, OTLP protobuf gzipped (what the Collector and most SDKs send by default),
and NDJSON of exactly the rows the OTLP path stores (the same default schema, the same index settings) to
`POST /v1/indexes/{id}/ingest`. One request in flight, phases alternating between the paths; per path: records/s
and the server's CPU (user + system of the indexer-api process, from /proc) per 1,000 records, the goal being the
OTLP path within 1.2x of NDJSON's CPU. Beside it, the decoding alone in this process (body -> Arrow table), where
the two paths differ.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import time
from typing import Any

import httpx
import pyarrow as pa
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from bench.common import fmt_int, median
from bench.harness import Stack, cpu_seconds_by_tree

SECTION = "otlp"
BATCH = 512
SERVICES = [f"svc-{i:02d}" for i in range(8)]
ROUTES = ["/api/orders", "/api/orders/{id}", "/api/cart", "/api/users/{id}", "/health", "/api/pay"]
MODES = ("ndjson", "otlp", "otlp+gzip")


def _kv(key: str, **value: Any) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(**value))


def _resource(service: str, host: int) -> Resource:
    return Resource(attributes=[
        _kv("service.name", string_value=service), _kv("service.version", string_value="1.8.3"),
        _kv("host.name", string_value=f"{service}-host-{host}"),
        _kv("deployment.environment.name", string_value="prod"),
        _kv("telemetry.sdk.language", string_value="python"), _kv("telemetry.sdk.name", string_value="opentelemetry"),
        _kv("process.pid", int_value=1000 + host)])


def _attributes(rng: random.Random) -> list[KeyValue]:
    return [_kv("http.request.method", string_value=rng.choice(["GET", "POST", "PUT"])),
            _kv("http.route", string_value=rng.choice(ROUTES)),
            _kv("http.response.status_code", int_value=rng.choice([200, 200, 200, 201, 404, 500])),
            _kv("user.id", string_value=f"u-{rng.randrange(100_000)}"),
            _kv("duration_ms", double_value=round(rng.random() * 250, 3))]


def log_batches(count: int, seed: int = 0) -> list[ExportLogsServiceRequest]:
    """`count` requests of BATCH records each, two services (of two hosts) per request, timestamps in the last
    minute: what a Collector's batch processor hands its exporter."""
    rng = random.Random(seed)
    now = time.time_ns()
    batches = []
    for _ in range(count):
        resource_logs = []
        for part in range(2):
            service = rng.choice(SERVICES)
            records = []
            for _ in range(BATCH // 2):
                ts = now - rng.randrange(60 * 10**9)
                traced = rng.random() < 0.7
                records.append(LogRecord(
                    time_unix_nano=ts, observed_time_unix_nano=ts + rng.randrange(10**6),
                    severity_number=rng.choice([9, 9, 9, 13, 17]), severity_text="INFO",
                    body=AnyValue(string_value=f"{rng.choice(['GET', 'POST'])} {rng.choice(ROUTES)} completed in "
                                               f"{rng.randrange(1, 900)} ms for user u-{rng.randrange(100_000)}"),
                    attributes=_attributes(rng),
                    trace_id=rng.randbytes(16) if traced else b"", span_id=rng.randbytes(8) if traced else b"",
                    flags=1 if traced else 0))
            resource_logs.append(ResourceLogs(resource=_resource(service, part), scope_logs=[ScopeLogs(
                scope=InstrumentationScope(name="app.logging", version="1.0"), log_records=records)]))
        batches.append(ExportLogsServiceRequest(resource_logs=resource_logs))
    return batches


def span_batches(count: int, seed: int = 0) -> list[ExportTraceServiceRequest]:
    rng = random.Random(seed)
    now = time.time_ns()
    batches = []
    for _ in range(count):
        resource_spans = []
        for part in range(2):
            service = rng.choice(SERVICES)
            spans = []
            for _ in range(BATCH // 2):
                start = now - rng.randrange(60 * 10**9)
                spans.append(Span(
                    trace_id=rng.randbytes(16), span_id=rng.randbytes(8), parent_span_id=rng.randbytes(8),
                    name=f"{rng.choice(['GET', 'POST'])} {rng.choice(ROUTES)}", kind=rng.choice([1, 2, 3]),
                    start_time_unix_nano=start, end_time_unix_nano=start + rng.randrange(10**5, 10**9),
                    attributes=_attributes(rng), status={"code": rng.choice([0, 0, 1, 2])},
                    events=[Span.Event(time_unix_nano=start + 1000, name="db.query",
                                       attributes=[_kv("db.rows", int_value=rng.randrange(100))])]
                    if rng.random() < 0.2 else []))
            resource_spans.append(ResourceSpans(resource=_resource(service, part), scope_spans=[ScopeSpans(
                scope=InstrumentationScope(name="app.tracing", version="1.0"), spans=spans)]))
        batches.append(ExportTraceServiceRequest(resource_spans=resource_spans))
    return batches


def _ndjson(table: pa.Table) -> bytes:
    """The rows as NDJSON the ingest API reads: timestamps in RFC 3339, nulls left out."""
    out = io.BytesIO()
    for row in table.to_pylist():
        record = {k: (v.isoformat() if k == "timestamp" else v) for k, v in row.items() if v is not None}
        out.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")
    return out.getvalue()


def _bodies(signal: str, batches: int, seed: int) -> dict[str, list[bytes]]:
    from strata_indexer.otlp.schemas import Signal, default_settings
    from strata_indexer.otlp.service import SIGNALS

    kind = Signal(signal)
    fields = default_settings(kind).field_types()
    messages = log_batches(batches, seed) if kind is Signal.LOGS else span_batches(batches, seed)
    protobuf = [m.SerializeToString() for m in messages]
    return {"otlp": protobuf, "otlp+gzip": [gzip.compress(b, compresslevel=6) for b in protobuf],
            "ndjson": [_ndjson(SIGNALS[kind].table(SIGNALS[kind].raw_request.FromString(b), fields))
                       for b in protobuf]}


def _decode_alone(signal: str, batches: int) -> dict[str, float]:
    """CPU milliseconds per 1,000 records of body -> table in this process, for each path's decoder; each of the
    three runs on requests it has not seen, so no value is in the OTLP decoder's cache from an earlier run."""
    from strata_indexer.ingest.decode import decode_body
    from strata_indexer.otlp import wire
    from strata_indexer.otlp.schemas import Signal, default_settings
    from strata_indexer.otlp.service import SIGNALS

    kind = Signal(signal)
    fields = default_settings(kind).field_types()
    spec = SIGNALS[kind]
    decoders = {
        "ndjson": lambda body: decode_body(body, "ndjson", fields),
        "otlp": lambda body: spec.table(wire.parse(spec.request, spec.raw_request, body, wire.PROTOBUF), fields),
        "otlp+gzip": lambda body: spec.table(wire.parse(spec.request, spec.raw_request,
                                                        wire.inflate(body, "gzip", 1 << 30), wire.PROTOBUF), fields),
    }
    runs: dict[str, list[float]] = {mode: [] for mode in decoders}
    for seed in (100, 101, 102):
        bodies = _bodies(signal, batches, seed)
        for mode, decode in decoders.items():
            began = time.process_time()
            rows = sum(decode(body).num_rows for body in bodies[mode])
            runs[mode].append((time.process_time() - began) / rows * 1e6)  # ms per 1,000 records
    return {mode: median(values) for mode, values in runs.items()}


def _phase(client: httpx.Client, server_pid: int, url: str, headers: dict[str, str], bodies: list[bytes]) -> dict:
    cpu_before = cpu_seconds_by_tree({"server": server_pid})["server"]
    began = time.perf_counter()
    for body in bodies:
        response = client.post(url, content=body, headers=headers)
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}: {response.text[:300]}")
    elapsed = time.perf_counter() - began
    cpu = cpu_seconds_by_tree({"server": server_pid})["server"] - cpu_before
    return {"records": len(bodies) * BATCH, "elapsed": elapsed, "cpu": cpu}


def _measure(stack: Stack, server, signal: str, batches: int, rounds: int) -> dict[str, Any]:
    from strata_indexer.otlp.schemas import Signal, default_settings

    warmup = _bodies(signal, 4, seed=0)
    writer = {"Authorization": f"Bearer {stack.keys.writer}"}
    ndjson_index = f"bench-ndjson-{signal}"
    paths = {
        "ndjson": (f"/v1/indexes/{ndjson_index}/ingest", {**writer, "Content-Type": "application/x-ndjson"}),
        "otlp": (f"/v1/{signal}", {**writer, "Content-Type": "application/x-protobuf",
                                   "X-Strata-Index": f"bench-otlp-{signal}"}),
        "otlp+gzip": (f"/v1/{signal}", {**writer, "Content-Type": "application/x-protobuf",
                                        "Content-Encoding": "gzip", "X-Strata-Index": f"bench-otlpgz-{signal}"}),
    }
    with httpx.Client(base_url=server.base_url, timeout=120) as client:
        config = {"index_id": ndjson_index, **default_settings(Signal(signal)).model_dump(mode="json")}
        created = client.post("/v1/indexes", json=config, headers={"Authorization": f"Bearer {stack.keys.admin}"})
        if created.status_code != 201:
            raise RuntimeError(f"create index answered {created.status_code}: {created.text[:300]}")
        for mode in MODES:  # warm-up, not measured: the OTLP indexes are created here, on first use
            _phase(client, server.pid, paths[mode][0], paths[mode][1], warmup[mode])
        phases: dict[str, list[dict]] = {mode: [] for mode in MODES}
        for number in range(rounds):
            # Requests of their own each round and OTLP variant, values the server decoded before being in its
            # cache; NDJSON gets exactly the rows of the round's plain protobuf.
            plain = _bodies(signal, batches, seed=2 * number + 1)
            gzipped = _bodies(signal, batches, seed=2 * number + 2)
            bodies = {"ndjson": plain["ndjson"], "otlp": plain["otlp"], "otlp+gzip": gzipped["otlp+gzip"]}
            for mode in MODES if number % 2 == 0 else MODES[::-1]:
                result = _phase(client, server.pid, paths[mode][0], paths[mode][1], bodies[mode])
                phases[mode].append(result)
                print(f"[otlp] {signal} round {number} {mode:>9}: {result['records'] / result['elapsed']:,.0f} "
                      f"records/s, {result['cpu'] / result['records'] * 1e6:.2f} CPU ms per 1,000", flush=True)
    rows = {}
    for mode, runs in phases.items():
        records = sum(r["records"] for r in runs)
        rows[mode] = {"records": records, "records_per_sec": records / sum(r["elapsed"] for r in runs),
                      "cpu_ms_per_1000": sum(r["cpu"] for r in runs) / records * 1e6,
                      "bytes_per_record": sum(map(len, bodies[mode])) / (len(bodies[mode]) * BATCH)}
    return {"rows": rows, "decode": _decode_alone(signal, min(batches, 20)), "load": os.getloadavg()[0]}


def run(stack: Stack, *, batches: int = 100, rounds: int = 4, signals: tuple[str, ...] = ("logs", "traces")
        ) -> dict[str, Any]:
    database_url = stack.create_database("strata_bench_otlp")
    server = stack.start_indexer(database_url, stack.path("otlp"))
    results = {signal: _measure(stack, server, signal, batches, rounds) for signal in signals}
    return {"signals": results, "batches": batches, "rounds": rounds}


def render(result: dict[str, Any]) -> str:
    lines = [
        "## OTLP ingest next to NDJSON ingest of the same rows",
        "",
        f"Requests of {BATCH} records (two resources of {BATCH // 2}, five attributes each, 70% of log records with "
        "trace context), one in flight, to one indexer-api process (uvicorn, 127.0.0.1): OTLP protobuf to "
        "`/v1/logs` or `/v1/traces`, the same gzipped, and NDJSON of exactly the rows the OTLP path stores (the "
        "default schema, the same index settings) to `/v1/indexes/{id}/ingest`. "
        f"{result['batches']} requests per phase, {result['rounds']} rounds, the order of the paths reversed each "
        "round; each round and OTLP variant sends requests of its own (new trace ids, user ids and durations: the "
        "OTLP decoder caches the JSON of small repeated attributes, which must not flatter it), NDJSON exactly the "
        "rows of the round's plain protobuf. Figures pool the rounds. CPU is "
        "the indexer-api process's user + system time (/proc) over the phase, per 1,000 records; *decode alone* is "
        "body -> Arrow table in the benchmark's process (median of 3 runs, each on requests it has not seen), the "
        "step where the paths differ. Goal: OTLP within 1.2x of NDJSON's server CPU.",
        "",
        "| signal | path | records/s | server CPU per 1,000 records | vs NDJSON | decode alone per 1,000 | "
        "body bytes per record |",
        "|---|---|---|---|---|---|---|",
    ]
    for signal, measured in result["signals"].items():
        base = measured["rows"]["ndjson"]["cpu_ms_per_1000"]
        for mode in MODES:
            row = measured["rows"][mode]
            lines.append(
                f"| {signal} | {mode} | {fmt_int(row['records_per_sec'])} | {row['cpu_ms_per_1000']:.2f} ms | "
                f"{row['cpu_ms_per_1000'] / base:.2f}x | {measured['decode'][mode]:.2f} ms | "
                f"{row['bytes_per_record']:.0f} |")
    return "\n".join(lines)


def main() -> None:
    from bench.report import run_and_write

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=100, help="requests of 512 records per phase")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--signals", default="logs,traces")
    parser.add_argument("--no-write", action="store_true", help="print the section instead of updating the docs")
    args = parser.parse_args()
    signals = tuple(args.signals.split(","))
    run_and_write({SECTION: lambda stack: render(run(stack, batches=args.batches, rounds=args.rounds,
                                                     signals=signals))}, write=not args.no_write)


if __name__ == "__main__":
    main()
