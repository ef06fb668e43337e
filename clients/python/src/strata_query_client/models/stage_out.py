from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="StageOut")


@_attrs_define
class StageOut:
    """
    Attributes:
        stage (str):
        files_before (int):
        files_after (int):
        row_groups_before (int):
        row_groups_after (int):
        bytes_before (int):
        bytes_after (int):
    """

    stage: str
    files_before: int
    files_after: int
    row_groups_before: int
    row_groups_after: int
    bytes_before: int
    bytes_after: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        stage = self.stage

        files_before = self.files_before

        files_after = self.files_after

        row_groups_before = self.row_groups_before

        row_groups_after = self.row_groups_after

        bytes_before = self.bytes_before

        bytes_after = self.bytes_after

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "stage": stage,
                "files_before": files_before,
                "files_after": files_after,
                "row_groups_before": row_groups_before,
                "row_groups_after": row_groups_after,
                "bytes_before": bytes_before,
                "bytes_after": bytes_after,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        stage = d.pop("stage")

        files_before = d.pop("files_before")

        files_after = d.pop("files_after")

        row_groups_before = d.pop("row_groups_before")

        row_groups_after = d.pop("row_groups_after")

        bytes_before = d.pop("bytes_before")

        bytes_after = d.pop("bytes_after")

        stage_out = cls(
            stage=stage,
            files_before=files_before,
            files_after=files_after,
            row_groups_before=row_groups_before,
            row_groups_after=row_groups_after,
            bytes_before=bytes_before,
            bytes_after=bytes_after,
        )

        stage_out.additional_properties = d
        return stage_out

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
