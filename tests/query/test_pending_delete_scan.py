"""A pending delete in query-api's local engine, whose masked row groups are kept in the RAM tier
(`strata_query.execution.masked_tier`): on random tables and random delete conditions (NULL, NaN, LIKE, text
tokens), the first query and every warm one after it hide exactly the rows where the condition is TRUE (a NULL
condition keeps its row), the same rows Spark's scan worker (`strata_jobs.pruned_scan.read_task`, the function
each Spark task runs) hides. No query may return a deleted row (DL-2 at query time)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata_core.domain.fields import FieldType
from strata_core.query.predicate import Compare, InList, Or, TextMatch, evaluate_row, to_nnf
from strata_core.query.predicate_json import predicate_to_json
from strata_core.storage import ObjectStore
from strata_jobs.pruned_scan import ScanTask, read_task, scan_arrow_schema
from strata_query.execution.hot_tier import HotTier
from strata_query.execution.local_query import LocalEngine
from strata_query.execution.scan_request import VIEW, ScanRequest
from strata_query.planning.caches import FooterCache
from tests.helpers import examples
from tests.query_logic.strategies import PREDICATES, ROWS

SCHEMA = pa.schema([("i", pa.int64()), ("f", pa.float64()), ("s", pa.string()), ("t", pa.string()),
                    ("ts", pa.int64())])
COLUMNS = [("f", FieldType.F64), ("i", FieldType.I64), ("s", FieldType.STRING), ("t", FieldType.STRING),
           ("ts", FieldType.I64)]
SQL = f'SELECT i, f, s, t, ts FROM "{VIEW}"'


def _write(directory: Path, name: str, rows: list[dict], row_group_size: int = 4) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path, row_group_size=row_group_size)
    return path.as_uri()


def _engine(root: Path) -> LocalEngine:
    store = ObjectStore(root.as_uri())
    return LocalEngine(HotTier(store, FooterCache(store), 64 << 20), threads=1)


def _task(uri: str, predicate) -> ScanTask:
    groups = list(range(pq.ParquetFile(uri.removeprefix("file://")).metadata.num_row_groups))
    return ScanTask(uri=uri, row_groups=groups, constants={"partition_id": "p"},
                    drop=None if predicate is None else predicate_to_json(predicate))


def _query(engine: LocalEngine, tasks: list[ScanTask], number: int, columns=COLUMNS, sql=SQL) -> list[tuple]:
    request = ScanRequest(query_id=f"q{number}", tasks=tasks, columns=columns, sql_template=sql,
                          extra_filter=None, rows=None)
    stream = engine.open(request)
    try:
        return _sorted(row for batch in stream for row in batch.to_pylist())
    finally:
        stream.close()


def _sorted(rows) -> list[tuple]:
    """Rows as comparable tuples (NaN equal to itself), in one order whatever they came in."""
    return sorted((tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row.values())
                   for row in rows), key=repr)


def _spark_worker_rows(tasks: list[ScanTask]) -> list[tuple]:
    """What Spark's tasks yield for the same tasks (its worker function, on the JSON the driver sends it)."""
    schema = scan_arrow_schema(COLUMNS)
    rows = [row for task in tasks for batch in read_task(ScanTask(**json.loads(json.dumps(asdict(task)))), schema)
            for row in batch.to_pylist()]
    return _sorted({name: row[name] for name in SCHEMA.names} for row in rows)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.lists(ROWS, max_size=12), min_size=1, max_size=3), predicate=PREDICATES.map(to_nnf))
def test_a_pending_delete_hides_exactly_its_rows_on_the_first_and_every_warm_query(tmp_path_factory, files,
                                                                                    predicate):
    root = tmp_path_factory.mktemp("pending")
    uris = [_write(root, f"split-{n}", rows) for n, rows in enumerate(files)]
    tasks = [_task(uri, predicate) for uri in uris]
    expected = _sorted({n: row[n] for n in SCHEMA.names} for rows in files for row in rows
                       if not evaluate_row(predicate, {**row, "partition_id": "p"}))
    engine = _engine(root)
    try:
        first = _query(engine, tasks, 1)
        warm = _query(engine, tasks, 2)
        again = _query(engine, tasks, 3)
    finally:
        engine.close()
    assert first == expected
    assert warm == expected and again == expected
    assert _spark_worker_rows(tasks) == expected


def test_a_column_read_first_after_the_mask_was_kept_is_masked_too(tmp_path):
    rows = [{"i": n, "s": "gone" if n % 3 == 0 else "kept", "t": f"line {n}", "ts": n} for n in range(20)]
    uri = _write(tmp_path, "split", rows)
    task = _task(uri, Compare("s", "=", "gone"))
    engine = _engine(tmp_path)
    try:
        # The first query reads `s` and `ts` only: the mask is kept, `t` is not read yet.
        narrow = _query(engine, [task], 1, columns=[("s", FieldType.STRING), ("ts", FieldType.I64)],
                        sql=f'SELECT s, ts FROM "{VIEW}"')
        wide = _query(engine, [task], 2)
    finally:
        engine.close()
    assert narrow == _sorted({"s": r["s"], "ts": r["ts"]} for r in rows if r["s"] == "kept")
    assert wide == _sorted({n: r.get(n) for n in SCHEMA.names} for r in rows if r["s"] == "kept")


def test_a_second_delete_on_the_same_file_is_applied_not_served_from_the_first_ones_mask(tmp_path):
    rows = [{"i": n, "s": f"host-{n % 4}", "t": "Disk full" if n % 5 == 0 else "ok", "ts": n} for n in range(40)]
    uri = _write(tmp_path, "split", rows)
    first = Compare("s", "=", "host-1")
    both = Or((first, TextMatch("t", ("disk",))))  # text_match in a delete's condition: the value's case folded
    engine = _engine(tmp_path)
    try:
        after_first = _query(engine, [_task(uri, first)], 1)
        after_both = _query(engine, [_task(uri, both)], 2)
        none = _query(engine, [_task(uri, None)], 3)
    finally:
        engine.close()
    assert len(after_first) == 30
    assert after_both == _sorted({n: r.get(n) for n in SCHEMA.names} for r in rows
                                 if r["s"] != "host-1" and r["t"] != "Disk full")
    assert len(none) == 40


def test_a_row_group_the_delete_leaves_whole_keeps_no_copy(tmp_path):
    rows = [{"i": n, "s": "gone" if n >= 36 else "kept", "ts": n} for n in range(40)]
    uri = _write(tmp_path, "split", rows, row_group_size=10)
    engine = _engine(tmp_path)
    try:
        kept = _query(engine, [_task(uri, InList("s", ("gone",)))], 1)
        masked = [key for key in engine.hot.lru._entries if key[0] == "masked"]
    finally:
        engine.close()
    assert len(kept) == 36
    assert {key[2] for key in masked} == {3}  # only the last row group holds rows to hide
