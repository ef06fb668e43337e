from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="JanitorReportOut")


@_attrs_define
class JanitorReportOut:
    """
    Attributes:
        registered (list[str]): valid artifact objects that were not registered, now registered
        deleted (list[str]): invalid, partial or orphaned objects past the grace period
        missing (list[str]): registered artifacts whose object was gone: unregistered
        reindexed (list[str]): files queued for indexing again because an artifact was missing
    """

    registered: list[str]
    deleted: list[str]
    missing: list[str]
    reindexed: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        registered = self.registered

        deleted = self.deleted

        missing = self.missing

        reindexed = self.reindexed

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "registered": registered,
                "deleted": deleted,
                "missing": missing,
                "reindexed": reindexed,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        registered = cast(list[str], d.pop("registered"))

        deleted = cast(list[str], d.pop("deleted"))

        missing = cast(list[str], d.pop("missing"))

        reindexed = cast(list[str], d.pop("reindexed"))

        janitor_report_out = cls(
            registered=registered,
            deleted=deleted,
            missing=missing,
            reindexed=reindexed,
        )

        janitor_report_out.additional_properties = d
        return janitor_report_out

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
