from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.index_settings import IndexSettings


T = TypeVar("T", bound="IndexOut")


@_attrs_define
class IndexOut:
    """
    Attributes:
        index_id (str):
        index_uid (str):
        incarnation (str):
        doc_mapping_uid (str):
        version (int):
        created_at (datetime.datetime):
        updated_at (datetime.datetime):
        config (IndexSettings): Everything about an index except its id: what PUT replaces.
        compaction_paused_at (datetime.datetime | None | Unset):
        indexing_paused_at (datetime.datetime | None | Unset):
    """

    index_id: str
    index_uid: str
    incarnation: str
    doc_mapping_uid: str
    version: int
    created_at: datetime.datetime
    updated_at: datetime.datetime
    config: IndexSettings
    compaction_paused_at: datetime.datetime | None | Unset = UNSET
    indexing_paused_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index_id = self.index_id

        index_uid = self.index_uid

        incarnation = self.incarnation

        doc_mapping_uid = self.doc_mapping_uid

        version = self.version

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        config = self.config.to_dict()

        compaction_paused_at: None | str | Unset
        if isinstance(self.compaction_paused_at, Unset):
            compaction_paused_at = UNSET
        elif isinstance(self.compaction_paused_at, datetime.datetime):
            compaction_paused_at = self.compaction_paused_at.isoformat()
        else:
            compaction_paused_at = self.compaction_paused_at

        indexing_paused_at: None | str | Unset
        if isinstance(self.indexing_paused_at, Unset):
            indexing_paused_at = UNSET
        elif isinstance(self.indexing_paused_at, datetime.datetime):
            indexing_paused_at = self.indexing_paused_at.isoformat()
        else:
            indexing_paused_at = self.indexing_paused_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index_id": index_id,
                "index_uid": index_uid,
                "incarnation": incarnation,
                "doc_mapping_uid": doc_mapping_uid,
                "version": version,
                "created_at": created_at,
                "updated_at": updated_at,
                "config": config,
            }
        )
        if compaction_paused_at is not UNSET:
            field_dict["compaction_paused_at"] = compaction_paused_at
        if indexing_paused_at is not UNSET:
            field_dict["indexing_paused_at"] = indexing_paused_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.index_settings import IndexSettings

        d = dict(src_dict)
        index_id = d.pop("index_id")

        index_uid = d.pop("index_uid")

        incarnation = d.pop("incarnation")

        doc_mapping_uid = d.pop("doc_mapping_uid")

        version = d.pop("version")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        config = IndexSettings.from_dict(d.pop("config"))

        def _parse_compaction_paused_at(
            data: object,
        ) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                compaction_paused_at_type_0 = datetime.datetime.fromisoformat(data)

                return compaction_paused_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        compaction_paused_at = _parse_compaction_paused_at(
            d.pop("compaction_paused_at", UNSET)
        )

        def _parse_indexing_paused_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                indexing_paused_at_type_0 = datetime.datetime.fromisoformat(data)

                return indexing_paused_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        indexing_paused_at = _parse_indexing_paused_at(
            d.pop("indexing_paused_at", UNSET)
        )

        index_out = cls(
            index_id=index_id,
            index_uid=index_uid,
            incarnation=incarnation,
            doc_mapping_uid=doc_mapping_uid,
            version=version,
            created_at=created_at,
            updated_at=updated_at,
            config=config,
            compaction_paused_at=compaction_paused_at,
            indexing_paused_at=indexing_paused_at,
        )

        index_out.additional_properties = d
        return index_out

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
