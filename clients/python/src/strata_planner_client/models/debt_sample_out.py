from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="DebtSampleOut")


@_attrs_define
class DebtSampleOut:
    """
    Attributes:
        sampled_at (datetime.datetime):
        splits_waiting (int):
        bytes_waiting (int):
        closed_windows_not_final (int):
        oldest_waiting_split_age_secs (float | None):
        indexing_files_waiting (int):
    """

    sampled_at: datetime.datetime
    splits_waiting: int
    bytes_waiting: int
    closed_windows_not_final: int
    oldest_waiting_split_age_secs: float | None
    indexing_files_waiting: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        sampled_at = self.sampled_at.isoformat()

        splits_waiting = self.splits_waiting

        bytes_waiting = self.bytes_waiting

        closed_windows_not_final = self.closed_windows_not_final

        oldest_waiting_split_age_secs: float | None
        oldest_waiting_split_age_secs = self.oldest_waiting_split_age_secs

        indexing_files_waiting = self.indexing_files_waiting

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "sampled_at": sampled_at,
                "splits_waiting": splits_waiting,
                "bytes_waiting": bytes_waiting,
                "closed_windows_not_final": closed_windows_not_final,
                "oldest_waiting_split_age_secs": oldest_waiting_split_age_secs,
                "indexing_files_waiting": indexing_files_waiting,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        sampled_at = datetime.datetime.fromisoformat(d.pop("sampled_at"))

        splits_waiting = d.pop("splits_waiting")

        bytes_waiting = d.pop("bytes_waiting")

        closed_windows_not_final = d.pop("closed_windows_not_final")

        def _parse_oldest_waiting_split_age_secs(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        oldest_waiting_split_age_secs = _parse_oldest_waiting_split_age_secs(
            d.pop("oldest_waiting_split_age_secs")
        )

        indexing_files_waiting = d.pop("indexing_files_waiting")

        debt_sample_out = cls(
            sampled_at=sampled_at,
            splits_waiting=splits_waiting,
            bytes_waiting=bytes_waiting,
            closed_windows_not_final=closed_windows_not_final,
            oldest_waiting_split_age_secs=oldest_waiting_split_age_secs,
            indexing_files_waiting=indexing_files_waiting,
        )

        debt_sample_out.additional_properties = d
        return debt_sample_out

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
