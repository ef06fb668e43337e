"""Row group ranges from a Parquet footer: a column is absent from a file only when no leaf path lies under it, so a
string list (leaf `tags.list.element`) is never taken for a column of nulls and never prunes a row it holds."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq

from strata_core.query.predicate import IsNull, to_nnf
from strata_core.query.pruning import RangeOracle, may_match
from strata_query.planning.row_group_ranges import absent_columns, ranges_from_footer


def _footer(table: pa.Table) -> pq.FileMetaData:
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=2)
    return pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata


def test_a_string_list_column_is_present():
    metadata = _footer(pa.table({"host": ["a", "b", "c"], "tags": [["x"], ["y", "z"], []],
                                 "tags.list": [1, 2, 3]}))
    assert metadata.schema.column(1).path == "tags.list.element"
    assert absent_columns(metadata, {"host", "tags", "tags.list", "missing", "tag", "tags.list.element.x"}) \
        == {"missing", "tag", "tags.list.element.x"}


def test_a_string_list_column_prunes_no_row_group_it_fills():
    metadata = _footer(pa.table({"tags": [["x"], ["y"], ["z"]]}))
    columns = {"tags"}
    absent = absent_columns(metadata, columns)
    ranges = ranges_from_footer(metadata, columns)
    pred = to_nnf(IsNull("tags", negated=True))
    assert [may_match(pred, RangeOracle(group, absent)) for group in ranges] == [True, True]
