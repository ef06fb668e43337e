"""Typed column statistics (min/max/regex never exclude a present value) and index configuration rules."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata_core.domain.column_stats import compute_column_stats, value_regex
from strata_core.domain.index_config import IndexSettings, config_problems


@given(st.lists(st.one_of(st.none(), st.text(max_size=8)), min_size=1, max_size=80))
def test_regex_matches_every_value(values):
    regex = re.compile(value_regex(pa.array(values, pa.string())), re.DOTALL)
    for value in values:
        if value is not None:
            assert regex.fullmatch(value), (regex.pattern, value)


def test_typed_min_max():
    table = pa.table({
        "s": ["b", None, "a"],
        "i": pa.array([3, -2, None], pa.int64()),
        "u": pa.array([2**64 - 1, 0, 5], pa.uint64()),
        "f": [1.5, float("nan"), -0.5],
        "ts": pa.array([10, 20, None], pa.timestamp("us", tz="UTC")),
        "n": pa.nulls(3, pa.string()),
    })
    stats = compute_column_stats(table, {"s"})
    assert (stats["s"].value_type, stats["s"].min_value, stats["s"].max_value, stats["s"].null_count) == \
        ("string", "a", "b", 1)
    assert stats["s"].regex == "^(?:a|b)$"
    assert (stats["i"].min_value, stats["i"].max_value) == (-2, 3)
    assert (stats["u"].value_type, stats["u"].max_value) == ("u64", 2**64 - 1)
    assert (stats["ts"].value_type, stats["ts"].min_value, stats["ts"].max_value) == ("i64", 10, 20)
    assert stats["n"].value_type == "null"


def _settings(**overrides) -> IndexSettings:
    base = {
        "fields": [{"name": "m", "type": "string"}, {"name": "ts", "type": "i64"}],
        "timestamp_field": "ts",
        "sort_schema": "m,ts",
        "compaction_start_time": "2026-01-01T00:00:00Z",
    }
    return IndexSettings.model_validate(base | overrides)


def test_compaction_start_time_accepts_a_datetime():
    assert _settings().compaction_start_time == 1767225600


def test_coherent_config_has_no_problems():
    assert config_problems(_settings()) == []


def test_problems_name_their_field():
    problems = config_problems(_settings(sort_schema="m,zz", timestamp_field="nope",
                                         fields=[{"name": "m", "type": "string"}, {"name": "m", "type": "i64"}]))
    fields = [f for f, _ in problems]
    assert "fields.1.name" in fields and "sort_schema" in fields and "timestamp_field" in fields


def test_naive_datetime_is_refused():
    with pytest.raises(ValueError, match="timezone"):
        _settings(compaction_start_time="2026-01-01T00:00:00")
