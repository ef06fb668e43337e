from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.engine_out_engine_type_0 import EngineOutEngineType0

T = TypeVar("T", bound="EngineOut")


@_attrs_define
class EngineOut:
    """
    Attributes:
        engine (EngineOutEngineType0 | None): null when no engine here can run the plan
        reason (str):
    """

    engine: EngineOutEngineType0 | None
    reason: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        engine: None | str
        if isinstance(self.engine, EngineOutEngineType0):
            engine = self.engine.value
        else:
            engine = self.engine

        reason = self.reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "engine": engine,
                "reason": reason,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_engine(data: object) -> EngineOutEngineType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                engine_type_0 = EngineOutEngineType0(data)

                return engine_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EngineOutEngineType0 | None, data)

        engine = _parse_engine(d.pop("engine"))

        reason = d.pop("reason")

        engine_out = cls(
            engine=engine,
            reason=reason,
        )

        engine_out.additional_properties = d
        return engine_out

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
