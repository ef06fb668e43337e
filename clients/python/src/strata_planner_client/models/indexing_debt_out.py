from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="IndexingDebtOut")


@_attrs_define
class IndexingDebtOut:
    """
    Attributes:
        files_waiting (int): published files without a published artifact snapshot
        oldest_waiting_secs (float | None):
        jobs_in_progress (int):
    """

    files_waiting: int
    oldest_waiting_secs: float | None
    jobs_in_progress: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        files_waiting = self.files_waiting

        oldest_waiting_secs: float | None
        oldest_waiting_secs = self.oldest_waiting_secs

        jobs_in_progress = self.jobs_in_progress

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "files_waiting": files_waiting,
                "oldest_waiting_secs": oldest_waiting_secs,
                "jobs_in_progress": jobs_in_progress,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        files_waiting = d.pop("files_waiting")

        def _parse_oldest_waiting_secs(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        oldest_waiting_secs = _parse_oldest_waiting_secs(d.pop("oldest_waiting_secs"))

        jobs_in_progress = d.pop("jobs_in_progress")

        indexing_debt_out = cls(
            files_waiting=files_waiting,
            oldest_waiting_secs=oldest_waiting_secs,
            jobs_in_progress=jobs_in_progress,
        )

        indexing_debt_out.additional_properties = d
        return indexing_debt_out

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
