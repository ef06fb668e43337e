from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="PauseState")


@_attrs_define
class PauseState:
    """Whether one queue is paused for one index, and the running jobs a pause cancelled.

    Attributes:
        index_id (str):
        queue (str):
        paused (bool):
        paused_at (datetime.datetime | None):
        cancelled_job_ids (list[str] | Unset):
    """

    index_id: str
    queue: str
    paused: bool
    paused_at: datetime.datetime | None
    cancelled_job_ids: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index_id = self.index_id

        queue = self.queue

        paused = self.paused

        paused_at: None | str
        if isinstance(self.paused_at, datetime.datetime):
            paused_at = self.paused_at.isoformat()
        else:
            paused_at = self.paused_at

        cancelled_job_ids: list[str] | Unset = UNSET
        if not isinstance(self.cancelled_job_ids, Unset):
            cancelled_job_ids = self.cancelled_job_ids

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index_id": index_id,
                "queue": queue,
                "paused": paused,
                "paused_at": paused_at,
            }
        )
        if cancelled_job_ids is not UNSET:
            field_dict["cancelled_job_ids"] = cancelled_job_ids

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        index_id = d.pop("index_id")

        queue = d.pop("queue")

        paused = d.pop("paused")

        def _parse_paused_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                paused_at_type_0 = datetime.datetime.fromisoformat(data)

                return paused_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        paused_at = _parse_paused_at(d.pop("paused_at"))

        cancelled_job_ids = cast(list[str], d.pop("cancelled_job_ids", UNSET))

        pause_state = cls(
            index_id=index_id,
            queue=queue,
            paused=paused,
            paused_at=paused_at,
            cancelled_job_ids=cancelled_job_ids,
        )

        pause_state.additional_properties = d
        return pause_state

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
