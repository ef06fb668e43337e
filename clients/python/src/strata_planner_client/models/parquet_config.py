from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ParquetConfig")


@_attrs_define
class ParquetConfig:
    """
    Attributes:
        row_group_size (int | Unset):  Default: 131072.
        zstd_level (int | Unset):  Default: 3.
        write_statistics (bool | Unset):  Default: True.
    """

    row_group_size: int | Unset = 131072
    zstd_level: int | Unset = 3
    write_statistics: bool | Unset = True

    def to_dict(self) -> dict[str, Any]:
        row_group_size = self.row_group_size

        zstd_level = self.zstd_level

        write_statistics = self.write_statistics

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if row_group_size is not UNSET:
            field_dict["row_group_size"] = row_group_size
        if zstd_level is not UNSET:
            field_dict["zstd_level"] = zstd_level
        if write_statistics is not UNSET:
            field_dict["write_statistics"] = write_statistics

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        row_group_size = d.pop("row_group_size", UNSET)

        zstd_level = d.pop("zstd_level", UNSET)

        write_statistics = d.pop("write_statistics", UNSET)

        parquet_config = cls(
            row_group_size=row_group_size,
            zstd_level=zstd_level,
            write_statistics=write_statistics,
        )

        return parquet_config
