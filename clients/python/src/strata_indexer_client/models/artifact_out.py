from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ArtifactOut")


@_attrs_define
class ArtifactOut:
    """
    Attributes:
        artifact_id (str):
        artifact_type (str):
        column (str):
        format_version (int):
        uri (str):
        size_bytes (int):
        content_hash (str):
        registered_by (str):
        created_at (datetime.datetime):
        in_published_snapshot (bool):
    """

    artifact_id: str
    artifact_type: str
    column: str
    format_version: int
    uri: str
    size_bytes: int
    content_hash: str
    registered_by: str
    created_at: datetime.datetime
    in_published_snapshot: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        artifact_id = self.artifact_id

        artifact_type = self.artifact_type

        column = self.column

        format_version = self.format_version

        uri = self.uri

        size_bytes = self.size_bytes

        content_hash = self.content_hash

        registered_by = self.registered_by

        created_at = self.created_at.isoformat()

        in_published_snapshot = self.in_published_snapshot

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "artifact_id": artifact_id,
                "artifact_type": artifact_type,
                "column": column,
                "format_version": format_version,
                "uri": uri,
                "size_bytes": size_bytes,
                "content_hash": content_hash,
                "registered_by": registered_by,
                "created_at": created_at,
                "in_published_snapshot": in_published_snapshot,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        artifact_id = d.pop("artifact_id")

        artifact_type = d.pop("artifact_type")

        column = d.pop("column")

        format_version = d.pop("format_version")

        uri = d.pop("uri")

        size_bytes = d.pop("size_bytes")

        content_hash = d.pop("content_hash")

        registered_by = d.pop("registered_by")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        in_published_snapshot = d.pop("in_published_snapshot")

        artifact_out = cls(
            artifact_id=artifact_id,
            artifact_type=artifact_type,
            column=column,
            format_version=format_version,
            uri=uri,
            size_bytes=size_bytes,
            content_hash=content_hash,
            registered_by=registered_by,
            created_at=created_at,
            in_published_snapshot=in_published_snapshot,
        )

        artifact_out.additional_properties = d
        return artifact_out

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
