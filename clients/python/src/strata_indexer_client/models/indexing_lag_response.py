from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.index_lag import IndexLag


T = TypeVar("T", bound="IndexingLagResponse")


@_attrs_define
class IndexingLagResponse:
    """
    Attributes:
        indexes (list[IndexLag]):
    """

    indexes: list[IndexLag]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        indexes = []
        for indexes_item_data in self.indexes:
            indexes_item = indexes_item_data.to_dict()
            indexes.append(indexes_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "indexes": indexes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.index_lag import IndexLag

        d = dict(src_dict)
        indexes = []
        _indexes = d.pop("indexes")
        for indexes_item_data in _indexes:
            indexes_item = IndexLag.from_dict(indexes_item_data)

            indexes.append(indexes_item)

        indexing_lag_response = cls(
            indexes=indexes,
        )

        indexing_lag_response.additional_properties = d
        return indexing_lag_response

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
