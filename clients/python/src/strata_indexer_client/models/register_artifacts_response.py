from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.artifact_out import ArtifactOut
    from ..models.snapshot_out import SnapshotOut


T = TypeVar("T", bound="RegisterArtifactsResponse")


@_attrs_define
class RegisterArtifactsResponse:
    """
    Attributes:
        split_id (str):
        snapshot (SnapshotOut):
        artifacts (list[ArtifactOut]):
        created (list[str]): artifact_ids newly registered (the rest were already there)
    """

    split_id: str
    snapshot: SnapshotOut
    artifacts: list[ArtifactOut]
    created: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        split_id = self.split_id

        snapshot = self.snapshot.to_dict()

        artifacts = []
        for artifacts_item_data in self.artifacts:
            artifacts_item = artifacts_item_data.to_dict()
            artifacts.append(artifacts_item)

        created = self.created

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "split_id": split_id,
                "snapshot": snapshot,
                "artifacts": artifacts,
                "created": created,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.artifact_out import ArtifactOut
        from ..models.snapshot_out import SnapshotOut

        d = dict(src_dict)
        split_id = d.pop("split_id")

        snapshot = SnapshotOut.from_dict(d.pop("snapshot"))

        artifacts = []
        _artifacts = d.pop("artifacts")
        for artifacts_item_data in _artifacts:
            artifacts_item = ArtifactOut.from_dict(artifacts_item_data)

            artifacts.append(artifacts_item)

        created = cast(list[str], d.pop("created"))

        register_artifacts_response = cls(
            split_id=split_id,
            snapshot=snapshot,
            artifacts=artifacts,
            created=created,
        )

        register_artifacts_response.additional_properties = d
        return register_artifacts_response

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
