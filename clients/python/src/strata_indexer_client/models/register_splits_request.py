from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.split_to_register import SplitToRegister


T = TypeVar("T", bound="RegisterSplitsRequest")


@_attrs_define
class RegisterSplitsRequest:
    """
    Attributes:
        splits (list[SplitToRegister]):
    """

    splits: list[SplitToRegister]

    def to_dict(self) -> dict[str, Any]:
        splits = []
        for splits_item_data in self.splits:
            splits_item = splits_item_data.to_dict()
            splits.append(splits_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "splits": splits,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.split_to_register import SplitToRegister

        d = dict(src_dict)
        splits = []
        _splits = d.pop("splits")
        for splits_item_data in _splits:
            splits_item = SplitToRegister.from_dict(splits_item_data)

            splits.append(splits_item)

        register_splits_request = cls(
            splits=splits,
        )

        return register_splits_request
