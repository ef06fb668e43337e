from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.artifact_config import ArtifactConfig
    from ..models.indexing_assignment_field_types import IndexingAssignmentFieldTypes


T = TypeVar("T", bound="IndexingAssignment")


@_attrs_define
class IndexingAssignment:
    """
    Attributes:
        job_id (str):
        fencing_token (int):
        lease_expires_at (datetime.datetime):
        lease_secs (float):
        split_id (str):
        index_uid (str):
        partition_id (str):
        uri (str):
        size_bytes (int):
        artifact_prefix (str):
        artifacts (ArtifactConfig): Which index artifacts each file gets (built by the indexing jobs).
        field_types (IndexingAssignmentFieldTypes):
        zstd_level (int):
        spark_operation_tag (str):
    """

    job_id: str
    fencing_token: int
    lease_expires_at: datetime.datetime
    lease_secs: float
    split_id: str
    index_uid: str
    partition_id: str
    uri: str
    size_bytes: int
    artifact_prefix: str
    artifacts: ArtifactConfig
    field_types: IndexingAssignmentFieldTypes
    zstd_level: int
    spark_operation_tag: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = self.job_id

        fencing_token = self.fencing_token

        lease_expires_at = self.lease_expires_at.isoformat()

        lease_secs = self.lease_secs

        split_id = self.split_id

        index_uid = self.index_uid

        partition_id = self.partition_id

        uri = self.uri

        size_bytes = self.size_bytes

        artifact_prefix = self.artifact_prefix

        artifacts = self.artifacts.to_dict()

        field_types = self.field_types.to_dict()

        zstd_level = self.zstd_level

        spark_operation_tag = self.spark_operation_tag

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "fencing_token": fencing_token,
                "lease_expires_at": lease_expires_at,
                "lease_secs": lease_secs,
                "split_id": split_id,
                "index_uid": index_uid,
                "partition_id": partition_id,
                "uri": uri,
                "size_bytes": size_bytes,
                "artifact_prefix": artifact_prefix,
                "artifacts": artifacts,
                "field_types": field_types,
                "zstd_level": zstd_level,
                "spark_operation_tag": spark_operation_tag,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.artifact_config import ArtifactConfig
        from ..models.indexing_assignment_field_types import (
            IndexingAssignmentFieldTypes,
        )

        d = dict(src_dict)
        job_id = d.pop("job_id")

        fencing_token = d.pop("fencing_token")

        lease_expires_at = datetime.datetime.fromisoformat(d.pop("lease_expires_at"))

        lease_secs = d.pop("lease_secs")

        split_id = d.pop("split_id")

        index_uid = d.pop("index_uid")

        partition_id = d.pop("partition_id")

        uri = d.pop("uri")

        size_bytes = d.pop("size_bytes")

        artifact_prefix = d.pop("artifact_prefix")

        artifacts = ArtifactConfig.from_dict(d.pop("artifacts"))

        field_types = IndexingAssignmentFieldTypes.from_dict(d.pop("field_types"))

        zstd_level = d.pop("zstd_level")

        spark_operation_tag = d.pop("spark_operation_tag")

        indexing_assignment = cls(
            job_id=job_id,
            fencing_token=fencing_token,
            lease_expires_at=lease_expires_at,
            lease_secs=lease_secs,
            split_id=split_id,
            index_uid=index_uid,
            partition_id=partition_id,
            uri=uri,
            size_bytes=size_bytes,
            artifact_prefix=artifact_prefix,
            artifacts=artifacts,
            field_types=field_types,
            zstd_level=zstd_level,
            spark_operation_tag=spark_operation_tag,
        )

        indexing_assignment.additional_properties = d
        return indexing_assignment

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
