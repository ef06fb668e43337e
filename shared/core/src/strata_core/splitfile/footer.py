"""Facts about a split file taken from its Parquet footer alone (registration of files written elsewhere)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from strata_core.domain.column_stats import ColumnStats, value_type_of


def _plain(value: object, arrow_type: pa.DataType) -> object:
    if pa.types.is_timestamp(arrow_type):
        micros = pa.scalar(value, type=arrow_type).cast(pa.timestamp("us", tz=arrow_type.tz))
        return int(micros.cast(pa.int64()).as_py())
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, bool):
        return int(value)
    return value


def footer_column_stats(footer: pq.FileMetaData, schema: pa.Schema) -> dict[str, ColumnStats]:
    """Per-column min/max/null count from row-group statistics; a column lacking them in any row group is left
    out, since a partial min/max would let a query prune rows that exist."""
    stats: dict[str, ColumnStats] = {}
    leaf_index = {footer.schema.column(i).path: i for i in range(footer.num_columns)}
    groups = [footer.row_group(g) for g in range(footer.num_row_groups)]
    for field in schema:
        value_type = value_type_of(field.type)
        position = leaf_index.get(field.name)
        if value_type is None or position is None:
            continue
        low = high = None
        nulls = 0
        complete = True
        for group in groups:
            st = group.column(position).statistics
            if st is None or not st.has_null_count:
                complete = False
                break
            nulls += st.null_count
            if st.null_count == group.num_rows:
                continue  # an all-null row group says nothing about min/max
            if not st.has_min_max:
                complete = False
                break
            group_low, group_high = _plain(st.min, field.type), _plain(st.max, field.type)
            low = group_low if low is None or group_low < low else low
            high = group_high if high is None or group_high > high else high
        if not complete or not groups:
            continue
        stats[field.name] = (ColumnStats(field.name, "null", None, None, nulls) if low is None
                             else ColumnStats(field.name, value_type, low, high, nulls))
    return stats
