from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.assignment import Assignment
    from ..models.update_result import UpdateResult


T = TypeVar("T", bound="PollResponse")


@_attrs_define
class PollResponse:
    """
    Attributes:
        assignments (list[Assignment]):
        updates (list[UpdateResult]):
        lease_secs (float):
    """

    assignments: list[Assignment]
    updates: list[UpdateResult]
    lease_secs: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        assignments = []
        for assignments_item_data in self.assignments:
            assignments_item = assignments_item_data.to_dict()
            assignments.append(assignments_item)

        updates = []
        for updates_item_data in self.updates:
            updates_item = updates_item_data.to_dict()
            updates.append(updates_item)

        lease_secs = self.lease_secs

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "assignments": assignments,
                "updates": updates,
                "lease_secs": lease_secs,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.assignment import Assignment
        from ..models.update_result import UpdateResult

        d = dict(src_dict)
        assignments = []
        _assignments = d.pop("assignments")
        for assignments_item_data in _assignments:
            assignments_item = Assignment.from_dict(assignments_item_data)

            assignments.append(assignments_item)

        updates = []
        _updates = d.pop("updates")
        for updates_item_data in _updates:
            updates_item = UpdateResult.from_dict(updates_item_data)

            updates.append(updates_item)

        lease_secs = d.pop("lease_secs")

        poll_response = cls(
            assignments=assignments,
            updates=updates,
            lease_secs=lease_secs,
        )

        poll_response.additional_properties = d
        return poll_response

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
