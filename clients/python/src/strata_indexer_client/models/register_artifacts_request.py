from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.artifact_in import ArtifactIn


T = TypeVar("T", bound="RegisterArtifactsRequest")


@_attrs_define
class RegisterArtifactsRequest:
    """
    Attributes:
        artifacts (list[ArtifactIn]):
        publish (bool | Unset): publish a snapshot of the file's registered artifacts afterwards Default: True.
    """

    artifacts: list[ArtifactIn]
    publish: bool | Unset = True

    def to_dict(self) -> dict[str, Any]:
        artifacts = []
        for artifacts_item_data in self.artifacts:
            artifacts_item = artifacts_item_data.to_dict()
            artifacts.append(artifacts_item)

        publish = self.publish

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "artifacts": artifacts,
            }
        )
        if publish is not UNSET:
            field_dict["publish"] = publish

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.artifact_in import ArtifactIn

        d = dict(src_dict)
        artifacts = []
        _artifacts = d.pop("artifacts")
        for artifacts_item_data in _artifacts:
            artifacts_item = ArtifactIn.from_dict(artifacts_item_data)

            artifacts.append(artifacts_item)

        publish = d.pop("publish", UNSET)

        register_artifacts_request = cls(
            artifacts=artifacts,
            publish=publish,
        )

        return register_artifacts_request
