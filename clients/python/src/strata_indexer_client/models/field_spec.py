from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..models.field_type import FieldType

T = TypeVar("T", bound="FieldSpec")


@_attrs_define
class FieldSpec:
    """
    Attributes:
        name (str):
        type_ (FieldType):
    """

    name: str
    type_: FieldType

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        type_ = self.type_.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "type": type_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        type_ = FieldType(d.pop("type"))

        field_spec = cls(
            name=name,
            type_=type_,
        )

        return field_spec
