from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.engine_out import EngineOut
    from ..models.file_part_out import FilePartOut
    from ..models.stage_out import StageOut
    from ..models.time_range_out import TimeRangeOut


T = TypeVar("T", bound="PlanOut")


@_attrs_define
class PlanOut:
    """
    Attributes:
        index_id (str):
        index_uid (str):
        tenant (None | str):
        sql (str):
        predicate (str):
        columns (list[str]):
        time_range (TimeRangeOut):
        stages (list[StageOut]):
        files (list[FilePartOut]):
        total_files (int):
        total_row_groups (int):
        total_bytes (int):
        total_rows (int):
        planning_ms (float):
        engine (EngineOut | None | Unset): the engine that runs (or would run) the plan, and why
    """

    index_id: str
    index_uid: str
    tenant: None | str
    sql: str
    predicate: str
    columns: list[str]
    time_range: TimeRangeOut
    stages: list[StageOut]
    files: list[FilePartOut]
    total_files: int
    total_row_groups: int
    total_bytes: int
    total_rows: int
    planning_ms: float
    engine: EngineOut | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.engine_out import EngineOut

        index_id = self.index_id

        index_uid = self.index_uid

        tenant: None | str
        tenant = self.tenant

        sql = self.sql

        predicate = self.predicate

        columns = self.columns

        time_range = self.time_range.to_dict()

        stages = []
        for stages_item_data in self.stages:
            stages_item = stages_item_data.to_dict()
            stages.append(stages_item)

        files = []
        for files_item_data in self.files:
            files_item = files_item_data.to_dict()
            files.append(files_item)

        total_files = self.total_files

        total_row_groups = self.total_row_groups

        total_bytes = self.total_bytes

        total_rows = self.total_rows

        planning_ms = self.planning_ms

        engine: dict[str, Any] | None | Unset
        if isinstance(self.engine, Unset):
            engine = UNSET
        elif isinstance(self.engine, EngineOut):
            engine = self.engine.to_dict()
        else:
            engine = self.engine

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index_id": index_id,
                "index_uid": index_uid,
                "tenant": tenant,
                "sql": sql,
                "predicate": predicate,
                "columns": columns,
                "time_range": time_range,
                "stages": stages,
                "files": files,
                "total_files": total_files,
                "total_row_groups": total_row_groups,
                "total_bytes": total_bytes,
                "total_rows": total_rows,
                "planning_ms": planning_ms,
            }
        )
        if engine is not UNSET:
            field_dict["engine"] = engine

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.engine_out import EngineOut
        from ..models.file_part_out import FilePartOut
        from ..models.stage_out import StageOut
        from ..models.time_range_out import TimeRangeOut

        d = dict(src_dict)
        index_id = d.pop("index_id")

        index_uid = d.pop("index_uid")

        def _parse_tenant(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        tenant = _parse_tenant(d.pop("tenant"))

        sql = d.pop("sql")

        predicate = d.pop("predicate")

        columns = cast(list[str], d.pop("columns"))

        time_range = TimeRangeOut.from_dict(d.pop("time_range"))

        stages = []
        _stages = d.pop("stages")
        for stages_item_data in _stages:
            stages_item = StageOut.from_dict(stages_item_data)

            stages.append(stages_item)

        files = []
        _files = d.pop("files")
        for files_item_data in _files:
            files_item = FilePartOut.from_dict(files_item_data)

            files.append(files_item)

        total_files = d.pop("total_files")

        total_row_groups = d.pop("total_row_groups")

        total_bytes = d.pop("total_bytes")

        total_rows = d.pop("total_rows")

        planning_ms = d.pop("planning_ms")

        def _parse_engine(data: object) -> EngineOut | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                engine_type_0 = EngineOut.from_dict(data)

                return engine_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EngineOut | None | Unset, data)

        engine = _parse_engine(d.pop("engine", UNSET))

        plan_out = cls(
            index_id=index_id,
            index_uid=index_uid,
            tenant=tenant,
            sql=sql,
            predicate=predicate,
            columns=columns,
            time_range=time_range,
            stages=stages,
            files=files,
            total_files=total_files,
            total_row_groups=total_row_groups,
            total_bytes=total_bytes,
            total_rows=total_rows,
            planning_ms=planning_ms,
            engine=engine,
        )

        plan_out.additional_properties = d
        return plan_out

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
