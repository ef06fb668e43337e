"""Building every configured artifact of one split file in one pass over its row groups.

Each row group is read once, with only the columns some builder needs (zone maps read a column only where its
Parquet statistics are missing or inexact). Work runs as a pipeline of three threads: one decodes row groups ahead,
one hashes the bloom columns' values (pure work, the bulk of a bloom's cost), and the caller's thread runs the
builders. (A thread per builder was measured no faster: with a dozen threads, the builders' many short numpy calls
contend for the GIL.)

What is not built is reported in `BuildResult.skipped`, never guessed at:
- a configured column absent from the file: a missing column reads as all null, so an artifact could claim it
  holds no value at all, but the absence may as well be a schema drift the reader does not know about, and an
  artifact that is missing only costs pruning, while a wrong one drops rows. So no artifact covers it;
- a column whose stored type is not the declared one (the artifact's typed values would not compare with the
  query's), or whose type the artifact cannot index (zone maps of lists, full-text of numbers);
- a bitmap column with more distinct values than `bitmap_max_distinct_values`.

Given the file's bytes or path rather than an open ParquetFile, the few-valued string columns are decoded as Arrow
dictionaries (`open_split_file`), which saves the builders a hash-table pass per row group; a ParquetFile opened
without `read_dictionary` works the same, only slower.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from strata_core.artifacts.bitmap import BitmapBuilder, TooManyDistinctValues
from strata_core.artifacts.bloom import BloomBuilder
from strata_core.artifacts.envelope import FORMAT_VERSIONS, ArtifactType, encode_artifact, read_header
from strata_core.artifacts.full_text import FullTextBuilder
from strata_core.artifacts.naming import artifact_key
from strata_core.artifacts.zone_map import ZoneMapBuilder
from strata_core.domain.fields import FieldType, field_type_of
from strata_core.domain.index_config import ArtifactConfig


@dataclass(frozen=True)
class BuiltArtifact:
    artifact_type: ArtifactType
    column: str
    format_version: int
    data: bytes
    content_hash: str
    size_bytes: int

    def key(self, split_id: str) -> str:
        """The object name, relative to the index's artifact prefix."""
        return artifact_key(split_id, self.artifact_type, self.column, self.format_version)


@dataclass(frozen=True)
class BuildResult:
    artifacts: list[BuiltArtifact]
    # {"artifact_type", "column", "reason", "message"}: what was configured but not built, and why.
    skipped: list[dict[str, Any]] = field(default_factory=list)


class _Skip(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def _resolve(name: str, schema: pa.Schema, field_types: dict[str, FieldType]) -> FieldType:
    """The column's type as stored, if the file has it and it agrees with the declaration."""
    index = schema.get_field_index(name)
    if index < 0:
        raise _Skip("column_absent", f"column {name!r} is not in the file")
    stored = field_type_of(schema.field(index).type)
    if stored is None:
        raise _Skip("unsupported_type", f"column {name!r} has Arrow type {schema.field(index).type}, not a Strata type")
    declared = field_types.get(name)
    if declared is not None and declared is not stored:
        raise _Skip("type_mismatch", f"column {name!r} is declared {declared} but the file stores {stored}")
    return stored


class _Plan:
    """Which builders run, collected from the config; what was refused lands in `skipped`."""

    def __init__(self, parquet: pq.ParquetFile, config: ArtifactConfig, field_types: dict[str, FieldType]) -> None:
        self.schema = parquet.schema_arrow
        self.field_types = field_types
        self.skipped: list[dict[str, Any]] = []
        self.zone_map = self._zone_map(parquet.metadata, config)
        self.blooms: dict[str, BloomBuilder] = {}
        for entry in config.bloom_columns:
            if entry.column not in self.blooms and (t := self._type(ArtifactType.BLOOM, entry.column)) is not None:
                bound = value_count_bound(parquet.metadata, entry.column)
                self.blooms[entry.column] = BloomBuilder(entry.column, t, entry.false_positive_rate, bound)
        self.bitmaps: dict[str, BitmapBuilder] = {}
        # Bitmaps refused mid-way; the dicts above never change once reading starts (the reader thread reads them).
        self.refused: set[str] = set()
        for column in config.bitmap_columns:
            if column not in self.bitmaps and (t := self._type(ArtifactType.BITMAP, column)) is not None:
                self.bitmaps[column] = BitmapBuilder(column, t, config.bitmap_max_distinct_values)
        text_types: dict[str, FieldType] = {}
        for column in config.full_text_columns:
            t = self._type(ArtifactType.FULL_TEXT, column)
            if t in (FieldType.STRING, FieldType.STRING_LIST):
                text_types[column] = t
            elif t is not None:
                self.skip(ArtifactType.FULL_TEXT, column, "unsupported_type", f"column {column!r} is {t}, not text")
        self.full_text = FullTextBuilder(text_types) if text_types else None

    def skip(self, artifact_type: ArtifactType, column: str, reason: str, message: str) -> None:
        self.skipped.append(
            {"artifact_type": str(artifact_type), "column": column, "reason": reason, "message": message}
        )

    def _type(self, artifact_type: ArtifactType, column: str) -> FieldType | None:
        try:
            return _resolve(column, self.schema, self.field_types)
        except _Skip as skip:
            self.skip(artifact_type, column, skip.reason, skip.message)
            return None

    def _zone_map(self, footer: pq.FileMetaData, config: ArtifactConfig) -> ZoneMapBuilder:
        types: dict[str, FieldType] = {}
        if config.zone_map_columns:
            for column in dict.fromkeys(config.zone_map_columns):
                t = self._type(ArtifactType.ZONE_MAP, column)
                if t is FieldType.STRING_LIST:
                    self.skip(ArtifactType.ZONE_MAP, column, "unsupported_type", f"column {column!r} is a list")
                elif t is not None:
                    types[column] = t
        else:
            # The cheap default: every column min/max means something for, mostly straight from the statistics.
            for name in self.schema.names:
                try:
                    t = _resolve(name, self.schema, self.field_types)
                except _Skip:
                    continue
                if t is not FieldType.STRING_LIST:
                    types[name] = t
        return ZoneMapBuilder(footer, types)

    def columns_for(self, row_group: int) -> list[str]:
        needed = dict.fromkeys(self.zone_map.columns_to_read(row_group))
        needed.update(dict.fromkeys(self.blooms))
        needed.update(dict.fromkeys(c for c in self.bitmaps if c not in self.refused))
        if self.full_text is not None:
            needed.update(dict.fromkeys(self.full_text.columns))
        return [name for name in self.schema.names if name in needed]

    def read(self, parquet: pq.ParquetFile, row_group: int) -> pa.Table:
        columns = self.columns_for(row_group)
        return parquet.read_row_group(row_group, columns=columns) if columns else pa.table({})

    def bloom_hashes(self, table: pa.Table) -> dict[str, np.ndarray]:
        """The bloom columns' sorted distinct hashes: pure work, done on a thread of its own."""
        return {column: bloom.row_group_hashes(table.column(column)) for column, bloom in self.blooms.items()}

    def add_row_group(self, row_group: int, table: pa.Table, bloom_hashes: dict[str, np.ndarray]) -> None:
        data = {name: table.column(name) for name in table.column_names}
        self.zone_map.add_row_group(row_group, data)
        for column, bloom in self.blooms.items():
            bloom.add_row_group_hashes(bloom_hashes[column])
        for column, bitmap in self.bitmaps.items():
            if column in self.refused:
                continue
            try:
                bitmap.add_row_group(data[column])
            except TooManyDistinctValues as exc:
                self.refused.add(column)
                self.skip(ArtifactType.BITMAP, column, "too_many_distinct_values", str(exc))
        if self.full_text is not None:
            self.full_text.add_row_group(data)

    def abandon(self) -> None:
        """Release what half-built builders hold: background threads, temporary directories."""
        for bloom in self.blooms.values():
            bloom.abandon()
        if self.full_text is not None:
            self.full_text.abandon()

    def payloads(self) -> list[tuple[ArtifactType, str, Callable[[], bytes]]]:
        """What to encode, in a fixed order: zone map, blooms and bitmaps in config order, full-text."""
        zone_map = self.zone_map
        out: list[tuple[ArtifactType, str, Callable[[], bytes]]] = [
            (ArtifactType.ZONE_MAP, "", lambda: zone_map.finish().to_payload())
        ]
        out += [(ArtifactType.BLOOM, c, lambda b=b: b.finish().to_payload()) for c, b in self.blooms.items()]
        out += [
            (ArtifactType.BITMAP, c, lambda b=b: b.finish().to_payload())
            for c, b in self.bitmaps.items()
            if c not in self.refused
        ]
        if self.full_text is not None:
            full_text = self.full_text
            out.append((ArtifactType.FULL_TEXT, "", lambda: _full_text_payload(full_text)))
        return out


def _full_text_payload(builder: FullTextBuilder) -> bytes:
    artifact = builder.finish()
    try:
        return artifact.to_payload()
    finally:
        artifact.close()


def value_count_bound(footer: pq.FileMetaData, column: str) -> int:
    """At least the number of non-null values of `column` (list elements for a list), from the footer alone."""
    total = 0
    positions = [i for i in range(footer.num_columns) if footer.schema.column(i).path.split(".")[0] == column]
    for group in range(footer.num_row_groups):
        for position in positions:
            chunk = footer.row_group(group).column(position)
            nulls = chunk.statistics.null_count if chunk.is_stats_set and chunk.statistics.has_null_count else 0
            # A list's leaf counts nulls and empty lists as values too: an over-count, still a bound.
            total += chunk.num_values - (nulls if len(positions) == 1 and "." not in chunk.path_in_schema else 0)
    return total


def _artifact(split_id: str, artifact_type: ArtifactType, column: str, payload: bytes, level: int) -> BuiltArtifact:
    data = encode_artifact(split_id, artifact_type, column, payload, zstd_level=level)
    header = read_header(data)
    return BuiltArtifact(artifact_type, column, FORMAT_VERSIONS[artifact_type], data, header.content_hash, len(data))


def build_artifacts(
    parquet: pq.ParquetFile | Any,
    split_id: str,
    config: ArtifactConfig,
    field_types: dict[str, FieldType],
    *,
    zstd_level: int = 3,
) -> BuildResult:
    """Every artifact `config` asks for, for one split file. `parquet` is an open ParquetFile or anything
    `open_split_file` accepts (then few-valued string columns are decoded as dictionaries, which is faster)."""
    if not isinstance(parquet, pq.ParquetFile):
        parquet = open_split_file(parquet)
    plan = _Plan(parquet, config, field_types)
    try:
        _feed_row_groups(parquet, plan)
        artifacts = [
            _artifact(split_id, artifact_type, column, payload(), zstd_level)
            for artifact_type, column, payload in plan.payloads()
        ]
    except BaseException:
        plan.abandon()
        raise
    return BuildResult(artifacts, plan.skipped)


# Row groups decoded ahead of the one the builders work on: bounds memory to a few row groups.
_READ_AHEAD = 2


def _feed_row_groups(parquet: pq.ParquetFile, plan: _Plan) -> None:
    """Three stages, each on its own thread, so row group i+2 is decoded (Arrow, without the GIL) while i+1's bloom
    values are hashed (numpy) and the builders work on i."""
    count = parquet.num_row_groups
    if count <= 1:
        # Nothing to overlap: two threads started and joined per file cost more than one row group's work (a
        # 200-row split's build took 1.22 ms of CPU with them, 0.75 without; most splits of a steady stream are
        # that small).
        for row_group in range(count):
            table = plan.read(parquet, row_group)
            plan.add_row_group(row_group, table, plan.bloom_hashes(table))
        return
    with (
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="artifact-read") as reader,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="artifact-hash") as hasher,
    ):
        reads: dict[int, Future[pa.Table]] = {}
        hashed: dict[int, Future[dict[str, np.ndarray]]] = {}

        def schedule(row_group: int) -> None:
            if row_group < count:
                read = reads[row_group] = reader.submit(plan.read, parquet, row_group)
                hashed[row_group] = hasher.submit(lambda: plan.bloom_hashes(read.result()))

        for row_group in range(min(_READ_AHEAD, count)):
            schedule(row_group)
        for row_group in range(count):
            schedule(row_group + _READ_AHEAD)
            table = reads.pop(row_group).result()
            plan.add_row_group(row_group, table, hashed.pop(row_group).result())


def open_split_file(source: Any, *, dictionary_columns: list[str] | None = None) -> pq.ParquetFile:
    """A ParquetFile for `build_artifacts` that decodes `dictionary_columns` as Arrow dictionaries; by default the
    string columns whose Parquet chunks are dictionary-encoded throughout with a small dictionary (see
    `few_valued_string_columns`). `source` is anything `pq.ParquetFile` opens (path, buffer, file object) or bytes."""
    if isinstance(source, bytes | bytearray | memoryview):
        source = pa.BufferReader(source)
    probe = pq.ParquetFile(source)
    if dictionary_columns is None:
        dictionary_columns = few_valued_string_columns(probe.metadata, probe.schema_arrow)
    if not dictionary_columns:
        return probe
    return pq.ParquetFile(source, metadata=probe.metadata, read_dictionary=dictionary_columns)


# Dictionary-encoded data pages take at most 4 bytes a row (32-bit indices before RLE); a chunk whose writer fell
# back to plain pages, or whose dictionary is large, takes more. Below this, dictionary decoding is free and saves
# the builders a hash-table pass; above it, building the Arrow dictionary is the expensive part of decoding.
_DICTIONARY_BYTES_PER_ROW = 8


def few_valued_string_columns(footer: pq.FileMetaData, schema: pa.Schema) -> list[str]:
    """String columns worth decoding as dictionaries, judged from the footer alone (uncompressed bytes a row)."""
    leaf = {footer.schema.column(i).path: i for i in range(footer.num_columns)}
    names = []
    for arrow_field in schema:
        position = leaf.get(arrow_field.name)
        if position is None or field_type_of(arrow_field.type) is not FieldType.STRING:
            continue
        chunks = [footer.row_group(g).column(position) for g in range(footer.num_row_groups)]
        rows = sum(chunk.num_values for chunk in chunks)
        size = sum(chunk.total_uncompressed_size for chunk in chunks)
        if rows and all(chunk.has_dictionary_page for chunk in chunks) and size < _DICTIONARY_BYTES_PER_ROW * rows:
            names.append(arrow_field.name)
    return names
