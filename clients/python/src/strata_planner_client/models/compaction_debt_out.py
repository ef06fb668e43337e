from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.compaction_debt_out_levels import CompactionDebtOutLevels
    from ..models.first_merge_delay_out import FirstMergeDelayOut


T = TypeVar("T", bound="CompactionDebtOut")


@_attrs_define
class CompactionDebtOut:
    """
    Attributes:
        splits_waiting (int): published splits the merge policy would still merge: not mature, sorted, window not before
            compaction_start_time, and not the splits a final window keeps; claimed by a live job or not
        bytes_waiting (int):
        levels (CompactionDebtOutLevels): the waiting splits by merge level
        oldest_waiting_split_age_secs (float | None):
        closed_windows_not_final (int): closed windows where the merge policy still merges: two waiting splits of one
            compaction scope that fit together within the target size
        oldest_closed_window_not_final_age_secs (float | None): since the oldest of them closed (window end +
            late_data_acceptance_secs)
        jobs_unassigned (int):
        jobs_in_progress (int):
        merges_per_sec (float): successful merges of the index over the last 60 s
        rows_merged_per_sec (float):
        first_merge_delay_secs (FirstMergeDelayOut):
    """

    splits_waiting: int
    bytes_waiting: int
    levels: CompactionDebtOutLevels
    oldest_waiting_split_age_secs: float | None
    closed_windows_not_final: int
    oldest_closed_window_not_final_age_secs: float | None
    jobs_unassigned: int
    jobs_in_progress: int
    merges_per_sec: float
    rows_merged_per_sec: float
    first_merge_delay_secs: FirstMergeDelayOut
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        splits_waiting = self.splits_waiting

        bytes_waiting = self.bytes_waiting

        levels = self.levels.to_dict()

        oldest_waiting_split_age_secs: float | None
        oldest_waiting_split_age_secs = self.oldest_waiting_split_age_secs

        closed_windows_not_final = self.closed_windows_not_final

        oldest_closed_window_not_final_age_secs: float | None
        oldest_closed_window_not_final_age_secs = (
            self.oldest_closed_window_not_final_age_secs
        )

        jobs_unassigned = self.jobs_unassigned

        jobs_in_progress = self.jobs_in_progress

        merges_per_sec = self.merges_per_sec

        rows_merged_per_sec = self.rows_merged_per_sec

        first_merge_delay_secs = self.first_merge_delay_secs.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "splits_waiting": splits_waiting,
                "bytes_waiting": bytes_waiting,
                "levels": levels,
                "oldest_waiting_split_age_secs": oldest_waiting_split_age_secs,
                "closed_windows_not_final": closed_windows_not_final,
                "oldest_closed_window_not_final_age_secs": oldest_closed_window_not_final_age_secs,
                "jobs_unassigned": jobs_unassigned,
                "jobs_in_progress": jobs_in_progress,
                "merges_per_sec": merges_per_sec,
                "rows_merged_per_sec": rows_merged_per_sec,
                "first_merge_delay_secs": first_merge_delay_secs,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.compaction_debt_out_levels import CompactionDebtOutLevels
        from ..models.first_merge_delay_out import FirstMergeDelayOut

        d = dict(src_dict)
        splits_waiting = d.pop("splits_waiting")

        bytes_waiting = d.pop("bytes_waiting")

        levels = CompactionDebtOutLevels.from_dict(d.pop("levels"))

        def _parse_oldest_waiting_split_age_secs(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        oldest_waiting_split_age_secs = _parse_oldest_waiting_split_age_secs(
            d.pop("oldest_waiting_split_age_secs")
        )

        closed_windows_not_final = d.pop("closed_windows_not_final")

        def _parse_oldest_closed_window_not_final_age_secs(
            data: object,
        ) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        oldest_closed_window_not_final_age_secs = (
            _parse_oldest_closed_window_not_final_age_secs(
                d.pop("oldest_closed_window_not_final_age_secs")
            )
        )

        jobs_unassigned = d.pop("jobs_unassigned")

        jobs_in_progress = d.pop("jobs_in_progress")

        merges_per_sec = d.pop("merges_per_sec")

        rows_merged_per_sec = d.pop("rows_merged_per_sec")

        first_merge_delay_secs = FirstMergeDelayOut.from_dict(
            d.pop("first_merge_delay_secs")
        )

        compaction_debt_out = cls(
            splits_waiting=splits_waiting,
            bytes_waiting=bytes_waiting,
            levels=levels,
            oldest_waiting_split_age_secs=oldest_waiting_split_age_secs,
            closed_windows_not_final=closed_windows_not_final,
            oldest_closed_window_not_final_age_secs=oldest_closed_window_not_final_age_secs,
            jobs_unassigned=jobs_unassigned,
            jobs_in_progress=jobs_in_progress,
            merges_per_sec=merges_per_sec,
            rows_merged_per_sec=rows_merged_per_sec,
            first_merge_delay_secs=first_merge_delay_secs,
        )

        compaction_debt_out.additional_properties = d
        return compaction_debt_out

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
