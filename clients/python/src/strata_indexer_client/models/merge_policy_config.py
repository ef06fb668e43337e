from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="MergePolicyConfig")


@_attrs_define
class MergePolicyConfig:
    """StableLogMergePolicy parameters (Quickwit's defaults), used by the compaction planner.

    Attributes:
        min_level_num_docs (int | Unset):  Default: 100000.
        merge_factor (int | Unset):  Default: 10.
        max_merge_factor (int | Unset):  Default: 12.
        maturation_period_secs (int | Unset):  Default: 172800.
        target_split_size_bytes (int | Unset):  Default: 268435456.
        target_split_num_rows (int | Unset):  Default: 10000000.
    """

    min_level_num_docs: int | Unset = 100000
    merge_factor: int | Unset = 10
    max_merge_factor: int | Unset = 12
    maturation_period_secs: int | Unset = 172800
    target_split_size_bytes: int | Unset = 268435456
    target_split_num_rows: int | Unset = 10000000

    def to_dict(self) -> dict[str, Any]:
        min_level_num_docs = self.min_level_num_docs

        merge_factor = self.merge_factor

        max_merge_factor = self.max_merge_factor

        maturation_period_secs = self.maturation_period_secs

        target_split_size_bytes = self.target_split_size_bytes

        target_split_num_rows = self.target_split_num_rows

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if min_level_num_docs is not UNSET:
            field_dict["min_level_num_docs"] = min_level_num_docs
        if merge_factor is not UNSET:
            field_dict["merge_factor"] = merge_factor
        if max_merge_factor is not UNSET:
            field_dict["max_merge_factor"] = max_merge_factor
        if maturation_period_secs is not UNSET:
            field_dict["maturation_period_secs"] = maturation_period_secs
        if target_split_size_bytes is not UNSET:
            field_dict["target_split_size_bytes"] = target_split_size_bytes
        if target_split_num_rows is not UNSET:
            field_dict["target_split_num_rows"] = target_split_num_rows

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        min_level_num_docs = d.pop("min_level_num_docs", UNSET)

        merge_factor = d.pop("merge_factor", UNSET)

        max_merge_factor = d.pop("max_merge_factor", UNSET)

        maturation_period_secs = d.pop("maturation_period_secs", UNSET)

        target_split_size_bytes = d.pop("target_split_size_bytes", UNSET)

        target_split_num_rows = d.pop("target_split_num_rows", UNSET)

        merge_policy_config = cls(
            min_level_num_docs=min_level_num_docs,
            merge_factor=merge_factor,
            max_merge_factor=max_merge_factor,
            maturation_period_secs=maturation_period_secs,
            target_split_size_bytes=target_split_size_bytes,
            target_split_num_rows=target_split_num_rows,
        )

        return merge_policy_config
