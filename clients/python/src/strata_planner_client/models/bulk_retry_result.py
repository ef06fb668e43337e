from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="BulkRetryResult")


@_attrs_define
class BulkRetryResult:
    """A bulk retry: jobs back in the queue, and jobs cancelled because their inputs changed.

    Attributes:
        index_id (str):
        queue (str):
        retried (list[str]):
        cancelled (list[str]):
    """

    index_id: str
    queue: str
    retried: list[str]
    cancelled: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index_id = self.index_id

        queue = self.queue

        retried = self.retried

        cancelled = self.cancelled

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index_id": index_id,
                "queue": queue,
                "retried": retried,
                "cancelled": cancelled,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        index_id = d.pop("index_id")

        queue = d.pop("queue")

        retried = cast(list[str], d.pop("retried"))

        cancelled = cast(list[str], d.pop("cancelled"))

        bulk_retry_result = cls(
            index_id=index_id,
            queue=queue,
            retried=retried,
            cancelled=cancelled,
        )

        bulk_retry_result.additional_properties = d
        return bulk_retry_result

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
