from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RetentionApplyRequest")


@_attrs_define
class RetentionApplyRequest:
    """
    Attributes:
        dry_run (bool | Unset): only list what would be dropped Default: False.
    """

    dry_run: bool | Unset = False

    def to_dict(self) -> dict[str, Any]:
        dry_run = self.dry_run

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if dry_run is not UNSET:
            field_dict["dry_run"] = dry_run

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        dry_run = d.pop("dry_run", UNSET)

        retention_apply_request = cls(
            dry_run=dry_run,
        )

        return retention_apply_request
