"""The merge's in-memory form of every column over all inputs (concatenated in input order), and how output
columns are cut from it.

Three kinds, chosen by the column's output type:
- `dict` (string): one dictionary of the distinct values over all inputs ("unified": built once from the
  inputs' per-row-group dictionaries, as read with `read_dictionary`) and an int32 code per row, -1 for null.
  4 bytes a row.
- `num` (integers, floats, temporal, bool): one numpy array of the values plus a validity mask when some are
  null.
- `arrow` (anything else: lists, binaries, decimals...): one combined Arrow array, cut with Arrow's take.
This is the KeyColumn form strata_core.domain.sort_key ranks, so the merge's order needs no other copy.

Output string columns are written as dictionary arrays whose dictionary is compacted per row group (only the
values that row group uses): the Parquet writer then stores that dictionary as is, skipping the per-value
hashing it does for plain strings, and row-group statistics and dictionary pages stay as tight as for a plain
write. With `store_schema=False` such a file reads back as plain `string` (checked by the tests). A column
whose dictionary is much larger than a row group (high cardinality) is decoded to plain strings instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from strata_core.arrow_numpy import int_values, numpy_dtype, primitive_values, to_arrow, validity

# Past this many distinct values per row group row, compacting per row group costs more than decoding (O(D)
# work).
DICT_COMPACT_MAX_RATIO = 4


def is_dict_type(arrow_type: pa.DataType) -> bool:
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def dictionary_codes(chunk: pa.DictionaryArray) -> np.ndarray:
    """Indices of a dictionary chunk as int64, -1 where null."""
    codes = int_values(chunk.indices, -1)
    if chunk.null_count and chunk.indices.null_count != chunk.null_count:
        codes[~validity(chunk)] = -1
    return codes


@dataclass(slots=True)
class SourceColumn:
    name: str
    out_type: pa.DataType
    kind: str  # "dict" | "num" | "arrow"
    length: int
    dictionary: pa.Array | None = None  # dict: distinct values, plain out_type
    codes: np.ndarray | None = None  # dict: int32, -1 null
    values: np.ndarray | None = None  # num
    valid: np.ndarray | None = None  # num: None when no value is null
    array: pa.Array | None = None  # arrow
    null_count: int = 0

    @property
    def nbytes(self) -> int:
        total = 0
        for part in (self.codes, self.values, self.valid):
            if part is not None:
                total += part.nbytes
        for part in (self.dictionary, self.array):
            if part is not None:
                total += part.nbytes
        return total

    # -- output construction ---------------------------------------------------------------------------------

    def take(self, index: np.ndarray, row_group_size: int) -> pa.ChunkedArray:
        """The rows at `index`, in that order, as an output column of `out_type` (dictionary for strings)."""
        if self.kind == "dict":
            return self._take_dict(self.codes[index], row_group_size)
        if self.kind == "num":
            values = self.values[index]
            valid = None if self.valid is None else self.valid[index]
            return pa.chunked_array([self._wrap(values, valid)], type=self.out_type)
        return pa.chunked_array([self.array.take(to_arrow(index))], type=self.out_type)

    def slices(self, starts: np.ndarray, lengths: np.ndarray, row_group_size: int) -> pa.ChunkedArray:
        """Rows [start, start + length) of every run, concatenated; zero-copy where the kind allows."""
        if self.kind == "dict":
            index = _runs_to_index(starts, lengths)
            return self._take_dict(self.codes[index], row_group_size)
        full = self.full_array()
        return pa.chunked_array([full.slice(int(s), int(n)) for s, n in zip(starts, lengths, strict=True)],
                                type=full.type)

    def full_array(self) -> pa.Array:
        if self.kind == "num":
            return self._wrap(self.values, self.valid)
        if self.kind == "arrow":
            return self.array
        valid = self.codes >= 0 if self.null_count else None
        return pa.DictionaryArray.from_arrays(to_arrow(self.codes, valid=valid), self.dictionary)

    def _wrap(self, values: np.ndarray, valid: np.ndarray | None) -> pa.Array:
        array = to_arrow(values, valid=valid)
        return array if array.type == self.out_type else array.view(self.out_type)

    def _take_dict(self, codes: np.ndarray, row_group_size: int) -> pa.ChunkedArray:
        size = len(self.dictionary)
        has_nulls = self.null_count > 0
        if size > DICT_COMPACT_MAX_RATIO * row_group_size:
            indices = to_arrow(codes, valid=codes >= 0 if has_nulls else None)
            return pa.chunked_array([self.dictionary.take(indices)], type=self.out_type)
        chunks = []
        used = np.zeros(size + 1, dtype=bool)
        for start in range(0, max(len(codes), 1), row_group_size):
            part = codes[start:start + row_group_size]
            used[:] = False
            used[part] = True  # -1 (null) marks the extra last slot, which is ignored
            keep = used[:size]
            remap = np.cumsum(keep, dtype=np.int32)
            remap -= 1
            remap = np.append(remap, np.int32(-1))  # a null code -1 reads the appended -1
            local = remap[part]
            indices = to_arrow(local, valid=local >= 0 if has_nulls else None)
            chunks.append(pa.DictionaryArray.from_arrays(indices, self.dictionary.filter(to_arrow(keep))))
        return pa.chunked_array(chunks, type=pa.dictionary(pa.int32(), self.out_type))


def _runs_to_index(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    index = np.ones(total, dtype=np.int64)
    heads = np.cumsum(lengths)[:-1]
    index[0] = starts[0]
    index[heads] = starts[1:] - (starts[:-1] + lengths[:-1] - 1)
    return np.cumsum(index)


class ColumnBuilder:
    """Fills one SourceColumn from the inputs, input by input, without keeping the inputs' tables."""

    def __init__(self, name: str, out_type: pa.DataType, total_rows: int) -> None:
        self.name = name
        self.out_type = out_type
        self.total = total_rows
        self.position = 0
        self.null_count = 0
        dtype = numpy_dtype(out_type)
        if is_dict_type(out_type):
            self.kind = "dict"
            # Before finish(): an index into the concatenation of every chunk dictionary seen so far.
            self.codes = np.empty(total_rows, dtype=np.int32 if total_rows < 2**31 else np.int64)
            self.dictionaries: list[pa.Array] = []
            self.dictionary_base = 0
        elif dtype is not None:
            self.kind = "num"
            self.values = np.zeros(total_rows, dtype=dtype)
            self.valid: np.ndarray | None = None
        else:
            self.kind = "arrow"
            self.chunks: list[pa.Array] = []

    def add(self, column: pa.ChunkedArray | None, rows: int) -> None:
        """The next input's column (cast to out_type or to dictionary<out_type>), or None: all null."""
        begin = self.position
        if column is None:
            self._add_nulls(begin, rows)
        else:
            offset = begin
            for chunk in column.chunks:
                self._add_chunk(chunk, offset)
                offset += len(chunk)
            if offset - begin != rows:
                raise ValueError(f"column {self.name!r}: {offset - begin} values for {rows} rows")
        self.position = begin + rows

    def _add_nulls(self, begin: int, rows: int) -> None:
        if self.kind != "dict":
            self.null_count += rows
        if self.kind == "dict":
            self.codes[begin:begin + rows] = -1
        elif self.kind == "num":
            self._validity()[begin:begin + rows] = False
        else:
            self.chunks.append(pa.nulls(rows, self.out_type))

    def _validity(self) -> np.ndarray:
        if self.valid is None:
            self.valid = np.ones(self.total, dtype=bool)
        return self.valid

    def _add_chunk(self, chunk: pa.Array, offset: int) -> None:
        n = len(chunk)
        if self.kind != "dict":  # dict columns count their nulls from the codes in finish()
            self.null_count += chunk.null_count
        if self.kind == "dict":
            if not pa.types.is_dictionary(chunk.type):
                chunk = chunk.dictionary_encode()
            dictionary = chunk.dictionary
            if dictionary.type != self.out_type:
                dictionary = dictionary.cast(self.out_type)
            codes = dictionary_codes(chunk)
            if dictionary.null_count:
                # A null inside the dictionary is a null row: point it at the null slot.
                nulls = np.append(~validity(dictionary), True)
                codes = np.where(nulls[codes], -1, codes)
            target = self.codes[offset:offset + n]
            np.add(codes, self.dictionary_base, out=target, casting="unsafe")
            if chunk.null_count or dictionary.null_count:
                target[codes < 0] = -1
            self.dictionaries.append(dictionary)
            self.dictionary_base += len(dictionary)
        elif self.kind == "num":
            self.values[offset:offset + n] = primitive_values(chunk, self.values.dtype)
            valid = validity(chunk)
            if valid is not None:
                self._validity()[offset:offset + n] = valid
        else:
            self.chunks.append(chunk)

    def finish(self) -> SourceColumn:
        if self.position != self.total:
            raise ValueError(f"column {self.name!r}: {self.position} rows for {self.total}")
        column = SourceColumn(self.name, self.out_type, self.kind, self.total, null_count=self.null_count)
        if self.kind == "dict":
            if self.dictionaries:
                everything = pa.concat_arrays(self.dictionaries)
            else:
                everything = pa.nulls(0, self.out_type)
            unified = pc.unique(everything.drop_null())
            mapping = pc.index_in(everything, value_set=unified)
            remap = np.append(int_values(mapping, -1).astype(self.codes.dtype), self.codes.dtype.type(-1))
            column.codes = remap[self.codes]  # -1 (null) reads the appended -1
            column.null_count = int(np.count_nonzero(column.codes < 0))
            column.dictionary = unified
            self.codes = None
            self.dictionaries = []
        elif self.kind == "num":
            column.values, column.valid = self.values, self.valid
            if column.valid is not None and column.valid.all():
                column.valid = None
        else:
            combined = pa.chunked_array(self.chunks, type=self.out_type).combine_chunks()
            column.array = combined
        return column
