"""Split metadata: one immutable Parquet file in exactly one window (TW-1)."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from strata_core.domain.column_stats import ColumnStats

# key_value_metadata keys written into every split, so a file describes itself without the metastore.
KV_PREFIX = "strata."


class SplitState(enum.StrEnum):
    STAGED = "staged"
    PUBLISHED = "published"
    MARKED_FOR_DELETION = "marked_for_deletion"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class RowGroupSpan:
    row_offset: int
    num_rows: int
    byte_offset: int
    byte_length: int

    def to_json(self) -> dict[str, int]:
        return {"row_offset": self.row_offset, "num_rows": self.num_rows, "byte_offset": self.byte_offset,
                "byte_length": self.byte_length}


@dataclass(frozen=True, slots=True)
class SplitSummary:
    """What a query's time-range and split min/max stages need of a published split; the full `SplitMetadata` is
    loaded only for the splits that pass them. `row_group_bytes` is the sum of the spans' byte lengths, or the
    file's size when it has no spans (as the later stages count a file without spans)."""

    split_id: str
    partition_id: str
    time_range_start: int | None
    time_range_end: int | None
    num_rows: int
    size_bytes: int
    num_row_groups: int
    row_group_bytes: int
    column_stats: dict[str, ColumnStats]


@dataclass(frozen=True, slots=True)
class CompactionScope:
    """CS-1: only splits sharing all six parts may merge."""

    index_uid: str
    source_id: str
    partition_id: str
    doc_mapping_uid: str
    sort_schema: str
    window_duration_secs: int


@dataclass(slots=True)
class SplitMetadata:
    split_id: str
    index_uid: str
    source_id: str
    partition_id: str
    doc_mapping_uid: str
    sort_schema: str
    window_start: int
    window_duration_secs: int
    # Seconds since the epoch, inclusive; None when every timestamp is null.
    time_range_start: int | None
    time_range_end: int | None
    num_rows: int
    uri: str = ""
    size_bytes: int = 0
    row_groups: list[RowGroupSpan] = field(default_factory=list)
    column_stats: dict[str, ColumnStats] = field(default_factory=dict)
    num_merge_ops: int = 0
    generation: int = 0
    root_split_ids: list[str] = field(default_factory=list)
    parent_split_ids: list[str] = field(default_factory=list)
    state: SplitState = SplitState.STAGED

    @property
    def scope(self) -> CompactionScope:
        return CompactionScope(self.index_uid, self.source_id, self.partition_id, self.doc_mapping_uid,
                               self.sort_schema, self.window_duration_secs)

    def summary(self) -> SplitSummary:
        return SplitSummary(
            self.split_id, self.partition_id, self.time_range_start, self.time_range_end, self.num_rows,
            self.size_bytes, len(self.row_groups),
            sum(rg.byte_length for rg in self.row_groups) if self.row_groups else self.size_bytes,
            self.column_stats)

    def to_json(self) -> dict[str, Any]:
        """Every field as JSON-ready values (the merge ships outputs back from Spark this way)."""
        return {
            "split_id": self.split_id,
            "index_uid": self.index_uid,
            "source_id": self.source_id,
            "partition_id": self.partition_id,
            "doc_mapping_uid": self.doc_mapping_uid,
            "sort_schema": self.sort_schema,
            "window_start": self.window_start,
            "window_duration_secs": self.window_duration_secs,
            "time_range_start": self.time_range_start,
            "time_range_end": self.time_range_end,
            "num_rows": self.num_rows,
            "uri": self.uri,
            "size_bytes": self.size_bytes,
            "row_groups": [rg.to_json() for rg in self.row_groups],
            "column_stats": {name: s.to_json() for name, s in self.column_stats.items()},
            "num_merge_ops": self.num_merge_ops,
            "generation": self.generation,
            "root_split_ids": list(self.root_split_ids),
            "parent_split_ids": list(self.parent_split_ids),
            "state": str(self.state),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SplitMetadata:
        return cls(
            split_id=data["split_id"],
            index_uid=data["index_uid"],
            source_id=data["source_id"],
            partition_id=data["partition_id"],
            doc_mapping_uid=data["doc_mapping_uid"],
            sort_schema=data["sort_schema"],
            window_start=int(data["window_start"]),
            window_duration_secs=int(data["window_duration_secs"]),
            time_range_start=data.get("time_range_start"),
            time_range_end=data.get("time_range_end"),
            num_rows=int(data["num_rows"]),
            uri=data.get("uri", ""),
            size_bytes=int(data.get("size_bytes", 0)),
            row_groups=[RowGroupSpan(**rg) for rg in data.get("row_groups", [])],
            column_stats={name: ColumnStats.from_json(name, s)
                          for name, s in data.get("column_stats", {}).items()},
            num_merge_ops=int(data.get("num_merge_ops", 0)),
            generation=int(data.get("generation", 0)),
            root_split_ids=list(data.get("root_split_ids", [])),
            parent_split_ids=list(data.get("parent_split_ids", [])),
            state=SplitState(data.get("state", SplitState.STAGED)),
        )

    def kv_metadata(self) -> dict[str, str]:
        """What the file's footer carries about itself (docs/architecture.md, "Split statistics")."""
        values = self.to_json()
        kv = {KV_PREFIX + k: "" if values[k] is None else str(values[k]) for k in _KV_SCALARS}
        kv[KV_PREFIX + "root_split_ids"] = json.dumps(values["root_split_ids"])
        kv[KV_PREFIX + "column_stats"] = json.dumps(values["column_stats"], separators=(",", ":"))
        return kv


# The scalar fields a split's footer carries (the file's size, uri and row groups are known only outside it).
_KV_SCALARS = ("split_id", "index_uid", "source_id", "partition_id", "doc_mapping_uid", "sort_schema", "window_start",
               "window_duration_secs", "time_range_start", "time_range_end", "num_rows", "num_merge_ops", "generation")


def read_kv_metadata(raw: dict[bytes, bytes] | None) -> dict[str, str]:
    """The strata.* entries of a Parquet footer, prefix removed."""
    if not raw:
        return {}
    out: dict[str, str] = {}
    for key, value in raw.items():
        # The prefix is ASCII: a key decodes to text starting with it exactly when its bytes start with it, so the
        # others (pyarrow's ARROW:schema, kilobytes of base64) are never decoded.
        if key.startswith(_KV_PREFIX_BYTES):
            out[key.decode("utf-8", "replace")[len(KV_PREFIX):]] = value.decode("utf-8", "replace")
    return out


_KV_PREFIX_BYTES = KV_PREFIX.encode("ascii")
