from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.result_summary_engine import ResultSummaryEngine
from ..models.result_summary_result_cache import ResultSummaryResultCache

T = TypeVar("T", bound="ResultSummary")


@_attrs_define
class ResultSummary:
    """
    Attributes:
        rows (int):
        truncated (bool): whether the row cap cut the result
        row_cap (int):
        engine (ResultSummaryEngine):
        files_scanned (int):
        row_groups_scanned (int):
        bytes_scanned (int):
        planning_ms (float):
        elapsed_ms (float):
        result_cache (ResultSummaryResultCache): `hit`: answered from the result kept from an earlier run of the same
            query over the same published files (nothing was read: the counts above describe that run); `miss`: run now;
            `bypass`: run now because the request's Cache-Control said `no-cache` or `no-store`
    """

    rows: int
    truncated: bool
    row_cap: int
    engine: ResultSummaryEngine
    files_scanned: int
    row_groups_scanned: int
    bytes_scanned: int
    planning_ms: float
    elapsed_ms: float
    result_cache: ResultSummaryResultCache
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        rows = self.rows

        truncated = self.truncated

        row_cap = self.row_cap

        engine = self.engine.value

        files_scanned = self.files_scanned

        row_groups_scanned = self.row_groups_scanned

        bytes_scanned = self.bytes_scanned

        planning_ms = self.planning_ms

        elapsed_ms = self.elapsed_ms

        result_cache = self.result_cache.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "rows": rows,
                "truncated": truncated,
                "row_cap": row_cap,
                "engine": engine,
                "files_scanned": files_scanned,
                "row_groups_scanned": row_groups_scanned,
                "bytes_scanned": bytes_scanned,
                "planning_ms": planning_ms,
                "elapsed_ms": elapsed_ms,
                "result_cache": result_cache,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        rows = d.pop("rows")

        truncated = d.pop("truncated")

        row_cap = d.pop("row_cap")

        engine = ResultSummaryEngine(d.pop("engine"))

        files_scanned = d.pop("files_scanned")

        row_groups_scanned = d.pop("row_groups_scanned")

        bytes_scanned = d.pop("bytes_scanned")

        planning_ms = d.pop("planning_ms")

        elapsed_ms = d.pop("elapsed_ms")

        result_cache = ResultSummaryResultCache(d.pop("result_cache"))

        result_summary = cls(
            rows=rows,
            truncated=truncated,
            row_cap=row_cap,
            engine=engine,
            files_scanned=files_scanned,
            row_groups_scanned=row_groups_scanned,
            bytes_scanned=bytes_scanned,
            planning_ms=planning_ms,
            elapsed_ms=elapsed_ms,
            result_cache=result_cache,
        )

        result_summary.additional_properties = d
        return result_summary

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
