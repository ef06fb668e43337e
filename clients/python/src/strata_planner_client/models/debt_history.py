from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.debt_sample_out import DebtSampleOut


T = TypeVar("T", bound="DebtHistory")


@_attrs_define
class DebtHistory:
    """
    Attributes:
        index_id (str):
        samples (list[DebtSampleOut]): oldest first, one per sampling interval (10 s)
    """

    index_id: str
    samples: list[DebtSampleOut]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index_id = self.index_id

        samples = []
        for samples_item_data in self.samples:
            samples_item = samples_item_data.to_dict()
            samples.append(samples_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index_id": index_id,
                "samples": samples,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.debt_sample_out import DebtSampleOut

        d = dict(src_dict)
        index_id = d.pop("index_id")

        samples = []
        _samples = d.pop("samples")
        for samples_item_data in _samples:
            samples_item = DebtSampleOut.from_dict(samples_item_data)

            samples.append(samples_item)

        debt_history = cls(
            index_id=index_id,
            samples=samples,
        )

        debt_history.additional_properties = d
        return debt_history

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
