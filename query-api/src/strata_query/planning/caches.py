"""Byte-bounded LRU caches of what planning reads from object storage: decoded artifacts and Parquet footers,
kept across queries so a repeated query makes no request for them. Both are immutable once written (artifacts
are keyed by their URI and content hash, split files never change under their URI), so a cached entry is never
stale."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pyarrow.parquet as pq

from strata_core.errors import Unavailable
from strata_core.query.artifact_pruning import read_artifact
from strata_core.storage import ObjectStore

_ABSENT = object()


class StorageUnavailable(Unavailable):
    """The object store failed a read the query needs (an object of a published split missing, or not read):
    a dependency's failure, named by the object's URI (which never carries credentials: storage.py refuses
    those in URIs)."""

    slug, title = "storage-unavailable", "Object storage unavailable"


class ByteLru:
    def __init__(self, capacity_bytes: int) -> None:
        self.capacity_bytes = capacity_bytes
        self._entries: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Any, default: Any = None) -> Any:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return default
            self._entries.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: Any, value: Any, size: int) -> None:
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (value, size)
                self._bytes += size
            while self._bytes > self.capacity_bytes and self._entries:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted

    def get_or_load(self, key: Any, load: Callable[[], tuple[Any, int]]) -> Any:
        found = self.get(key, _ABSENT)
        if found is not _ABSENT:
            return found
        value, size = load()
        self.put(key, value, size)
        return value

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)


class ArtifactCache:
    """Decoded artifacts by (uri, content hash). An artifact that cannot be read or fails its hash is None:
    the planner then prunes without it (never a wrong answer, only less pruning)."""

    def __init__(self, storage: ObjectStore, capacity_bytes: int = 256 * 1024 * 1024) -> None:
        self.storage = storage
        self.lru = ByteLru(capacity_bytes)

    def get(self, uri: str, content_hash: str) -> Any | None:
        return self.lru.get_or_load((uri, content_hash), lambda: read_artifact(self.storage, uri, content_hash))


class FooterCache:
    """Parquet footers by file URI."""

    def __init__(self, storage: ObjectStore, capacity_bytes: int = 64 * 1024 * 1024) -> None:
        self.storage = storage
        self.lru = ByteLru(capacity_bytes)

    def get(self, uri: str) -> pq.FileMetaData:
        def load() -> tuple[pq.FileMetaData, int]:
            try:
                with self.storage.open_input(uri) as source:
                    metadata = pq.ParquetFile(source).metadata
            except FileNotFoundError as exc:
                raise StorageUnavailable(f"the object {uri} of a published split is missing from the object "
                                         "store") from exc
            except OSError as exc:
                raise StorageUnavailable(f"reading the footer of {uri} failed: {exc}") from exc
            return metadata, max(1, metadata.serialized_size)
        return self.lru.get_or_load(uri, load)
