from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.status_update import StatusUpdate


T = TypeVar("T", bound="PollRequest")


@_attrs_define
class PollRequest:
    """
    Attributes:
        worker_id (str):
        capacity (int): free slots for new jobs
        updates (list[StatusUpdate] | Unset):
    """

    worker_id: str
    capacity: int
    updates: list[StatusUpdate] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        worker_id = self.worker_id

        capacity = self.capacity

        updates: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.updates, Unset):
            updates = []
            for updates_item_data in self.updates:
                updates_item = updates_item_data.to_dict()
                updates.append(updates_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "worker_id": worker_id,
                "capacity": capacity,
            }
        )
        if updates is not UNSET:
            field_dict["updates"] = updates

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.status_update import StatusUpdate

        d = dict(src_dict)
        worker_id = d.pop("worker_id")

        capacity = d.pop("capacity")

        _updates = d.pop("updates", UNSET)
        updates: list[StatusUpdate] | Unset = UNSET
        if _updates is not UNSET:
            updates = []
            for updates_item_data in _updates:
                updates_item = StatusUpdate.from_dict(updates_item_data)

                updates.append(updates_item)

        poll_request = cls(
            worker_id=worker_id,
            capacity=capacity,
            updates=updates,
        )

        return poll_request
