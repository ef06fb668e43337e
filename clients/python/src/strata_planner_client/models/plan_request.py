from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PlanRequest")


@_attrs_define
class PlanRequest:
    """
    Attributes:
        from_ (datetime.datetime | int | None | Unset): first window start (epoch seconds or RFC 3339)
        to (datetime.datetime | int | None | Unset): windows starting before this
        final (bool | Unset): treat every window as closed: merge what remains toward the target size Default: False.
    """

    from_: datetime.datetime | int | None | Unset = UNSET
    to: datetime.datetime | int | None | Unset = UNSET
    final: bool | Unset = False

    def to_dict(self) -> dict[str, Any]:
        from_: int | None | str | Unset
        if isinstance(self.from_, Unset):
            from_ = UNSET
        elif isinstance(self.from_, datetime.datetime):
            from_ = self.from_.isoformat()
        else:
            from_ = self.from_

        to: int | None | str | Unset
        if isinstance(self.to, Unset):
            to = UNSET
        elif isinstance(self.to, datetime.datetime):
            to = self.to.isoformat()
        else:
            to = self.to

        final = self.final

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if from_ is not UNSET:
            field_dict["from"] = from_
        if to is not UNSET:
            field_dict["to"] = to
        if final is not UNSET:
            field_dict["final"] = final

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_from_(data: object) -> datetime.datetime | int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                from_type_1 = datetime.datetime.fromisoformat(data)

                return from_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | int | None | Unset, data)

        from_ = _parse_from_(d.pop("from", UNSET))

        def _parse_to(data: object) -> datetime.datetime | int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                to_type_1 = datetime.datetime.fromisoformat(data)

                return to_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | int | None | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        final = d.pop("final", UNSET)

        plan_request = cls(
            from_=from_,
            to=to,
            final=final,
        )

        return plan_request
