from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.ingested_split import IngestedSplit


T = TypeVar("T", bound="IngestResponse")


@_attrs_define
class IngestResponse:
    """
    Attributes:
        index_id (str):
        split_ids (list[str]): The published splits holding this request's rows, one per window.
        splits (list[IngestedSplit]): The published splits holding this request's rows, one per window; a split may hold
            rows of other requests too.
        rows_received (int):
        rows_written (int):
        rows_dropped_late (int):
        rows_null_timestamp (int):
    """

    index_id: str
    split_ids: list[str]
    splits: list[IngestedSplit]
    rows_received: int
    rows_written: int
    rows_dropped_late: int
    rows_null_timestamp: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index_id = self.index_id

        split_ids = self.split_ids

        splits = []
        for splits_item_data in self.splits:
            splits_item = splits_item_data.to_dict()
            splits.append(splits_item)

        rows_received = self.rows_received

        rows_written = self.rows_written

        rows_dropped_late = self.rows_dropped_late

        rows_null_timestamp = self.rows_null_timestamp

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index_id": index_id,
                "split_ids": split_ids,
                "splits": splits,
                "rows_received": rows_received,
                "rows_written": rows_written,
                "rows_dropped_late": rows_dropped_late,
                "rows_null_timestamp": rows_null_timestamp,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.ingested_split import IngestedSplit

        d = dict(src_dict)
        index_id = d.pop("index_id")

        split_ids = cast(list[str], d.pop("split_ids"))

        splits = []
        _splits = d.pop("splits")
        for splits_item_data in _splits:
            splits_item = IngestedSplit.from_dict(splits_item_data)

            splits.append(splits_item)

        rows_received = d.pop("rows_received")

        rows_written = d.pop("rows_written")

        rows_dropped_late = d.pop("rows_dropped_late")

        rows_null_timestamp = d.pop("rows_null_timestamp")

        ingest_response = cls(
            index_id=index_id,
            split_ids=split_ids,
            splits=splits,
            rows_received=rows_received,
            rows_written=rows_written,
            rows_dropped_late=rows_dropped_late,
            rows_null_timestamp=rows_null_timestamp,
        )

        ingest_response.additional_properties = d
        return ingest_response

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
