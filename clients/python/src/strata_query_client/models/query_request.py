from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.query_request_engine_type_0 import QueryRequestEngineType0
from ..types import UNSET, Unset

T = TypeVar("T", bound="QueryRequest")


@_attrs_define
class QueryRequest:
    """
    Attributes:
        sql (str): one SELECT over one index, named as the table
        timeout_secs (float | None | Unset): at most the server's limit
        engine (None | QueryRequestEngineType0 | Unset): run on this engine instead of the one the plan's size selects:
            `local` is query-api's in-process engine (DuckDB), `spark` the Spark Connect server
        max_rows (int | None | Unset): cut the result after this many rows (at most the server's cap); a cut is
            reported, never silent
    """

    sql: str
    timeout_secs: float | None | Unset = UNSET
    engine: None | QueryRequestEngineType0 | Unset = UNSET
    max_rows: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        sql = self.sql

        timeout_secs: float | None | Unset
        if isinstance(self.timeout_secs, Unset):
            timeout_secs = UNSET
        else:
            timeout_secs = self.timeout_secs

        engine: None | str | Unset
        if isinstance(self.engine, Unset):
            engine = UNSET
        elif isinstance(self.engine, QueryRequestEngineType0):
            engine = self.engine.value
        else:
            engine = self.engine

        max_rows: int | None | Unset
        if isinstance(self.max_rows, Unset):
            max_rows = UNSET
        else:
            max_rows = self.max_rows

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "sql": sql,
            }
        )
        if timeout_secs is not UNSET:
            field_dict["timeout_secs"] = timeout_secs
        if engine is not UNSET:
            field_dict["engine"] = engine
        if max_rows is not UNSET:
            field_dict["max_rows"] = max_rows

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        sql = d.pop("sql")

        def _parse_timeout_secs(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        timeout_secs = _parse_timeout_secs(d.pop("timeout_secs", UNSET))

        def _parse_engine(data: object) -> None | QueryRequestEngineType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                engine_type_0 = QueryRequestEngineType0(data)

                return engine_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | QueryRequestEngineType0 | Unset, data)

        engine = _parse_engine(d.pop("engine", UNSET))

        def _parse_max_rows(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_rows = _parse_max_rows(d.pop("max_rows", UNSET))

        query_request = cls(
            sql=sql,
            timeout_secs=timeout_secs,
            engine=engine,
            max_rows=max_rows,
        )

        return query_request
