"""Object-store requests counted per operation: each kind as Arrow's S3 filesystem sends it (checked against an S3
server's own access log), reads counted on whichever thread makes them, and nothing counted outside a meter."""

from __future__ import annotations

import threading
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

from strata_core.object_requests import ObjectRequests, metered
from strata_core.storage import ObjectStore
from tests.fixtures.s3 import served_requests


def _parquet_bytes(rows: int = 50_000) -> bytes:
    table = pa.table({"a": pa.array(range(rows), pa.int64()), "b": [f"v{i % 13}" for i in range(rows)]})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=rows // 5)
    return sink.getvalue().to_pybytes()


def _exercise(store: ObjectStore) -> int:
    """One of every call Strata makes: write, HEAD a file and a missing one, read a footer and a row group, list,
    delete a file and a missing one. Returns the bytes written."""
    data = _parquet_bytes()
    store.write_bytes("dir/one.parquet", data)
    store.size("dir/one.parquet")
    store.exists("dir/missing.parquet")
    with store.open_input("dir/one.parquet") as source:
        parquet = pq.ParquetFile(source)
        parquet.read_row_group(2, columns=["a", "b"])
    store.list_files("dir")
    store.delete("dir/one.parquet")
    store.delete("dir/one.parquet")
    return len(data)


def test_local_store_counts_what_s3_would_bill(tmp_path):
    store = ObjectStore((tmp_path / "root").as_uri())
    with metered() as meter:
        written = _exercise(store)
    counts = meter.snapshot()
    # Write: 3 multipart PUTs and a move (copy PUT, DELETE, parent marker PUT); delete: HEAD, DELETE, marker PUT.
    assert (counts.puts, counts.deletes) == (3 + 2 + 1, 1 + 1)
    # size, exists (HEAD, then a LIST for the directory it is not), open, the two deletes.
    assert (counts.heads, counts.lists) == (1 + 1 + 1 + 2, 1 + 1)
    # The footer (one read of its tail) and one coalesced read of the row group's two column chunks.
    assert counts.gets == 2
    assert counts.bytes_written == written
    assert 0 < counts.bytes_read < written


def test_nothing_is_counted_outside_a_meter_and_handles_count_on_any_thread(tmp_path):
    store = ObjectStore((tmp_path / "root").as_uri())
    store.write_bytes("x.bin", b"0123456789")
    with store.open_input("x.bin") as unmetered:
        assert type(unmetered).__name__ != "PythonFile"
    with metered() as meter:
        source = store.open_input("x.bin")
    # Read after the meter's block and on another thread: the handle counts into the meter it was opened under.
    reader = threading.Thread(target=lambda: source.read_at(4, 2))
    reader.start()
    reader.join()
    source.close()
    assert meter.snapshot() == ObjectRequests(gets=1, heads=1, bytes_read=4)


def test_requests_add_up_and_survive_a_round_trip_as_a_dict():
    one = ObjectRequests(gets=2, puts=1, bytes_read=10)
    two = ObjectRequests.from_dict({**ObjectRequests(gets=1, lists=3).as_dict(), "unknown": 7})
    assert one + two == ObjectRequests(gets=3, puts=1, lists=3, bytes_read=10)


def test_s3_counts_equal_the_requests_the_server_answered(s3_server):
    store = ObjectStore(s3_server.storage_uri(f"counts-{uuid.uuid4().hex[:8]}"))
    # A new S3 client probes the endpoint once on its first call: a cost per process, not per operation.
    store.exists("warm-up")
    with served_requests(s3_server) as served, metered() as meter:
        _exercise(store)
    counted = meter.snapshot()
    assert counted.gets == served["gets"]
    assert counted.lists == served["lists"]
    assert counted.heads == served["heads"]
    assert counted.deletes == served["deletes"]
    assert counted.puts == served["puts"]
