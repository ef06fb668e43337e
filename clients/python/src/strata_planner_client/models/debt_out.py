from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.compaction_debt_out import CompactionDebtOut
    from ..models.indexing_debt_out import IndexingDebtOut


T = TypeVar("T", bound="DebtOut")


@_attrs_define
class DebtOut:
    """
    Attributes:
        index_id (str):
        measured_at (datetime.datetime):
        published_splits (int):
        compaction (CompactionDebtOut):
        indexing (IndexingDebtOut):
    """

    index_id: str
    measured_at: datetime.datetime
    published_splits: int
    compaction: CompactionDebtOut
    indexing: IndexingDebtOut
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index_id = self.index_id

        measured_at = self.measured_at.isoformat()

        published_splits = self.published_splits

        compaction = self.compaction.to_dict()

        indexing = self.indexing.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index_id": index_id,
                "measured_at": measured_at,
                "published_splits": published_splits,
                "compaction": compaction,
                "indexing": indexing,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.compaction_debt_out import CompactionDebtOut
        from ..models.indexing_debt_out import IndexingDebtOut

        d = dict(src_dict)
        index_id = d.pop("index_id")

        measured_at = datetime.datetime.fromisoformat(d.pop("measured_at"))

        published_splits = d.pop("published_splits")

        compaction = CompactionDebtOut.from_dict(d.pop("compaction"))

        indexing = IndexingDebtOut.from_dict(d.pop("indexing"))

        debt_out = cls(
            index_id=index_id,
            measured_at=measured_at,
            published_splits=published_splits,
            compaction=compaction,
            indexing=indexing,
        )

        debt_out.additional_properties = d
        return debt_out

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
