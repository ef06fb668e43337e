from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="BackgroundPassOut")


@_attrs_define
class BackgroundPassOut:
    """
    Attributes:
        name (str):
        holder (None | str): host:pid:start of the replica running the pass, or that ran it last
        running (bool): a live lease is held: the holder is running the pass now
        lease_expires_at (datetime.datetime | None): while running: when the lease lapses unless renewed
        last_started_at (datetime.datetime | None):
        last_finished_at (datetime.datetime | None): before last_started_at while a run is under way, or when a holder
            died mid-run
        last_error (None | str): the error of the last finished run; null when it succeeded
    """

    name: str
    holder: None | str
    running: bool
    lease_expires_at: datetime.datetime | None
    last_started_at: datetime.datetime | None
    last_finished_at: datetime.datetime | None
    last_error: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        holder: None | str
        holder = self.holder

        running = self.running

        lease_expires_at: None | str
        if isinstance(self.lease_expires_at, datetime.datetime):
            lease_expires_at = self.lease_expires_at.isoformat()
        else:
            lease_expires_at = self.lease_expires_at

        last_started_at: None | str
        if isinstance(self.last_started_at, datetime.datetime):
            last_started_at = self.last_started_at.isoformat()
        else:
            last_started_at = self.last_started_at

        last_finished_at: None | str
        if isinstance(self.last_finished_at, datetime.datetime):
            last_finished_at = self.last_finished_at.isoformat()
        else:
            last_finished_at = self.last_finished_at

        last_error: None | str
        last_error = self.last_error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "holder": holder,
                "running": running,
                "lease_expires_at": lease_expires_at,
                "last_started_at": last_started_at,
                "last_finished_at": last_finished_at,
                "last_error": last_error,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        def _parse_holder(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        holder = _parse_holder(d.pop("holder"))

        running = d.pop("running")

        def _parse_lease_expires_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                lease_expires_at_type_0 = datetime.datetime.fromisoformat(data)

                return lease_expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        lease_expires_at = _parse_lease_expires_at(d.pop("lease_expires_at"))

        def _parse_last_started_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_started_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        last_started_at = _parse_last_started_at(d.pop("last_started_at"))

        def _parse_last_finished_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        last_finished_at = _parse_last_finished_at(d.pop("last_finished_at"))

        def _parse_last_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        last_error = _parse_last_error(d.pop("last_error"))

        background_pass_out = cls(
            name=name,
            holder=holder,
            running=running,
            lease_expires_at=lease_expires_at,
            last_started_at=last_started_at,
            last_finished_at=last_finished_at,
            last_error=last_error,
        )

        background_pass_out.additional_properties = d
        return background_pass_out

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
