from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.query_result_rows_item import QueryResultRowsItem
    from ..models.result_column import ResultColumn
    from ..models.result_summary import ResultSummary


T = TypeVar("T", bound="QueryResult")


@_attrs_define
class QueryResult:
    """A result as one JSON document (`Accept: application/json`, the default). NDJSON and Arrow carry the same
    rows without the envelope.

        Attributes:
            query_id (str):
            columns (list[ResultColumn]):
            rows (list[QueryResultRowsItem]):
            summary (ResultSummary):
    """

    query_id: str
    columns: list[ResultColumn]
    rows: list[QueryResultRowsItem]
    summary: ResultSummary
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        query_id = self.query_id

        columns = []
        for columns_item_data in self.columns:
            columns_item = columns_item_data.to_dict()
            columns.append(columns_item)

        rows = []
        for rows_item_data in self.rows:
            rows_item = rows_item_data.to_dict()
            rows.append(rows_item)

        summary = self.summary.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "query_id": query_id,
                "columns": columns,
                "rows": rows,
                "summary": summary,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.query_result_rows_item import QueryResultRowsItem
        from ..models.result_column import ResultColumn
        from ..models.result_summary import ResultSummary

        d = dict(src_dict)
        query_id = d.pop("query_id")

        columns = []
        _columns = d.pop("columns")
        for columns_item_data in _columns:
            columns_item = ResultColumn.from_dict(columns_item_data)

            columns.append(columns_item)

        rows = []
        _rows = d.pop("rows")
        for rows_item_data in _rows:
            rows_item = QueryResultRowsItem.from_dict(rows_item_data)

            rows.append(rows_item)

        summary = ResultSummary.from_dict(d.pop("summary"))

        query_result = cls(
            query_id=query_id,
            columns=columns,
            rows=rows,
            summary=summary,
        )

        query_result.additional_properties = d
        return query_result

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
