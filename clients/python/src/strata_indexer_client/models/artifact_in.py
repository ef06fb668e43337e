from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ArtifactIn")


@_attrs_define
class ArtifactIn:
    """
    Attributes:
        artifact_type (str):
        format_version (int):
        uri (str):
        size_bytes (int):
        content_hash (str): "sha256:<hex>" of the compressed payload
        column (str | Unset): "" for zone maps and full-text Default: ''.
    """

    artifact_type: str
    format_version: int
    uri: str
    size_bytes: int
    content_hash: str
    column: str | Unset = ""

    def to_dict(self) -> dict[str, Any]:
        artifact_type = self.artifact_type

        format_version = self.format_version

        uri = self.uri

        size_bytes = self.size_bytes

        content_hash = self.content_hash

        column = self.column

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "artifact_type": artifact_type,
                "format_version": format_version,
                "uri": uri,
                "size_bytes": size_bytes,
                "content_hash": content_hash,
            }
        )
        if column is not UNSET:
            field_dict["column"] = column

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        artifact_type = d.pop("artifact_type")

        format_version = d.pop("format_version")

        uri = d.pop("uri")

        size_bytes = d.pop("size_bytes")

        content_hash = d.pop("content_hash")

        column = d.pop("column", UNSET)

        artifact_in = cls(
            artifact_type=artifact_type,
            format_version=format_version,
            uri=uri,
            size_bytes=size_bytes,
            content_hash=content_hash,
            column=column,
        )

        return artifact_in
