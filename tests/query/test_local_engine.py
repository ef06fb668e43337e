"""The in-process engine on its own, over real Parquet files: a scan handed to DuckDB as a table (on one thread for
small scans, on the thread pool for larger ones) and one streamed row group by row group (large scans) give the
same answers as DuckDB over the files, and all report a file gone from storage as storage unavailable (503) and an
interrupt as such."""

from __future__ import annotations

import threading
import uuid

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from strata_core.domain.fields import FieldType
from strata_core.object_requests import ObjectRequests, metered
from strata_core.storage import ObjectStore
from strata_jobs.pruned_scan import ScanTask
from strata_query.execution.hot_tier import HotTier
from strata_query.execution.local_query import LocalEngine, QueryInterrupted, StorageUnavailable
from strata_query.execution.scan_request import VIEW, ScanRequest
from strata_query.planning.caches import FooterCache
from strata_query.planning.row_group_ranges import coalesced_reads, column_byte_ranges
from tests.fixtures.s3 import served_requests

COLUMNS = [("host", FieldType.STRING), ("value", FieldType.F64), ("ts", FieldType.I64),
           ("partition_id", FieldType.STRING)]
# (table_scan_max_rows, small_scan_rows): a table on the single-threaded database, run as a statement (the
# default for small scans); a table on the threaded one, as a relation (larger scans); always streamed.
MODES = {"small": (1_000_000, 1_000_000), "table": (1_000_000, 0), "stream": (0, 0)}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> tuple[ObjectStore, list[str]]:
    root = tmp_path_factory.mktemp("local-engine")
    store = ObjectStore(root.as_uri())
    uris = []
    for i in range(3):
        rows = 5_000
        table = pa.table({
            "host": pa.array([None if n % 97 == 0 else f"host-{(n * 7 + i) % 13}" for n in range(rows)]),
            "value": pa.array([float("nan") if n % 101 == 0 else n * 0.5 + i for n in range(rows)]),
            "ts": pa.array([1_700_000_000 + n + i * rows for n in range(rows)], pa.int64()),
        })
        if i == 2:
            table = table.drop_columns(["value"])  # written before the column existed: nulls at read time
        path = root / f"split-{i}.parquet"
        pq.write_table(table, path, row_group_size=1_000)
        uris.append(path.as_uri())
    return store, uris


def engine(store: ObjectStore, mode: str) -> LocalEngine:
    footers = FooterCache(store)
    table_rows, small_rows = MODES[mode]
    return LocalEngine(HotTier(store, footers, 64 * 1024 * 1024), threads=2, table_scan_max_rows=table_rows,
                       small_scan_rows=small_rows)


def request(uris: list[str], sql: str, *, rows: int = 15_000, delay: float = 0.0) -> ScanRequest:
    tasks = [ScanTask(uri=uri, row_groups=[0, 2, 4], constants={"partition_id": f"p{i}"})
             for i, uri in enumerate(uris)]
    return ScanRequest(query_id="01JQAAAAAAAAAAAAAAAAAAAAAA", tasks=tasks, columns=COLUMNS,
                       sql_template=sql.replace(" FROM t ", f' FROM "{VIEW}" '), extra_filter=None, row_cap=None,
                       rows=rows, scan_delay_secs=delay)


SQL = ("SELECT host, partition_id, count(*) AS n, sum(value) AS total, min(ts) AS first FROM t "
       "WHERE host IS DISTINCT FROM 'host-3' GROUP BY host, partition_id ORDER BY host NULLS FIRST, partition_id")


def reference(uris: list[str]) -> list[tuple]:
    """DuckDB over the same row groups of the files, read by pyarrow (NULL for the missing column)."""
    parts = []
    for i, uri in enumerate(uris):
        parquet = pq.ParquetFile(uri.removeprefix("file://"))
        for group in (0, 2, 4):
            table = parquet.read_row_group(group)
            if "value" not in table.column_names:
                table = table.append_column("value", pa.nulls(table.num_rows, pa.float64()))
            parts.append(table.select(["host", "value", "ts"]).append_column(
                "partition_id", pa.array([f"p{i}"] * table.num_rows)))
    t = pa.concat_tables(parts)  # noqa: F841 - read by DuckDB's replacement scan
    return duckdb.sql(SQL).fetchall()


@pytest.mark.parametrize("mode", MODES)
def test_table_and_streamed_scans_answer_as_duckdb_over_the_files(files, mode) -> None:
    store, uris = files
    local = engine(store, mode)
    try:
        result = local.open(request(uris, SQL))
        rows = pa.Table.from_batches(list(result), result.schema).to_pylist()
    finally:
        local.close()
    got = [tuple(r.values()) for r in rows]
    expected = reference(uris)
    assert len(got) == len(expected) > 10
    for g, e in zip(got, expected, strict=True):
        assert g[:3] == e[:3] and g[4] == e[4]
        assert (g[3] != g[3] and e[3] != e[3]) or g[3] == e[3]  # NaN sums compare as NaN


@pytest.mark.parametrize("mode", MODES)
def test_a_file_gone_from_storage_is_storage_unavailable(files, mode) -> None:
    store, uris = files
    gone = uris[0].rsplit("/", 1)[0] + "/gone.parquet"
    local = engine(store, mode)
    try:
        # Named: the footer of the gone file is read first, and its absence says which object is missing.
        with pytest.raises(StorageUnavailable, match=f"the object {gone} .* is missing from the object store"):
            local.open(request([uris[0], gone], SQL))
    finally:
        local.close()


@pytest.mark.parametrize("mode", MODES)
def test_an_interrupt_while_scanning_is_reported_as_one(files, mode) -> None:
    store, uris = files
    local = engine(store, mode)
    scan = request(uris, SQL, delay=5.0)
    threading.Timer(0.2, local.interrupt, args=[scan.query_id]).start()
    try:
        with pytest.raises(QueryInterrupted):
            local.open(scan)
    finally:
        local.close()


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_scan_opens_each_file_once_and_reads_the_coalesced_chunks(files, mode) -> None:
    store, uris = files
    local = engine(store, mode)
    footers = local.hot.footers
    for uri in uris:
        footers.get(uri)
    predicted_gets = 0
    for uri in uris:
        metadata = footers.get(uri)
        needed = {name for name, _ in COLUMNS} & set(metadata.schema.names)
        predicted_gets += sum(len(coalesced_reads(column_byte_ranges(metadata, g, needed))) for g in (0, 2, 4))
    try:
        with metered() as meter:
            local.open(request(uris, SQL)).close()
        # Three row groups of each of three files: three opens (one HEAD each), never nine.
        assert meter.snapshot() == ObjectRequests(gets=predicted_gets, heads=3,
                                                  bytes_read=meter.snapshot().bytes_read)
        # Every chunk is now in the RAM tier: a second scan opens nothing.
        with metered() as again:
            local.open(request(uris, SQL)).close()
        assert again.snapshot() == ObjectRequests()
    finally:
        local.close()


def test_the_requests_counted_from_the_footer_are_those_an_s3_server_answers(s3_server) -> None:
    """The local engine counts its reads from the footer instead of read by read: the counts must be what S3
    answered, list columns and a column absent from one file included."""
    store = ObjectStore(s3_server.storage_uri(f"local-engine-{uuid.uuid4().hex[:8]}"))
    uris = []
    for i in range(2):
        rows = 3_000
        table = pa.table({
            "host": pa.array([f"host-{(n * 7 + i) % 13}" for n in range(rows)]),
            "value": pa.array([n * 0.5 + i for n in range(rows)]),
            "ts": pa.array([1_700_000_000 + n + i * rows for n in range(rows)], pa.int64()),
            "tags": pa.array([[f"t{n % 5}", "all"] for n in range(rows)], pa.list_(pa.string())),
        })
        if i == 1:
            table = table.drop_columns(["value"])
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, row_group_size=1_000)
        store.write_bytes(f"split-{i}.parquet", sink.getvalue().to_pybytes())
        uris.append(store.uri_for(f"split-{i}.parquet"))
    tasks = [ScanTask(uri=uri, row_groups=[0, 2], constants={"partition_id": f"p{i}"}) for i, uri in enumerate(uris)]
    # Every column, then the list column alone (its chunks are not coalesced into a neighbour's read there).
    for columns, sql in (([*COLUMNS, ("tags", FieldType.STRING_LIST)],
                          f'SELECT count(*) AS n, count(value) AS v, max(len(tags)) AS t FROM "{VIEW}"'),
                         ([("tags", FieldType.STRING_LIST)], f'SELECT max(len(tags)) AS t FROM "{VIEW}"')):
        local = LocalEngine(HotTier(store, FooterCache(store), 64 * 1024 * 1024), threads=2)
        for uri in uris:
            local.hot.footers.get(uri)
        scan = ScanRequest(query_id="01JQAAAAAAAAAAAAAAAAAAAAAB", tasks=tasks, columns=columns, sql_template=sql,
                           extra_filter=None, rows=4_000)
        try:
            with served_requests(s3_server) as served, metered() as meter:
                local.open(scan).close()
        finally:
            local.close()
        counted = meter.snapshot()
        assert counted.heads == served["heads"] == 2
        assert counted.gets == served["gets"] >= 4
        assert served["lists"] == served["puts"] == 0
