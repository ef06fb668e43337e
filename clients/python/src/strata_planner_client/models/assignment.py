from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.assigned_input import AssignedInput
    from ..models.parquet_config import ParquetConfig


T = TypeVar("T", bound="Assignment")


@_attrs_define
class Assignment:
    """
    Attributes:
        job_id (str):
        fencing_token (int):
        lease_expires_at (datetime.datetime):
        lease_secs (float):
        index_uid (str):
        source_id (str):
        partition_id (str):
        doc_mapping_uid (str):
        sort_schema (str):
        window_start (int):
        window_duration_secs (int):
        timestamp_field (str):
        timestamp_is_seconds (bool):
        target_split_num_rows (int):
        target_split_size_bytes (int):
        parquet (ParquetConfig):
        output_uri_prefix (str):
        spark_operation_tag (str):
        inputs (list[AssignedInput]):
    """

    job_id: str
    fencing_token: int
    lease_expires_at: datetime.datetime
    lease_secs: float
    index_uid: str
    source_id: str
    partition_id: str
    doc_mapping_uid: str
    sort_schema: str
    window_start: int
    window_duration_secs: int
    timestamp_field: str
    timestamp_is_seconds: bool
    target_split_num_rows: int
    target_split_size_bytes: int
    parquet: ParquetConfig
    output_uri_prefix: str
    spark_operation_tag: str
    inputs: list[AssignedInput]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = self.job_id

        fencing_token = self.fencing_token

        lease_expires_at = self.lease_expires_at.isoformat()

        lease_secs = self.lease_secs

        index_uid = self.index_uid

        source_id = self.source_id

        partition_id = self.partition_id

        doc_mapping_uid = self.doc_mapping_uid

        sort_schema = self.sort_schema

        window_start = self.window_start

        window_duration_secs = self.window_duration_secs

        timestamp_field = self.timestamp_field

        timestamp_is_seconds = self.timestamp_is_seconds

        target_split_num_rows = self.target_split_num_rows

        target_split_size_bytes = self.target_split_size_bytes

        parquet = self.parquet.to_dict()

        output_uri_prefix = self.output_uri_prefix

        spark_operation_tag = self.spark_operation_tag

        inputs = []
        for inputs_item_data in self.inputs:
            inputs_item = inputs_item_data.to_dict()
            inputs.append(inputs_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "fencing_token": fencing_token,
                "lease_expires_at": lease_expires_at,
                "lease_secs": lease_secs,
                "index_uid": index_uid,
                "source_id": source_id,
                "partition_id": partition_id,
                "doc_mapping_uid": doc_mapping_uid,
                "sort_schema": sort_schema,
                "window_start": window_start,
                "window_duration_secs": window_duration_secs,
                "timestamp_field": timestamp_field,
                "timestamp_is_seconds": timestamp_is_seconds,
                "target_split_num_rows": target_split_num_rows,
                "target_split_size_bytes": target_split_size_bytes,
                "parquet": parquet,
                "output_uri_prefix": output_uri_prefix,
                "spark_operation_tag": spark_operation_tag,
                "inputs": inputs,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.assigned_input import AssignedInput
        from ..models.parquet_config import ParquetConfig

        d = dict(src_dict)
        job_id = d.pop("job_id")

        fencing_token = d.pop("fencing_token")

        lease_expires_at = datetime.datetime.fromisoformat(d.pop("lease_expires_at"))

        lease_secs = d.pop("lease_secs")

        index_uid = d.pop("index_uid")

        source_id = d.pop("source_id")

        partition_id = d.pop("partition_id")

        doc_mapping_uid = d.pop("doc_mapping_uid")

        sort_schema = d.pop("sort_schema")

        window_start = d.pop("window_start")

        window_duration_secs = d.pop("window_duration_secs")

        timestamp_field = d.pop("timestamp_field")

        timestamp_is_seconds = d.pop("timestamp_is_seconds")

        target_split_num_rows = d.pop("target_split_num_rows")

        target_split_size_bytes = d.pop("target_split_size_bytes")

        parquet = ParquetConfig.from_dict(d.pop("parquet"))

        output_uri_prefix = d.pop("output_uri_prefix")

        spark_operation_tag = d.pop("spark_operation_tag")

        inputs = []
        _inputs = d.pop("inputs")
        for inputs_item_data in _inputs:
            inputs_item = AssignedInput.from_dict(inputs_item_data)

            inputs.append(inputs_item)

        assignment = cls(
            job_id=job_id,
            fencing_token=fencing_token,
            lease_expires_at=lease_expires_at,
            lease_secs=lease_secs,
            index_uid=index_uid,
            source_id=source_id,
            partition_id=partition_id,
            doc_mapping_uid=doc_mapping_uid,
            sort_schema=sort_schema,
            window_start=window_start,
            window_duration_secs=window_duration_secs,
            timestamp_field=timestamp_field,
            timestamp_is_seconds=timestamp_is_seconds,
            target_split_num_rows=target_split_num_rows,
            target_split_size_bytes=target_split_size_bytes,
            parquet=parquet,
            output_uri_prefix=output_uri_prefix,
            spark_operation_tag=spark_operation_tag,
            inputs=inputs,
        )

        assignment.additional_properties = d
        return assignment

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
