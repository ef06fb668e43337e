from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.plan_status_status import PlanStatusStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.plan_out import PlanOut
    from ..models.problem import Problem


T = TypeVar("T", bound="PlanStatus")


@_attrs_define
class PlanStatus:
    """
    Attributes:
        plan_id (str):
        status (PlanStatusStatus):
        plan (None | PlanOut | Unset):
        error (None | Problem | Unset): why a failed plan failed, as the problem a synchronous EXPLAIN would have
            answered
    """

    plan_id: str
    status: PlanStatusStatus
    plan: None | PlanOut | Unset = UNSET
    error: None | Problem | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.plan_out import PlanOut
        from ..models.problem import Problem

        plan_id = self.plan_id

        status = self.status.value

        plan: dict[str, Any] | None | Unset
        if isinstance(self.plan, Unset):
            plan = UNSET
        elif isinstance(self.plan, PlanOut):
            plan = self.plan.to_dict()
        else:
            plan = self.plan

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, Problem):
            error = self.error.to_dict()
        else:
            error = self.error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "plan_id": plan_id,
                "status": status,
            }
        )
        if plan is not UNSET:
            field_dict["plan"] = plan
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.plan_out import PlanOut
        from ..models.problem import Problem

        d = dict(src_dict)
        plan_id = d.pop("plan_id")

        status = PlanStatusStatus(d.pop("status"))

        def _parse_plan(data: object) -> None | PlanOut | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                plan_type_0 = PlanOut.from_dict(data)

                return plan_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PlanOut | Unset, data)

        plan = _parse_plan(d.pop("plan", UNSET))

        def _parse_error(data: object) -> None | Problem | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = Problem.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Problem | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        plan_status = cls(
            plan_id=plan_id,
            status=status,
            plan=plan,
            error=error,
        )

        plan_status.additional_properties = d
        return plan_status

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
