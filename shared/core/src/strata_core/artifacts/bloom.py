"""Bloom artifacts: per column, one split-block bloom filter for the whole file and one per row group.

A probe answers "maybe present" or "certainly absent"; it never answers absent for a value the column holds. A
value that is not of the column's type (a string probed against an i64 column, a naive datetime) cannot be hashed
the way the column's values were, so it answers "maybe": pruning must only ever drop what certainly does not match.

Filters are sized by the spec's formula from the number of distinct values: exactly counted for each row group,
and for the file estimated with a k-minimum-values sketch of the already sorted row-group hashes (exact below 4096
distinct values, ~1.6% standard error above), padded by 5% and never above the sum of the row groups' counts.
The file filter gets the row groups' hashes a million at a time, merged in hash order (see `_insert_merged`).

Payload (see sections.py): a JSON description (column, field type, target false-positive rate, distinct counts)
and the filters' bytes as sections, the file's first, then one per row group in order.
"""

from __future__ import annotations

import math
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from strata_core.artifacts.envelope import ArtifactFormatError
from strata_core.artifacts.sbbf import SplitBlockBloomFilter, block_masks, optimal_num_bytes
from strata_core.artifacts.sections import pack_sections, unpack_sections
from strata_core.artifacts.value_hashing import arrow_hashes, probe_hash
from strata_core.domain.fields import FieldType

__all__ = ["BloomArtifact", "BloomBuilder", "SplitBlockBloomFilter"]

# k of the k-minimum-values sketch that estimates the file's distinct count.
_SKETCH_SIZE = 4096
_SKETCH_MARGIN = 1.05
# Pending hashes handed to the file filter's background insertion at a time, and inserted per numpy pass (which
# bounds the (n, 8) masks to 32 MiB).
_FILE_INSERT_BATCH = 1 << 20


def sorted_unique(hashes: np.ndarray) -> np.ndarray:
    if hashes.shape[0] == 0:
        return hashes
    ordered = np.sort(hashes)
    keep = np.empty(ordered.shape[0], dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def estimate_distinct(sketches: list[np.ndarray], upper: int) -> int:
    """Distinct hashes across groups of sorted distinct hashes, given each group's smallest `_SKETCH_SIZE` hashes
    and the sum of the group sizes: exact when small, a KMV estimate (rounded up with a margin, so filters are not
    undersized) when large, and never above the sum."""
    if upper == 0:
        return 0
    smallest = sorted_unique(np.concatenate(sketches))
    if smallest.shape[0] < _SKETCH_SIZE:
        # No group was cut (any cut group alone contributes _SKETCH_SIZE values): this is every distinct hash.
        return int(smallest.shape[0])
    kth = float(smallest[_SKETCH_SIZE - 1]) + 1.0
    estimate = (_SKETCH_SIZE - 1) * 2.0**64 / kth
    return min(upper, math.ceil(estimate * _SKETCH_MARGIN))


@dataclass(eq=True)
class BloomArtifact:
    column: str
    field_type: FieldType
    fpp: float
    file_filter: SplitBlockBloomFilter
    row_group_filters: list[SplitBlockBloomFilter]
    ndv: int = 0
    row_group_ndv: list[int] = field(default_factory=list)

    def _hashes(self, values: list) -> list[int | None]:
        return [probe_hash(v, self.field_type) for v in values]

    def might_contain(self, values: list) -> bool:
        """Whether any of `values` may be in the file (False only when none of them is)."""
        return any(h is None or self.file_filter.might_contain_hash(h) for h in self._hashes(values))

    def row_groups_maybe_containing(self, values: list) -> set[int]:
        hashes = self._hashes(values)
        if any(h is None for h in hashes):
            return set(range(len(self.row_group_filters)))
        hashes = [h for h in hashes if self.file_filter.might_contain_hash(h)]
        return {
            index
            for index, bloom in enumerate(self.row_group_filters)
            if any(bloom.might_contain_hash(h) for h in hashes)
        }

    def to_payload(self) -> bytes:
        description = {
            "column": self.column,
            "field_type": str(self.field_type),
            "fpp": self.fpp,
            "ndv": self.ndv,
            "row_group_ndv": list(self.row_group_ndv),
        }
        sections = [self.file_filter.to_bytes(), *(f.to_bytes() for f in self.row_group_filters)]
        return pack_sections(description, sections)

    @classmethod
    def from_payload(cls, payload: bytes | memoryview) -> BloomArtifact:
        description, sections = unpack_sections(payload, "bloom")
        try:
            filters = [SplitBlockBloomFilter(s) for s in sections]
            if not filters:
                raise ValueError("no file filter")
            return cls(
                column=str(description["column"]),
                field_type=FieldType(description["field_type"]),
                fpp=float(description["fpp"]),
                file_filter=filters[0],
                row_group_filters=filters[1:],
                ndv=int(description.get("ndv", 0)),
                row_group_ndv=[int(n) for n in description.get("row_group_ndv", [])],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ArtifactFormatError(f"bad bloom payload: {exc}") from None


def _insert_merged(bloom: SplitBlockBloomFilter, groups: list[np.ndarray]) -> None:
    """Insert several row groups' sorted hashes at once, merged in hash order: hashes sharing a block are OR-ed
    together before the block is touched, rather than one random access into a filter of megabytes per hash."""
    if groups:
        merged = np.sort(np.concatenate(groups))
        for begin in range(0, merged.shape[0], _FILE_INSERT_BATCH):
            batch = merged[begin : begin + _FILE_INSERT_BATCH]
            bloom.insert_sorted(batch, block_masks(batch))


class BloomBuilder:
    """Fills each row group's filter as the row group arrives and keeps its sorted distinct hashes for the file's.

    The file filter's size depends on the file's distinct count, known only at the end. Given `max_values` (an upper
    bound of the column's non-null values, from the footer), the builder does not wait: each time a million hashes
    are pending, a background thread merges them in hash order and inserts them into a filter sized for
    `max_values`, while the caller goes on with the next row groups; `finish` then folds that filter down to the
    size for the estimated distinct count, which gives bit for bit the filter built at that size. Few-valued
    columns never reach a million pending hashes, and their few hashes simply wait for `finish`."""

    def __init__(self, column: str, field_type: FieldType, fpp: float, max_values: int | None = None) -> None:
        self.column = column
        self.field_type = field_type
        self.fpp = fpp
        self.max_values = max_values
        self._sketches: list[np.ndarray] = []
        self._row_group_ndv: list[int] = []
        self._row_group_filters: list[SplitBlockBloomFilter] = []
        self._pending: list[np.ndarray] = []
        self._pending_count = 0
        self._file_filter: SplitBlockBloomFilter | None = None
        self._inserter: ThreadPoolExecutor | None = None
        self._insertions: list[Future[None]] = []

    def row_group_hashes(self, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """The sorted distinct hashes of a row group's values: pure, so another thread may compute them ahead."""
        return sorted_unique(arrow_hashes(values, self.field_type))

    def add_row_group(self, values: pa.Array | pa.ChunkedArray) -> None:
        self.add_row_group_hashes(self.row_group_hashes(values))

    def add_row_group_hashes(self, hashes: np.ndarray) -> None:
        """The next row group, given as `row_group_hashes` of its values."""
        group_filter = SplitBlockBloomFilter.for_ndv(hashes.shape[0], self.fpp)
        group_filter.insert_sorted(hashes, block_masks(hashes))
        self._row_group_filters.append(group_filter)
        self._row_group_ndv.append(int(hashes.shape[0]))
        self._sketches.append(hashes[:_SKETCH_SIZE])
        self._pending.append(hashes)
        self._pending_count += hashes.shape[0]
        if self.max_values is not None and self._pending_count >= _FILE_INSERT_BATCH:
            if self._file_filter is None:
                self._file_filter = SplitBlockBloomFilter.for_ndv(self.max_values, self.fpp)
                self._inserter = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"bloom-{self.column}")
            assert self._inserter is not None
            self._insertions.append(self._inserter.submit(_insert_merged, self._file_filter, self._pending))
            self._pending = []
            self._pending_count = 0

    def abandon(self) -> None:
        """Stop the background insertion thread, if any, without finishing (when the build fails elsewhere)."""
        if self._inserter is not None:
            self._inserter.shutdown(wait=True, cancel_futures=True)
            self._inserter = None
            self._insertions = []

    def _wait_for_insertions(self) -> None:
        if self._inserter is not None:
            try:
                for insertion in self._insertions:
                    insertion.result()
            finally:
                self._inserter.shutdown(wait=True)
                self._inserter = None
                self._insertions = []

    def finish(self) -> BloomArtifact:
        self._wait_for_insertions()
        ndv = estimate_distinct(self._sketches, sum(self._row_group_ndv))
        size = optimal_num_bytes(ndv, self.fpp)
        file_filter = self._file_filter or SplitBlockBloomFilter.empty(size)
        if file_filter.num_bytes < size:  # hashes already inserted cannot move to a larger filter
            raise ValueError(f"column {self.column!r} has more distinct values than max_values={self.max_values}")
        _insert_merged(file_filter, self._pending)
        self._pending = []
        return BloomArtifact(
            column=self.column,
            field_type=self.field_type,
            fpp=self.fpp,
            file_filter=file_filter.folded(size),
            row_group_filters=self._row_group_filters,
            ndv=ndv,
            row_group_ndv=list(self._row_group_ndv),
        )
