from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.maintenance_pass import MaintenancePass

T = TypeVar("T", bound="SkipOut")


@_attrs_define
class SkipOut:
    """
    Attributes:
        skip_id (int):
        pass_ (MaintenancePass):
        index_id (None | str): the index the entry belongs to (none for an entry of no index)
        entry (str): what was skipped: a split id, an artifact or merge output URI, an artifact listing's prefix, a job
            id, or an index uid
        reason_class (str): the exception's class, the `reason` label of strata_maintenance_skipped_total
        reason (str): the exception's message, credential-looking text replaced by ***
        first_seen_at (datetime.datetime):
        last_seen_at (datetime.datetime):
        attempts (int): how many passes skipped it
    """

    skip_id: int
    pass_: MaintenancePass
    index_id: None | str
    entry: str
    reason_class: str
    reason: str
    first_seen_at: datetime.datetime
    last_seen_at: datetime.datetime
    attempts: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        skip_id = self.skip_id

        pass_ = self.pass_.value

        index_id: None | str
        index_id = self.index_id

        entry = self.entry

        reason_class = self.reason_class

        reason = self.reason

        first_seen_at = self.first_seen_at.isoformat()

        last_seen_at = self.last_seen_at.isoformat()

        attempts = self.attempts

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "skip_id": skip_id,
                "pass": pass_,
                "index_id": index_id,
                "entry": entry,
                "reason_class": reason_class,
                "reason": reason,
                "first_seen_at": first_seen_at,
                "last_seen_at": last_seen_at,
                "attempts": attempts,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        skip_id = d.pop("skip_id")

        pass_ = MaintenancePass(d.pop("pass"))

        def _parse_index_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        index_id = _parse_index_id(d.pop("index_id"))

        entry = d.pop("entry")

        reason_class = d.pop("reason_class")

        reason = d.pop("reason")

        first_seen_at = datetime.datetime.fromisoformat(d.pop("first_seen_at"))

        last_seen_at = datetime.datetime.fromisoformat(d.pop("last_seen_at"))

        attempts = d.pop("attempts")

        skip_out = cls(
            skip_id=skip_id,
            pass_=pass_,
            index_id=index_id,
            entry=entry,
            reason_class=reason_class,
            reason=reason,
            first_seen_at=first_seen_at,
            last_seen_at=last_seen_at,
            attempts=attempts,
        )

        skip_out.additional_properties = d
        return skip_out

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
