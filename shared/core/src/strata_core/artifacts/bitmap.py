"""Bitmap artifacts: for one low- or mid-cardinality column, a dictionary of its distinct values and, per value, a
roaring bitmap of the rows (positions in the file) holding it, plus a bitmap of the rows where it is null.

The row-group row offsets are stored too, so positions map to row groups exactly: unlike a bloom filter, a bitmap
answers "this row group holds the value" or "it does not", with no false positives. For a string_list column a row
is in a value's bitmap when any element equals the value, and in the null bitmap when the list itself is null.

Values are compared in the column's declared type, with floats normalized the way SQL equality sees them: 0.0
finds -0.0 rows too, and NaN finds NaN rows. A probe value that is not of the column's type (a string against an
i64 column) cannot be looked up, so it matches every row: a probe result is always a superset of the true answer.

Payload (see sections.py): a JSON description (column, field type, row-group offsets, row count), then sections: the
dictionary as an Arrow IPC stream (one column "value"), the null bitmap, and one bitmap per dictionary entry in
dictionary order, each in roaring's portable serialization. Bitmaps are deserialized only when a probe needs them.
"""

from __future__ import annotations

import array
import bisect
import io
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from pyroaring import BitMap

from strata_core.artifacts.envelope import ArtifactFormatError
from strata_core.artifacts.sections import pack_sections, unpack_sections
from strata_core.domain.fields import FieldType

# Dictionary storage type per declared type: timestamps as int64 microseconds, lists by their element type.
_STORED_TYPES: dict[FieldType, pa.DataType] = {
    FieldType.STRING: pa.string(),
    FieldType.STRING_LIST: pa.string(),
    FieldType.I64: pa.int64(),
    FieldType.U64: pa.uint64(),
    FieldType.F64: pa.float64(),
    FieldType.BOOL: pa.bool_(),
    FieldType.TIMESTAMP: pa.int64(),
}
_NAN_KEY = ("nan",)
# Rows whose codes form fewer runs than this share of them are added to bitmaps run by run (sorted splits make long
# runs common); otherwise row by row, all positions of a value handed to roaring at once.
_RUNS_SHARE = 1 / 16


class TooManyDistinctValues(ValueError):
    """The column has more distinct values than the configured limit: a bitmap index would not pay off."""

    def __init__(self, column: str, limit: int) -> None:
        super().__init__(f"column {column!r} has more than {limit} distinct values (bitmap_max_distinct_values)")
        self.column = column
        self.limit = limit


def _lookup_key(value: Any, field_type: FieldType) -> Any:
    """The dictionary key a probe value is looked up by; None when the value is not of the column's type."""
    if field_type in (FieldType.STRING, FieldType.STRING_LIST):
        return value if isinstance(value, str) else None
    if field_type is FieldType.BOOL:
        return value if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None
    if field_type in (FieldType.I64, FieldType.U64, FieldType.TIMESTAMP):
        if field_type is FieldType.TIMESTAMP and hasattr(value, "timestamp") and getattr(value, "tzinfo", None):
            return int(pa.scalar(value, type=pa.timestamp("us", tz="UTC")).cast(pa.int64()).as_py())
        return value if isinstance(value, int) else None
    if field_type is FieldType.F64:
        if isinstance(value, int):
            try:
                as_float = float(value)
            except OverflowError:
                return None
            return as_float if as_float == value else None
        if not isinstance(value, float):
            return None
        # -0.0 == 0.0 and hash alike, so both land on one key; NaN needs a key of its own.
        return _NAN_KEY if math.isnan(value) else value
    return None


def _comparable(dictionary: pa.Array) -> pa.Array:
    """Floats as their bits, so that NaN entries compare equal."""
    return dictionary.view(pa.int64()) if pa.types.is_floating(dictionary.type) else dictionary


def _row_groups_of(bitmap: BitMap, offsets: list[int]) -> set[int]:
    """The row groups (given by their first row; the last offset is the row count) holding any row of `bitmap`."""
    groups: set[int] = set()
    position = bitmap.next_set_bit(0) if bitmap else None
    while position is not None:
        group = bisect.bisect_right(offsets, position) - 1
        groups.add(group)
        end = offsets[group + 1]
        position = bitmap.next_set_bit(end) if end <= bitmap.max() else None
    return groups


@dataclass(eq=False)
class BitmapArtifact:
    column: str
    field_type: FieldType
    dictionary: pa.Array
    value_bitmaps: list[BitMap | memoryview]
    null_bitmap: BitMap
    row_group_offsets: list[int]  # first row of each row group, then the row count
    _keys: dict[Any, list[int]] | None = field(default=None, repr=False)

    @property
    def num_rows(self) -> int:
        return self.row_group_offsets[-1]

    @property
    def num_row_groups(self) -> int:
        return len(self.row_group_offsets) - 1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BitmapArtifact):
            return NotImplemented
        return (
            (self.column, self.field_type, self.row_group_offsets)
            == (other.column, other.field_type, other.row_group_offsets)
            and _comparable(self.dictionary).equals(_comparable(other.dictionary))
            and self.null_bitmap == other.null_bitmap
            and all(self.bitmap_at(i) == other.bitmap_at(i) for i in range(len(self.value_bitmaps)))
        )

    def bitmap_at(self, index: int) -> BitMap:
        stored = self.value_bitmaps[index]
        if not isinstance(stored, BitMap):
            stored = BitMap.deserialize(bytes(stored))
            self.value_bitmaps[index] = stored
        return stored

    def _index_of(self) -> dict[Any, list[int]]:
        if self._keys is None:
            keys: dict[Any, list[int]] = {}
            for index, value in enumerate(self.dictionary.to_pylist()):
                keys.setdefault(_lookup_key(value, self.field_type), []).append(index)
            self._keys = keys
        return self._keys

    def _matching_indexes(self, values: list) -> list[int] | None:
        """Dictionary entries equal to any of `values`; None when some value cannot be looked up (matches all)."""
        index = self._index_of()
        found: list[int] = []
        for value in values:
            key = _lookup_key(value, self.field_type)
            if key is None:
                return None
            found.extend(index.get(key, ()))
        return found

    def rows_matching(self, values: list) -> BitMap:
        found = self._matching_indexes(values)
        if found is None:
            everything = BitMap()
            everything.add_range(0, self.num_rows)
            return everything
        return BitMap.union(BitMap(), *(self.bitmap_at(i) for i in found))

    def row_groups_containing(self, values: list) -> set[int]:
        found = self._matching_indexes(values)
        if found is None:
            return set(range(self.num_row_groups))
        groups: set[int] = set()
        for i in found:
            groups |= _row_groups_of(self.bitmap_at(i), self.row_group_offsets)
        return groups

    def null_row_groups(self) -> set[int]:
        return _row_groups_of(self.null_bitmap, self.row_group_offsets)

    def to_payload(self) -> bytes:
        sink = io.BytesIO()
        table = pa.table({"value": self.dictionary})
        with ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        description = {
            "column": self.column,
            "field_type": str(self.field_type),
            "row_group_offsets": self.row_group_offsets,
        }
        bitmaps = [b.serialize() if isinstance(b, BitMap) else b for b in self.value_bitmaps]
        return pack_sections(description, [sink.getvalue(), self.null_bitmap.serialize(), *bitmaps])

    @classmethod
    def from_payload(cls, payload: bytes | memoryview) -> BitmapArtifact:
        description, sections = unpack_sections(payload, "bitmap")
        try:
            field_type = FieldType(description["field_type"])
            offsets = [int(o) for o in description["row_group_offsets"]]
            if len(sections) < 2 or not offsets or offsets[0] != 0 or offsets != sorted(offsets):
                raise ValueError("missing sections or bad row-group offsets")
            dictionary = ipc.open_stream(sections[0]).read_all().column("value").combine_chunks()
            if len(dictionary) != len(sections) - 2:
                raise ValueError(f"{len(dictionary)} dictionary values but {len(sections) - 2} bitmaps")
            return cls(
                column=str(description["column"]),
                field_type=field_type,
                dictionary=dictionary,
                value_bitmaps=list(sections[2:]),
                null_bitmap=BitMap.deserialize(bytes(sections[1])),
                row_group_offsets=offsets,
            )
        except (KeyError, TypeError, ValueError, pa.ArrowException) as exc:
            raise ArtifactFormatError(f"bad bitmap payload: {exc}") from None


class BitmapBuilder:
    """Encodes one column row group by row group against a growing file dictionary; `finish` builds the bitmaps.

    Raises TooManyDistinctValues as soon as the dictionary outgrows the limit, so an unsuitable column costs one
    row group's work, not a file's."""

    def __init__(self, column: str, field_type: FieldType, max_distinct_values: int) -> None:
        self.column = column
        self.field_type = field_type
        self.max_distinct_values = max_distinct_values
        self._stored_type = _STORED_TYPES[field_type]
        self._dictionary = pa.array([], type=self._stored_type)
        # Code 0 is null, code i + 1 the dictionary entry i. Rows are kept as runs (code, first row, end row) where
        # equal codes come in long runs, as (code, row) points elsewhere.
        self._runs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._points: list[tuple[np.ndarray, np.ndarray]] = []
        self._offsets = [0]

    def _to_stored(self, values: pa.Array) -> pa.Array:
        if self.field_type is FieldType.TIMESTAMP:
            return values.cast(pa.timestamp("us", tz=values.type.tz), safe=False).cast(pa.int64())
        return values.cast(self._stored_type)

    def _encode(self, values: pa.Array) -> np.ndarray:
        """Codes (file dictionary index + 1, 0 for null) of one chunk's values, growing the dictionary."""
        if not pa.types.is_dictionary(values.type):
            values = pc.dictionary_encode(values)
        chunk_dictionary = self._to_stored(values.dictionary)
        found = pc.index_in(chunk_dictionary, value_set=self._dictionary)
        missing = found.is_null()
        if pc.any(missing).as_py():
            added = pc.unique(chunk_dictionary.filter(missing))
            self._dictionary = pa.concat_arrays([self._dictionary, added])
            if len(self._dictionary) > self.max_distinct_values:
                raise TooManyDistinctValues(self.column, self.max_distinct_values)
            found = pc.index_in(chunk_dictionary, value_set=self._dictionary)
        mapping = np.concatenate(([0], found.to_numpy(zero_copy_only=False).astype(np.int64) + 1))
        indices = values.indices
        raw = indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        return mapping[raw + 1]

    def add_row_group(self, values: pa.Array | pa.ChunkedArray) -> None:
        chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
        row = self._offsets[-1]
        for chunk in chunks:
            if self.field_type is FieldType.STRING_LIST:
                elements = pc.list_flatten(chunk)
                parents = pc.list_parent_indices(chunk).to_numpy(zero_copy_only=False).astype(np.int64)
                element_codes = self._encode(elements) if len(elements) else np.zeros(0, dtype=np.int64)
                present = element_codes > 0
                null_rows = np.flatnonzero(np.asarray(chunk.is_null()))
                self._points.append((element_codes[present], parents[present] + row))
                self._points.append((np.zeros(null_rows.shape[0], dtype=np.int64), null_rows + row))
            elif len(chunk):
                self._add_rows(self._encode(chunk), row)
            row += len(chunk)
        self._offsets.append(row)

    def _add_rows(self, codes: np.ndarray, first_row: int) -> None:
        """Codes of consecutive rows: kept as runs of equal codes when they are long (sorted splits), else as
        (code, row) points."""
        breaks = np.flatnonzero(codes[1:] != codes[:-1]) + 1
        if breaks.shape[0] + 1 <= codes.shape[0] * _RUNS_SHARE:
            starts = np.concatenate(([0], breaks))
            ends = np.concatenate((breaks, [codes.shape[0]]))
            self._runs.append((codes[starts], starts + first_row, ends + first_row))
        else:
            self._points.append((codes, np.arange(first_row, first_row + codes.shape[0], dtype=np.int64)))

    def finish(self) -> BitmapArtifact:
        if self._offsets[-1] > 1 << 32:
            raise ValueError(f"column {self.column!r}: more than 2^32 rows do not fit a roaring bitmap")
        count = len(self._dictionary) + 1
        bitmaps = [BitMap() for _ in range(count)]
        if self._runs:
            codes, starts, ends = (np.concatenate(parts) for parts in zip(*self._runs, strict=True))
            for code, start, end in zip(codes.tolist(), starts.tolist(), ends.tolist(), strict=True):
                bitmaps[code].add_range(start, end)
        if self._points:
            codes, rows = (np.concatenate(parts) for parts in zip(*self._points, strict=True))
            # A stable sort keeps rows ascending within each code; 16-bit keys get numpy's radix sort.
            order = np.argsort(codes.astype(np.uint16 if count <= 1 << 16 else np.uint32), kind="stable")
            boundaries = np.cumsum(np.bincount(codes, minlength=count))[:-1]
            for code, group in enumerate(np.split(rows[order].astype(np.uint32), boundaries)):
                if group.shape[0]:
                    values = array.array("I")
                    values.frombytes(memoryview(group).cast("B"))
                    bitmaps[code].update(values)
        for bitmap in bitmaps:
            bitmap.run_optimize()
        return BitmapArtifact(
            column=self.column,
            field_type=self.field_type,
            dictionary=self._dictionary,
            value_bitmaps=list(bitmaps[1:]),
            null_bitmap=bitmaps[0],
            row_group_offsets=list(self._offsets),
        )
