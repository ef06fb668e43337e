"""Index configuration: the declared schema, windowing, sort schema, and per-feature settings.

Field-level rules live on the models (pydantic reports their location); rules that relate several fields are in
`config_problems`, which names the field each problem belongs to so the API can answer 422 precisely.
"""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from strata_core.domain.fields import FieldType, doc_mapping_uid
from strata_core.domain.sort_schema import SortSchema
from strata_core.domain.windows import DEFAULT_WINDOW_DURATION_SECS, validate_window_duration
from strata_core.domain.wire_types import INT64_MAX, MAX_DURATION_SECS, DurationSecs, EpochSecs, IndexId

_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FieldSpec(_Strict):
    name: str
    type: FieldType

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _FIELD_NAME.match(value):
            raise ValueError("field names are letters, digits and underscores, not starting with a digit")
        return value


class MergePolicyConfig(_Strict):
    """StableLogMergePolicy parameters (Quickwit's defaults), used by the compaction planner."""

    min_level_num_docs: int = Field(100_000, ge=1, le=INT64_MAX)
    merge_factor: int = Field(10, ge=2, le=INT64_MAX)
    max_merge_factor: int = Field(12, ge=2, le=INT64_MAX)
    maturation_period_secs: DurationSecs = 48 * 3600
    target_split_size_bytes: int = Field(256 * 1024 * 1024, ge=1024 * 1024, le=INT64_MAX)
    target_split_num_rows: int = Field(10_000_000, ge=1000, le=INT64_MAX)


class BloomColumnConfig(_Strict):
    column: str
    false_positive_rate: float = Field(0.01, gt=0, lt=0.5)


class ArtifactConfig(_Strict):
    """Which index artifacts each file gets (built by the indexing jobs)."""

    zone_map_columns: list[str] = Field(default_factory=list)
    bloom_columns: list[BloomColumnConfig] = Field(default_factory=list)
    bitmap_columns: list[str] = Field(default_factory=list)
    bitmap_max_distinct_values: int = Field(10_000, ge=1, le=INT64_MAX)
    full_text_columns: list[str] = Field(default_factory=list)


class QueryConfig(_Strict):
    default_lookback_secs: int = Field(3600, ge=1, le=MAX_DURATION_SECS)


class ParquetConfig(_Strict):
    row_group_size: int = Field(128 * 1024, ge=1024, le=64 * 1024 * 1024)
    zstd_level: int = Field(3, ge=1, le=22)
    write_statistics: bool = True


class RetentionConfig(_Strict):
    """Drop every window whose end is older than `period_secs` (its rows are all older, TW-1), checked every
    `interval_secs` by planner-api; the files go through the usual marked_for_deletion -> grace -> GC path."""

    period_secs: int = Field(ge=60, le=MAX_DURATION_SECS, description="keep windows ending within this period")
    interval_secs: int = Field(3600, ge=10, le=MAX_DURATION_SECS, description="how often the pass runs")


class IndexSettings(_Strict):
    """Everything about an index except its id: what PUT replaces."""

    description: str = Field("", max_length=1024)
    fields: list[FieldSpec] = Field(min_length=1, max_length=1024)
    timestamp_field: str
    sort_schema: str
    window_duration_secs: int = Field(DEFAULT_WINDOW_DURATION_SECS, ge=60, le=3600,
                                      description="divides one hour (TW-2)")
    # Windows that start before this never compact (CS-3, docs/architecture.md, "Invariants"); required, so every
    # index states where compaction begins.
    compaction_start_time: EpochSecs | datetime
    late_data_acceptance_secs: DurationSecs = 3600
    merge_policy: MergePolicyConfig = Field(default_factory=MergePolicyConfig)
    artifacts: ArtifactConfig = Field(default_factory=ArtifactConfig)
    query: QueryConfig = Field(default_factory=QueryConfig)
    parquet: ParquetConfig = Field(default_factory=ParquetConfig)
    # Off unless set: data is kept until deleted.
    retention: RetentionConfig | None = None

    @field_validator("window_duration_secs")
    @classmethod
    def _tw2(cls, value: int) -> int:
        validate_window_duration(value)
        return value

    @field_validator("compaction_start_time")
    @classmethod
    def _epoch_seconds(cls, value: int | datetime) -> int:
        if isinstance(value, datetime):
            if value.tzinfo is None:
                raise ValueError("a datetime needs a timezone (e.g. 2026-01-01T00:00:00Z)")
            return int(value.timestamp())
        return value

    @field_validator("sort_schema")
    @classmethod
    def _canonical_sort_schema(cls, value: str) -> str:
        return str(SortSchema.parse(value))

    def field_types(self) -> dict[str, FieldType]:
        return {f.name: f.type for f in self.fields}

    @property
    def parsed_sort_schema(self) -> SortSchema:
        return SortSchema.parse(self.sort_schema)

    @property
    def doc_mapping_uid(self) -> str:
        return doc_mapping_uid([(f.name, f.type) for f in self.fields], self.timestamp_field)


class IndexConfig(IndexSettings):
    index_id: IndexId


def config_problems(settings: IndexSettings) -> list[tuple[str, str]]:
    """Cross-field problems as (field path, message); empty when the configuration is coherent."""
    problems: list[tuple[str, str]] = []
    types: dict[str, FieldType] = {}
    for position, spec in enumerate(settings.fields):
        if spec.name in types:
            problems.append((f"fields.{position}.name", f"field {spec.name!r} is declared twice"))
        types[spec.name] = spec.type

    ts_type = types.get(settings.timestamp_field)
    if ts_type is None:
        problems.append(("timestamp_field", f"timestamp field {settings.timestamp_field!r} is not declared in fields"))
    elif not ts_type.can_be_timestamp:
        problems.append(("timestamp_field",
                         f"timestamp field {settings.timestamp_field!r} has type {ts_type}; it must be i64 "
                         "(epoch seconds) or timestamp"))

    for column in settings.parsed_sort_schema.columns:
        column_type = types.get(column.name)
        if column_type is None:
            problems.append(("sort_schema", f"sort column {column.name!r} is not declared in fields"))
        elif not column_type.sortable:
            problems.append(("sort_schema",
                             f"sort column {column.name!r} has type {column_type}, which is not sortable"))

    artifacts = settings.artifacts
    named = [("artifacts.zone_map_columns", c) for c in artifacts.zone_map_columns]
    named += [("artifacts.bloom_columns", b.column) for b in artifacts.bloom_columns]
    named += [("artifacts.bitmap_columns", c) for c in artifacts.bitmap_columns]
    named += [("artifacts.full_text_columns", c) for c in artifacts.full_text_columns]
    for path, column in named:
        if column not in types:
            problems.append((path, f"column {column!r} is not declared in fields"))
    for column in artifacts.full_text_columns:
        if column in types and types[column] is not FieldType.STRING:
            problems.append(("artifacts.full_text_columns", f"full-text column {column!r} must be a string"))

    policy = settings.merge_policy
    if policy.max_merge_factor < policy.merge_factor:
        problems.append(("merge_policy.max_merge_factor", "max_merge_factor must be at least merge_factor"))
    return problems
