from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.queue_summary_counts import QueueSummaryCounts


T = TypeVar("T", bound="QueueSummary")


@_attrs_define
class QueueSummary:
    """
    Attributes:
        queue (str):
        counts (QueueSummaryCounts): jobs per status, every status present (0 when none)
    """

    queue: str
    counts: QueueSummaryCounts
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        queue = self.queue

        counts = self.counts.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "queue": queue,
                "counts": counts,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.queue_summary_counts import QueueSummaryCounts

        d = dict(src_dict)
        queue = d.pop("queue")

        counts = QueueSummaryCounts.from_dict(d.pop("counts"))

        queue_summary = cls(
            queue=queue,
            counts=counts,
        )

        queue_summary.additional_properties = d
        return queue_summary

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
