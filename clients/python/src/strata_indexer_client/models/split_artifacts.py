from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.artifact_out import ArtifactOut
    from ..models.snapshot_out import SnapshotOut


T = TypeVar("T", bound="SplitArtifacts")


@_attrs_define
class SplitArtifacts:
    """
    Attributes:
        split_id (str):
        snapshot (SnapshotOut):
        artifacts (list[ArtifactOut]):
    """

    split_id: str
    snapshot: SnapshotOut
    artifacts: list[ArtifactOut]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        split_id = self.split_id

        snapshot = self.snapshot.to_dict()

        artifacts = []
        for artifacts_item_data in self.artifacts:
            artifacts_item = artifacts_item_data.to_dict()
            artifacts.append(artifacts_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "split_id": split_id,
                "snapshot": snapshot,
                "artifacts": artifacts,
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

        split_artifacts = cls(
            split_id=split_id,
            snapshot=snapshot,
            artifacts=artifacts,
        )

        split_artifacts.additional_properties = d
        return split_artifacts

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
