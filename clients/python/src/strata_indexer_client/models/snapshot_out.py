from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="SnapshotOut")


@_attrs_define
class SnapshotOut:
    """
    Attributes:
        published (bool):
        manifest_uri (None | str):
        published_at (datetime.datetime | None):
        artifact_count (int):
    """

    published: bool
    manifest_uri: None | str
    published_at: datetime.datetime | None
    artifact_count: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        published = self.published

        manifest_uri: None | str
        manifest_uri = self.manifest_uri

        published_at: None | str
        if isinstance(self.published_at, datetime.datetime):
            published_at = self.published_at.isoformat()
        else:
            published_at = self.published_at

        artifact_count = self.artifact_count

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "published": published,
                "manifest_uri": manifest_uri,
                "published_at": published_at,
                "artifact_count": artifact_count,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        published = d.pop("published")

        def _parse_manifest_uri(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        manifest_uri = _parse_manifest_uri(d.pop("manifest_uri"))

        def _parse_published_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                published_at_type_0 = datetime.datetime.fromisoformat(data)

                return published_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        published_at = _parse_published_at(d.pop("published_at"))

        artifact_count = d.pop("artifact_count")

        snapshot_out = cls(
            published=published,
            manifest_uri=manifest_uri,
            published_at=published_at,
            artifact_count=artifact_count,
        )

        snapshot_out.additional_properties = d
        return snapshot_out

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
