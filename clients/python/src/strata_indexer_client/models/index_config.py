from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.artifact_config import ArtifactConfig
    from ..models.field_spec import FieldSpec
    from ..models.merge_policy_config import MergePolicyConfig
    from ..models.parquet_config import ParquetConfig
    from ..models.query_config import QueryConfig
    from ..models.retention_config import RetentionConfig


T = TypeVar("T", bound="IndexConfig")


@_attrs_define
class IndexConfig:
    """
    Attributes:
        fields (list[FieldSpec]):
        timestamp_field (str):
        sort_schema (str):
        compaction_start_time (datetime.datetime | int):
        index_id (str):
        description (str | Unset):  Default: ''.
        window_duration_secs (int | Unset): divides one hour (TW-2) Default: 900.
        late_data_acceptance_secs (int | Unset):  Default: 3600.
        merge_policy (MergePolicyConfig | Unset): StableLogMergePolicy parameters (Quickwit's defaults), used by the
            compaction planner.
        artifacts (ArtifactConfig | Unset): Which index artifacts each file gets (built by the indexing jobs).
        query (QueryConfig | Unset):
        parquet (ParquetConfig | Unset):
        retention (None | RetentionConfig | Unset):
    """

    fields: list[FieldSpec]
    timestamp_field: str
    sort_schema: str
    compaction_start_time: datetime.datetime | int
    index_id: str
    description: str | Unset = ""
    window_duration_secs: int | Unset = 900
    late_data_acceptance_secs: int | Unset = 3600
    merge_policy: MergePolicyConfig | Unset = UNSET
    artifacts: ArtifactConfig | Unset = UNSET
    query: QueryConfig | Unset = UNSET
    parquet: ParquetConfig | Unset = UNSET
    retention: None | RetentionConfig | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.retention_config import RetentionConfig

        fields = []
        for fields_item_data in self.fields:
            fields_item = fields_item_data.to_dict()
            fields.append(fields_item)

        timestamp_field = self.timestamp_field

        sort_schema = self.sort_schema

        compaction_start_time: int | str
        if isinstance(self.compaction_start_time, datetime.datetime):
            compaction_start_time = self.compaction_start_time.isoformat()
        else:
            compaction_start_time = self.compaction_start_time

        index_id = self.index_id

        description = self.description

        window_duration_secs = self.window_duration_secs

        late_data_acceptance_secs = self.late_data_acceptance_secs

        merge_policy: dict[str, Any] | Unset = UNSET
        if not isinstance(self.merge_policy, Unset):
            merge_policy = self.merge_policy.to_dict()

        artifacts: dict[str, Any] | Unset = UNSET
        if not isinstance(self.artifacts, Unset):
            artifacts = self.artifacts.to_dict()

        query: dict[str, Any] | Unset = UNSET
        if not isinstance(self.query, Unset):
            query = self.query.to_dict()

        parquet: dict[str, Any] | Unset = UNSET
        if not isinstance(self.parquet, Unset):
            parquet = self.parquet.to_dict()

        retention: dict[str, Any] | None | Unset
        if isinstance(self.retention, Unset):
            retention = UNSET
        elif isinstance(self.retention, RetentionConfig):
            retention = self.retention.to_dict()
        else:
            retention = self.retention

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "fields": fields,
                "timestamp_field": timestamp_field,
                "sort_schema": sort_schema,
                "compaction_start_time": compaction_start_time,
                "index_id": index_id,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description
        if window_duration_secs is not UNSET:
            field_dict["window_duration_secs"] = window_duration_secs
        if late_data_acceptance_secs is not UNSET:
            field_dict["late_data_acceptance_secs"] = late_data_acceptance_secs
        if merge_policy is not UNSET:
            field_dict["merge_policy"] = merge_policy
        if artifacts is not UNSET:
            field_dict["artifacts"] = artifacts
        if query is not UNSET:
            field_dict["query"] = query
        if parquet is not UNSET:
            field_dict["parquet"] = parquet
        if retention is not UNSET:
            field_dict["retention"] = retention

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.artifact_config import ArtifactConfig
        from ..models.field_spec import FieldSpec
        from ..models.merge_policy_config import MergePolicyConfig
        from ..models.parquet_config import ParquetConfig
        from ..models.query_config import QueryConfig
        from ..models.retention_config import RetentionConfig

        d = dict(src_dict)
        fields = []
        _fields = d.pop("fields")
        for fields_item_data in _fields:
            fields_item = FieldSpec.from_dict(fields_item_data)

            fields.append(fields_item)

        timestamp_field = d.pop("timestamp_field")

        sort_schema = d.pop("sort_schema")

        def _parse_compaction_start_time(data: object) -> datetime.datetime | int:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                compaction_start_time_type_1 = datetime.datetime.fromisoformat(data)

                return compaction_start_time_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | int, data)

        compaction_start_time = _parse_compaction_start_time(
            d.pop("compaction_start_time")
        )

        index_id = d.pop("index_id")

        description = d.pop("description", UNSET)

        window_duration_secs = d.pop("window_duration_secs", UNSET)

        late_data_acceptance_secs = d.pop("late_data_acceptance_secs", UNSET)

        _merge_policy = d.pop("merge_policy", UNSET)
        merge_policy: MergePolicyConfig | Unset
        if isinstance(_merge_policy, Unset):
            merge_policy = UNSET
        else:
            merge_policy = MergePolicyConfig.from_dict(_merge_policy)

        _artifacts = d.pop("artifacts", UNSET)
        artifacts: ArtifactConfig | Unset
        if isinstance(_artifacts, Unset):
            artifacts = UNSET
        else:
            artifacts = ArtifactConfig.from_dict(_artifacts)

        _query = d.pop("query", UNSET)
        query: QueryConfig | Unset
        if isinstance(_query, Unset):
            query = UNSET
        else:
            query = QueryConfig.from_dict(_query)

        _parquet = d.pop("parquet", UNSET)
        parquet: ParquetConfig | Unset
        if isinstance(_parquet, Unset):
            parquet = UNSET
        else:
            parquet = ParquetConfig.from_dict(_parquet)

        def _parse_retention(data: object) -> None | RetentionConfig | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                retention_type_0 = RetentionConfig.from_dict(data)

                return retention_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RetentionConfig | Unset, data)

        retention = _parse_retention(d.pop("retention", UNSET))

        index_config = cls(
            fields=fields,
            timestamp_field=timestamp_field,
            sort_schema=sort_schema,
            compaction_start_time=compaction_start_time,
            index_id=index_id,
            description=description,
            window_duration_secs=window_duration_secs,
            late_data_acceptance_secs=late_data_acceptance_secs,
            merge_policy=merge_policy,
            artifacts=artifacts,
            query=query,
            parquet=parquet,
            retention=retention,
        )

        return index_config
