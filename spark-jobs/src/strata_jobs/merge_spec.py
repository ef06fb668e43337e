"""What a merge job is given and what it returns, and their JSON forms (the Spark wrapper ships strings)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from strata_core.domain.index_config import ParquetConfig
from strata_core.domain.split import SplitMetadata


class MergeTypeConflict(ValueError):
    """MC-4: one column has different logical types in two inputs. Raised before any output is written."""

    def __init__(self, column: str, first_type: str, first_split: str, second_type: str,
                 second_split: str) -> None:
        super().__init__(f"column {column!r} is {first_type} in split {first_split} and {second_type} in "
                         f"split {second_split}")
        self.column = column
        self.types = (first_type, second_type)
        self.split_ids = (first_split, second_split)


class MergeVerificationError(RuntimeError):
    """An MC-1..MC-4 check failed on the outputs: they were deleted and must never be published."""


@dataclass(frozen=True)
class MergeInput:
    split_id: str
    uri: str  # pyarrow.fs URI: file:///... or s3://bucket/...


@dataclass(frozen=True)
class MergeSpec:
    job_id: str
    fencing_token: int
    inputs: list[MergeInput]
    sort_schema: str
    timestamp_field: str
    timestamp_is_seconds: bool  # i64 epoch seconds; else timestamp[us, UTC]
    output_uri_prefix: str  # outputs: f"{prefix}/{split_id}.parquet" (a staging location)
    target_split_num_rows: int
    target_split_size_bytes: int
    parquet: ParquetConfig
    index_uid: str
    source_id: str
    partition_id: str
    doc_mapping_uid: str
    window_start: int
    window_duration_secs: int
    num_merge_ops: int  # max over the inputs + 1
    generation: int
    root_split_ids: list[str] = field(default_factory=list)
    # Verify the checksum and the order on the Parquet bytes decoded again, not only on the Arrow tables
    # handed to the writer. Costs one more decode of the outputs.
    verify_readback: bool = False
    # A rewrite (one input): the delete's predicate (`strata_core.query.predicate_json`); the rows where it
    # is TRUE are left out, every other row is kept in order (DL-1..DL-3).
    delete_predicate: str | None = None


@dataclass
class MergeResult:
    outputs: list[SplitMetadata]
    input_rows: int
    output_rows: int
    checksum: int  # order-independent row checksum, equal for inputs and outputs (mod 2^64)
    stats: dict[str, Any] = field(default_factory=dict)
    # A rewrite whose predicate matched no row of its input: nothing was written (no outputs, checksum 0), and the
    # input is to stay published as it is. Distinct from no outputs with `unchanged` false: every row removed.
    unchanged: bool = False


def spec_to_dict(spec: MergeSpec) -> dict[str, Any]:
    data = {name: getattr(spec, name) for name in spec.__dataclass_fields__}
    data["inputs"] = [{"split_id": i.split_id, "uri": i.uri} for i in spec.inputs]
    data["parquet"] = spec.parquet.model_dump()
    data["root_split_ids"] = list(spec.root_split_ids)
    return data


def spec_from_dict(data: dict[str, Any]) -> MergeSpec:
    values = dict(data)
    unknown = set(values) - set(MergeSpec.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown merge spec fields: {sorted(unknown)}")
    values["inputs"] = [MergeInput(str(i["split_id"]), str(i["uri"])) for i in values.get("inputs", [])]
    values["parquet"] = ParquetConfig.model_validate(values.get("parquet", {}))
    values["root_split_ids"] = [str(s) for s in values.get("root_split_ids", [])]
    return MergeSpec(**values)


def spec_to_json(spec: MergeSpec) -> str:
    return json.dumps(spec_to_dict(spec), separators=(",", ":"), sort_keys=True)


def spec_from_json(text: str) -> MergeSpec:
    return spec_from_dict(json.loads(text))


def result_to_json(result: MergeResult) -> str:
    return json.dumps({
        "outputs": [s.to_json() for s in result.outputs],
        "input_rows": result.input_rows,
        "output_rows": result.output_rows,
        "checksum": result.checksum,
        "stats": result.stats,
        "unchanged": result.unchanged,
    }, separators=(",", ":"))


def result_from_json(text: str) -> MergeResult:
    data = json.loads(text)
    return MergeResult([SplitMetadata.from_json(s) for s in data["outputs"]], int(data["input_rows"]),
                       int(data["output_rows"]), int(data["checksum"]), dict(data.get("stats", {})),
                       bool(data.get("unchanged", False)))
