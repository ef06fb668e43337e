"""Object-store requests counted per operation (one query, one merge, one artifact build, one GC pass...), as S3
bills them: GETs, PUTs, LISTs, HEADs and DELETEs, and the bytes read and written.

An operation opens a meter (`metered()`); every call through a `MeteredFileSystem` made while it is open, in this
context or in a thread that copied it, adds to it, and so does every file handle opened under it, whichever thread
later reads from it. Without an open meter a call costs nothing more than the filesystem's own.

The counts are the requests pyarrow's S3 filesystem sends (Arrow 26, default options, checked against an S3
server's access log by `tests/core/test_object_requests.py`), counted the same way on a local directory so a
local run says what it would cost on S3:

- opening a file for reading is one HEAD (S3 learns its size; pyarrow's Python API cannot be handed the size);
  every read from the handle is one ranged GET;
- writing an object is a multipart upload: create, one part per started 10 MiB, complete, all billed as PUTs;
- `get_file_info` of a path is a HEAD, plus a LIST when no file is there (S3 looks for a directory); of a
  selector, one LIST per 1,000 entries;
- deleting a file is a HEAD, a DELETE and a PUT (the parent's directory marker); a missing file only the HEAD;
- moving is a copy (a PUT), a DELETE and the parent's marker (a PUT);
- creating a directory on S3 is a HEAD of the bucket and one PUT of a marker per level; on a local disk nothing,
  since a local path has no S3 equivalent to count.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

# Arrow's S3 output stream uploads parts of this size (kPartUploadSize).
S3_UPLOAD_PART_BYTES = 10 * 1024 * 1024
LIST_PAGE_KEYS = 1000
REQUEST_KINDS = ("get", "put", "list", "head", "delete")


@dataclass(slots=True)
class ObjectRequests:
    """Requests by kind and bytes moved: what one operation cost the object store."""

    gets: int = 0
    puts: int = 0
    lists: int = 0
    heads: int = 0
    deletes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    def by_kind(self) -> dict[str, int]:
        return {"get": self.gets, "put": self.puts, "list": self.lists, "head": self.heads, "delete": self.deletes}

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any] | None) -> ObjectRequests:
        """From `as_dict`'s output as it comes back from a worker; keys it does not know are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: int(v) for k, v in (values or {}).items() if k in names})

    def __add__(self, other: ObjectRequests) -> ObjectRequests:
        return ObjectRequests(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


class Meter:
    """The running counts of one operation; handles read from several threads, so adding takes a lock."""

    __slots__ = ("_counts", "_lock")

    def __init__(self) -> None:
        self._counts = ObjectRequests()
        self._lock = threading.Lock()

    def add(self, *, gets: int = 0, puts: int = 0, lists: int = 0, heads: int = 0, deletes: int = 0,
            bytes_read: int = 0, bytes_written: int = 0) -> None:
        with self._lock:
            counts = self._counts
            counts.gets += gets
            counts.puts += puts
            counts.lists += lists
            counts.heads += heads
            counts.deletes += deletes
            counts.bytes_read += bytes_read
            counts.bytes_written += bytes_written

    def add_requests(self, requests: ObjectRequests) -> None:
        """Counts measured elsewhere (a worker process) into this operation."""
        self.add(**requests.as_dict())

    def snapshot(self) -> ObjectRequests:
        # Field by field: `dataclasses.asdict` (a deep copy) cost every ingest commit more than its counting.
        with self._lock:
            c = self._counts
            return ObjectRequests(c.gets, c.puts, c.lists, c.heads, c.deletes, c.bytes_read, c.bytes_written)


_CURRENT: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("strata_object_meter", default=None)


@contextmanager
def metered() -> Iterator[Meter]:
    """Count the object-store requests made inside the block (the innermost open meter counts them)."""
    meter = Meter()
    token = _CURRENT.set(meter)
    try:
        yield meter
    finally:
        _CURRENT.reset(token)


def current_meter() -> Meter | None:
    return _CURRENT.get()


@contextmanager
def counting_into(meter: Meter | None) -> Iterator[None]:
    """Count the block's requests into an operation's meter opened elsewhere: for code its operation runs on a
    thread that did not copy its context (a generator an engine pulls from its own threads)."""
    token = _CURRENT.set(meter)
    try:
        yield
    finally:
        _CURRENT.reset(token)


class _CountingReader:
    """A readable file that counts each read as one ranged GET; pyarrow reads it through `pa.PythonFile`, one
    Python call per range (never per byte), with the bytes handed on zero-copy."""

    def __init__(self, inner: pa.NativeFile, meter: Meter) -> None:
        self._inner = inner
        self._meter = meter

    def read_buffer(self, nbytes: int | None = None) -> pa.Buffer:
        data = self._inner.read_buffer(None if nbytes is None or nbytes < 0 else nbytes)
        if data.size:
            self._meter.add(gets=1, bytes_read=data.size)
        return data

    read = read_buffer

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._inner.seek(offset, whence)

    def tell(self) -> int:
        return self._inner.tell()

    def size(self) -> int:
        return self._inner.size()

    def close(self) -> None:
        self._inner.close()

    @property
    def closed(self) -> bool:
        return self._inner.closed

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False


class _CountingWriter:
    """A writable object stream that counts its multipart upload when it is closed."""

    def __init__(self, inner: pa.NativeFile, meter: Meter) -> None:
        self._inner = inner
        self._meter = meter
        self._written = 0

    def write(self, data: Any) -> int:
        written = self._inner.write(data)
        self._written += written
        return written

    def flush(self) -> None:
        self._inner.flush()

    def tell(self) -> int:
        return self._inner.tell()

    def close(self) -> None:
        if self._inner.closed:
            return
        self._inner.close()
        parts = max(1, -(-self._written // S3_UPLOAD_PART_BYTES))
        self._meter.add(puts=2 + parts, bytes_written=self._written)

    @property
    def closed(self) -> bool:
        return self._inner.closed

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


class MeteredFileSystem:
    """A pyarrow filesystem whose calls count into the open meter (if any). Only the methods Strata calls are
    offered, so a new kind of call cannot go uncounted by accident."""

    def __init__(self, inner: pafs.FileSystem) -> None:
        self.inner = inner
        self._is_s3 = inner.type_name == "s3"

    def open_input_file(self, path: str) -> pa.NativeFile:
        meter = _CURRENT.get()
        if meter is None:
            return self.inner.open_input_file(path)
        meter.add(heads=1)
        handle = self.inner.open_input_file(path)
        return pa.PythonFile(_CountingReader(handle, meter), mode="r")

    def read_whole_file(self, path: str) -> pa.Buffer:
        """A file's whole content, counted as `open_input_file` then one read of it count it, without the
        counting handle (a Python object pyarrow calls back for every read, seek and size)."""
        meter = _CURRENT.get()
        if meter is None:
            with self.inner.open_input_file(path) as handle:
                return handle.read_buffer()
        meter.add(heads=1)
        with self.inner.open_input_file(path) as handle:
            data = handle.read_buffer()
        if data.size:
            meter.add(gets=1, bytes_read=data.size)
        return data

    def open_output_stream(self, path: str) -> pa.NativeFile:
        meter = _CURRENT.get()
        stream = self.inner.open_output_stream(path)
        if meter is None:
            return stream
        return pa.PythonFile(_CountingWriter(stream, meter), mode="w")

    def get_file_info(self, what: Any) -> Any:
        found = self.inner.get_file_info(what)
        meter = _CURRENT.get()
        if meter is None:
            return found
        if isinstance(what, pafs.FileSelector):
            meter.add(lists=max(1, -(-len(found) // LIST_PAGE_KEYS)))
        elif isinstance(found, list):
            misses = sum(1 for info in found if info.type != pafs.FileType.File)
            meter.add(heads=len(found), lists=misses)
        else:
            meter.add(heads=1, lists=0 if found.type == pafs.FileType.File else 1)
        return found

    def delete_file(self, path: str) -> None:
        meter = _CURRENT.get()
        try:
            self.inner.delete_file(path)
        except FileNotFoundError:
            if meter is not None:
                meter.add(heads=1)
            raise
        if meter is not None:
            meter.add(heads=1, deletes=1, puts=1)

    def move(self, src: str, dest: str) -> None:
        self.inner.move(src, dest)
        meter = _CURRENT.get()
        if meter is not None:
            meter.add(puts=2, deletes=1)

    def count_local_write(self, nbytes: int) -> None:
        """What `open_output_stream`, a write of `nbytes`, close and `move` would count: for a local store's writer
        that makes those calls itself (`ObjectStore.write_bytes`)."""
        meter = _CURRENT.get()
        if meter is not None:
            parts = max(1, -(-nbytes // S3_UPLOAD_PART_BYTES))
            meter.add(puts=2 + parts + 2, deletes=1, bytes_written=nbytes)

    def create_dir(self, path: str, *, recursive: bool = True) -> None:
        self.inner.create_dir(path, recursive=recursive)
        meter = _CURRENT.get()
        if meter is not None and self._is_s3:
            levels = len([part for part in path.strip("/").split("/")[1:] if part])
            meter.add(heads=1, puts=levels if recursive else min(1, levels))
