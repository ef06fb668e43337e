from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.plan_response_skipped import PlanResponseSkipped
    from ..models.plan_response_skipped_counts import PlanResponseSkippedCounts
    from ..models.planned_operation import PlannedOperation


T = TypeVar("T", bound="PlanResponse")


@_attrs_define
class PlanResponse:
    """
    Attributes:
        index_id (str):
        dry_run (bool):
        windows_examined (int):
        operations (list[PlannedOperation]):
        skipped (PlanResponseSkipped): split_id -> reason it is not merged; mature splits are only counted, in
            skipped_counts
        skipped_counts (PlanResponseSkippedCounts):
        created_job_ids (list[str] | Unset):
        operations_not_created (int | Unset):  Default: 0.
    """

    index_id: str
    dry_run: bool
    windows_examined: int
    operations: list[PlannedOperation]
    skipped: PlanResponseSkipped
    skipped_counts: PlanResponseSkippedCounts
    created_job_ids: list[str] | Unset = UNSET
    operations_not_created: int | Unset = 0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index_id = self.index_id

        dry_run = self.dry_run

        windows_examined = self.windows_examined

        operations = []
        for operations_item_data in self.operations:
            operations_item = operations_item_data.to_dict()
            operations.append(operations_item)

        skipped = self.skipped.to_dict()

        skipped_counts = self.skipped_counts.to_dict()

        created_job_ids: list[str] | Unset = UNSET
        if not isinstance(self.created_job_ids, Unset):
            created_job_ids = self.created_job_ids

        operations_not_created = self.operations_not_created

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index_id": index_id,
                "dry_run": dry_run,
                "windows_examined": windows_examined,
                "operations": operations,
                "skipped": skipped,
                "skipped_counts": skipped_counts,
            }
        )
        if created_job_ids is not UNSET:
            field_dict["created_job_ids"] = created_job_ids
        if operations_not_created is not UNSET:
            field_dict["operations_not_created"] = operations_not_created

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.plan_response_skipped import PlanResponseSkipped
        from ..models.plan_response_skipped_counts import PlanResponseSkippedCounts
        from ..models.planned_operation import PlannedOperation

        d = dict(src_dict)
        index_id = d.pop("index_id")

        dry_run = d.pop("dry_run")

        windows_examined = d.pop("windows_examined")

        operations = []
        _operations = d.pop("operations")
        for operations_item_data in _operations:
            operations_item = PlannedOperation.from_dict(operations_item_data)

            operations.append(operations_item)

        skipped = PlanResponseSkipped.from_dict(d.pop("skipped"))

        skipped_counts = PlanResponseSkippedCounts.from_dict(d.pop("skipped_counts"))

        created_job_ids = cast(list[str], d.pop("created_job_ids", UNSET))

        operations_not_created = d.pop("operations_not_created", UNSET)

        plan_response = cls(
            index_id=index_id,
            dry_run=dry_run,
            windows_examined=windows_examined,
            operations=operations,
            skipped=skipped,
            skipped_counts=skipped_counts,
            created_job_ids=created_job_ids,
            operations_not_created=operations_not_created,
        )

        plan_response.additional_properties = d
        return plan_response

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
