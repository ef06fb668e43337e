from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.bloom_column_config import BloomColumnConfig


T = TypeVar("T", bound="ArtifactConfig")


@_attrs_define
class ArtifactConfig:
    """Which index artifacts each file gets (built by the indexing jobs).

    Attributes:
        zone_map_columns (list[str] | Unset):
        bloom_columns (list[BloomColumnConfig] | Unset):
        bitmap_columns (list[str] | Unset):
        bitmap_max_distinct_values (int | Unset):  Default: 10000.
        full_text_columns (list[str] | Unset):
    """

    zone_map_columns: list[str] | Unset = UNSET
    bloom_columns: list[BloomColumnConfig] | Unset = UNSET
    bitmap_columns: list[str] | Unset = UNSET
    bitmap_max_distinct_values: int | Unset = 10000
    full_text_columns: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        zone_map_columns: list[str] | Unset = UNSET
        if not isinstance(self.zone_map_columns, Unset):
            zone_map_columns = self.zone_map_columns

        bloom_columns: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.bloom_columns, Unset):
            bloom_columns = []
            for bloom_columns_item_data in self.bloom_columns:
                bloom_columns_item = bloom_columns_item_data.to_dict()
                bloom_columns.append(bloom_columns_item)

        bitmap_columns: list[str] | Unset = UNSET
        if not isinstance(self.bitmap_columns, Unset):
            bitmap_columns = self.bitmap_columns

        bitmap_max_distinct_values = self.bitmap_max_distinct_values

        full_text_columns: list[str] | Unset = UNSET
        if not isinstance(self.full_text_columns, Unset):
            full_text_columns = self.full_text_columns

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if zone_map_columns is not UNSET:
            field_dict["zone_map_columns"] = zone_map_columns
        if bloom_columns is not UNSET:
            field_dict["bloom_columns"] = bloom_columns
        if bitmap_columns is not UNSET:
            field_dict["bitmap_columns"] = bitmap_columns
        if bitmap_max_distinct_values is not UNSET:
            field_dict["bitmap_max_distinct_values"] = bitmap_max_distinct_values
        if full_text_columns is not UNSET:
            field_dict["full_text_columns"] = full_text_columns

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.bloom_column_config import BloomColumnConfig

        d = dict(src_dict)
        zone_map_columns = cast(list[str], d.pop("zone_map_columns", UNSET))

        _bloom_columns = d.pop("bloom_columns", UNSET)
        bloom_columns: list[BloomColumnConfig] | Unset = UNSET
        if _bloom_columns is not UNSET:
            bloom_columns = []
            for bloom_columns_item_data in _bloom_columns:
                bloom_columns_item = BloomColumnConfig.from_dict(
                    bloom_columns_item_data
                )

                bloom_columns.append(bloom_columns_item)

        bitmap_columns = cast(list[str], d.pop("bitmap_columns", UNSET))

        bitmap_max_distinct_values = d.pop("bitmap_max_distinct_values", UNSET)

        full_text_columns = cast(list[str], d.pop("full_text_columns", UNSET))

        artifact_config = cls(
            zone_map_columns=zone_map_columns,
            bloom_columns=bloom_columns,
            bitmap_columns=bitmap_columns,
            bitmap_max_distinct_values=bitmap_max_distinct_values,
            full_text_columns=full_text_columns,
        )

        return artifact_config
