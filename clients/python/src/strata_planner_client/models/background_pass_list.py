from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.background_pass_out import BackgroundPassOut


T = TypeVar("T", bound="BackgroundPassList")


@_attrs_define
class BackgroundPassList:
    """
    Attributes:
        passes (list[BackgroundPassOut]):
    """

    passes: list[BackgroundPassOut]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        passes = []
        for passes_item_data in self.passes:
            passes_item = passes_item_data.to_dict()
            passes.append(passes_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "passes": passes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.background_pass_out import BackgroundPassOut

        d = dict(src_dict)
        passes = []
        _passes = d.pop("passes")
        for passes_item_data in _passes:
            passes_item = BackgroundPassOut.from_dict(passes_item_data)

            passes.append(passes_item)

        background_pass_list = cls(
            passes=passes,
        )

        background_pass_list.additional_properties = d
        return background_pass_list

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
