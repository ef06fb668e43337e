"""A delete's rewrite is the merge kernel with one input and a row drop (`MergeSpec.delete_predicate`). Its
invariants, on random tables and random predicates (NULL, NaN, LIKE escapes, text tokens included):

- DL-1 rows out = rows in - rows removed;
- DL-2 every removed row matches the predicate (the reference semantics, `evaluate_row`) and no kept row does;
- DL-3 the kept rows keep their order and the file its schema.

Pure pyarrow: no Spark (the same kernel runs in a Spark task)."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from strata_core.domain.sort_schema import SortSchema
from strata_core.query.predicate import Compare, InList, Like, Or, TextMatch, evaluate_row, to_nnf
from strata_core.query.predicate_json import predicate_to_json
from strata_jobs import merge
from strata_jobs.merge import MergeVerificationError, run_merge
from tests.helpers import examples
from tests.jobs.test_merge import files_under, make_spec, output_tables, sorted_table, write_split
from tests.query_logic.strategies import PREDICATES, ROWS

SCHEMA = pa.schema([("s", pa.string()), ("ts", pa.int64()), ("i", pa.int64()), ("f", pa.float64()),
                    ("t", pa.string())])
SORT = "s,ts"


def _comparable(rows: list[dict]) -> list[tuple]:
    return [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row.values()) for row in rows]


def _rewrite(base: Path, rows: list[dict], predicate, **overrides):
    table = sorted_table(rows, SCHEMA, SortSchema.parse(SORT))
    source = write_split(base / "in", "s0", table)
    spec = make_spec([source], base / "out", SORT, delete_predicate=predicate_to_json(predicate), **overrides)
    return table, run_merge(spec)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(ROWS, max_size=30), predicate=PREDICATES.map(to_nnf),
       target_rows=st.sampled_from([4, 1_000_000]))
def test_dl1_dl2_dl3_rewrite_removes_exactly_the_matching_rows(tmp_path_factory, rows, predicate, target_rows):
    base = tmp_path_factory.mktemp("rewrite")
    table, result = _rewrite(base, rows, predicate, target_split_num_rows=target_rows)
    before = table.to_pylist()
    kept_expected = [row for row in before if not evaluate_row(predicate, row)]
    removed = len(before) - len(kept_expected)
    # DL-1
    assert result.input_rows == len(before)
    assert result.stats["rows_removed"] == removed
    if not removed:  # nothing to drop: the split is left as it is, nothing written
        assert result.unchanged and result.outputs == [] and files_under(base / "out") == []
        return
    assert not result.unchanged
    assert result.output_rows == result.input_rows - removed
    tables = output_tables(result)
    kept = [row for t in tables for row in t.to_pylist()]
    # DL-2: what is left is exactly the rows the predicate does not match (and so no kept row matches)
    assert not any(evaluate_row(predicate, row) for row in kept)
    # DL-3: in their order, and with the file's schema
    assert _comparable(kept) == _comparable(kept_expected)
    assert all(t.schema.names == SCHEMA.names for t in tables)


def test_dl1_a_split_whose_every_row_matches_leaves_no_output(tmp_path):
    rows = [{"s": "a", "ts": n} for n in range(5)]
    _, result = _rewrite(tmp_path, rows, Compare("s", "=", "a"))
    assert result.outputs == [] and result.output_rows == 0 and result.stats["rows_removed"] == 5


def test_a_split_holding_no_matching_row_is_left_unchanged_and_nothing_is_written(tmp_path):
    """Split statistics cover splits without a matching row: their rewrite writes no file and says `unchanged`,
    which is not "every row removed" (no outputs either), and survives the JSON the Spark task ships."""
    rows = [{"s": s, "ts": n} for n, s in enumerate("acegk")]
    table, result = _rewrite(tmp_path, rows, InList("s", ("b", "d")))  # inside the split's [a, k] range
    assert result.unchanged and result.outputs == [] and result.stats["rows_removed"] == 0
    assert result.input_rows == 5 and result.output_rows == 0
    assert files_under(tmp_path / "out") == []
    assert merge.result_from_json(merge.result_to_json(result)).unchanged
    # The same split with one matching row is rewritten as before: not unchanged, one output of the rest.
    _, rewritten = _rewrite(tmp_path / "one", rows, InList("s", ("c", "d")))
    assert not rewritten.unchanged and rewritten.output_rows == 4 and len(rewritten.outputs) == 1
    assert not merge.result_from_json(merge.result_to_json(rewritten)).unchanged
    assert len(files_under(tmp_path / "one" / "out")) == 1


def test_dl2_partition_id_is_the_split_s_own(tmp_path):
    rows = [{"s": "a", "ts": n} for n in range(3)]
    _, other = _rewrite(tmp_path / "other", rows, Compare("partition_id", "=", "tenant-b"))
    _, own = _rewrite(tmp_path / "own", rows, Compare("partition_id", "=", "tenant-a"))
    assert other.stats["rows_removed"] == 0 and own.stats["rows_removed"] == 3


def test_dl2_an_output_that_still_holds_a_matching_row_is_refused_and_deleted(tmp_path, monkeypatch):
    # A drop that forgets to drop: the output-side check evaluates the predicate again and refuses it.
    monkeypatch.setattr(merge.RowDrop, "keep", lambda self, table, matched: table)
    rows = [{"s": "a", "ts": 1}, {"s": "b", "ts": 2}]
    with pytest.raises(MergeVerificationError, match="DL-2"):
        _rewrite(tmp_path, rows, Compare("s", "=", "a"))
    assert files_under(tmp_path / "out") == []


FAULTS = ("lose", "duplicate", "swap", "alter")


def _faulty_keep(fault: str, position: int):
    """RowDrop.keep, then one fault on its kept rows: the kind of slip a filter or a slice could make."""
    keep = merge.RowDrop.keep

    def faulty(self, table: pa.Table, matched) -> pa.Table:
        kept = keep(self, table, matched)
        rows = kept.to_pylist()
        at = position % len(rows)
        if fault == "lose":
            del rows[at]
        elif fault == "duplicate":
            rows.insert(at, rows[at])
        elif fault == "swap":
            rows[at], rows[at - 1] = rows[at - 1], rows[at]
        else:
            rows[at] = {**rows[at], "i": (rows[at]["i"] or 0) + 1000}
        return pa.Table.from_pylist(rows, schema=kept.schema)

    return faulty


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(ROWS, min_size=2, max_size=30, unique_by=lambda r: (r["s"], r["ts"], r["i"])),
       fault=st.sampled_from(FAULTS), position=st.integers(0, 1_000),
       target_rows=st.sampled_from([3, 1_000_000]), readback=st.booleans())
def test_dl1_dl3_a_rewrite_that_loses_duplicates_moves_or_alters_a_kept_row_is_refused(
        tmp_path_factory, rows, fault, position, target_rows, readback):
    """The rewrite's own checks (per-row hashes of every output against the input's kept rows, the rows
    counted) refuse any slip of the drop that a kept row survives, and leave nothing behind."""
    base = tmp_path_factory.mktemp("faulty")
    predicate = Compare("s", "=", "a")  # what is left is what the fault acts on
    # At least one row to drop: a split without a matching row is left unchanged, never filtered.
    rows = [*rows, {"i": 0, "f": None, "s": "a", "t": None, "ts": 0}]
    table = sorted_table(rows, SCHEMA, SortSchema.parse(SORT))
    kept = [r for r in table.to_pylist() if not evaluate_row(predicate, r)]
    if fault == "swap":
        at = position % len(kept) if kept else 0
        assume(len(kept) >= 2 and _comparable([kept[at]]) != _comparable([kept[at - 1]]))
    assume(kept)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(merge.RowDrop, "keep", _faulty_keep(fault, position))
        with pytest.raises(MergeVerificationError, match="DL-1|DL-3|MC-1"):
            _rewrite(base, rows, predicate, target_split_num_rows=target_rows, verify_readback=readback)
    assert files_under(base / "out") == []


def test_dl2_a_removed_row_the_predicate_does_not_match_is_refused(tmp_path, monkeypatch):
    # The first evaluation marks one row too many: the removed rows, evaluated again, betray it.
    matching = merge.RowDrop.matching
    calls = []

    def one_too_many(self, table):
        matched = matching(self, table)
        calls.append(1)
        if len(calls) == 1:
            matched = matched.copy()
            matched[-1] = True
        return matched

    monkeypatch.setattr(merge.RowDrop, "matching", one_too_many)
    rows = [{"s": "a", "ts": 1}, {"s": "b", "ts": 2}]
    with pytest.raises(MergeVerificationError, match="DL-2: a row removed"):
        _rewrite(tmp_path, rows, Compare("s", "=", "a"))
    assert files_under(tmp_path / "out") == []


def test_a_rewrite_has_one_input(tmp_path):
    table = pa.table({"s": ["a"], "ts": [1]})
    inputs = [write_split(tmp_path / "in", name, table) for name in ("x", "y")]
    spec = make_spec(inputs, tmp_path / "out", SORT, delete_predicate=predicate_to_json(Compare("s", "=", "a")))
    with pytest.raises(ValueError, match="exactly one input"):
        run_merge(spec)
    assert pq.read_table(inputs[0].uri.removeprefix("file://")).num_rows == 1


def test_a_rewrite_never_imports_pandas(tmp_path):
    # As the merge: pa.array()/pa.scalar() on Python values import pandas, ~1 s in every fresh Spark worker.
    import subprocess
    import sys

    from strata_jobs.merge import spec_to_json

    table = sorted_table([{"s": "a", "ts": 1, "f": 1.5}, {"s": "b", "ts": 2}], SCHEMA, SortSchema.parse(SORT))
    source = write_split(tmp_path / "in", "s0", table)
    predicate = Or((InList("s", ("a", "z")), Compare("f", ">", 1.0), Like("t", "x%"), TextMatch("t", ("disk",))))
    spec = make_spec([source], tmp_path / "out", SORT, delete_predicate=predicate_to_json(predicate))
    code = ("import sys; from strata_jobs.merge import run_merge, spec_from_json; "
            f"r = run_merge(spec_from_json({spec_to_json(spec)!r})); "
            "print(r.stats['rows_removed'], 'pandas' in sys.modules)")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.split() == ["1", "False"]
