from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.window_out import WindowOut


T = TypeVar("T", bound="WindowPage")


@_attrs_define
class WindowPage:
    """
    Attributes:
        index_id (str):
        windows (list[WindowOut]):
    """

    index_id: str
    windows: list[WindowOut]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index_id = self.index_id

        windows = []
        for windows_item_data in self.windows:
            windows_item = windows_item_data.to_dict()
            windows.append(windows_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index_id": index_id,
                "windows": windows,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.window_out import WindowOut

        d = dict(src_dict)
        index_id = d.pop("index_id")

        windows = []
        _windows = d.pop("windows")
        for windows_item_data in _windows:
            windows_item = WindowOut.from_dict(windows_item_data)

            windows.append(windows_item)

        window_page = cls(
            index_id=index_id,
            windows=windows,
        )

        window_page.additional_properties = d
        return window_page

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
