"""Facts about a split file taken from its Parquet footer alone (registration of files written elsewhere)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from strata_shared.domain.column_stats import ColumnStats, merge_column_stats, value_type_of


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
    for field in schema:
        value_type = value_type_of(field.type)
        position = leaf_index.get(field.name)
        if value_type is None or position is None:
            continue
        parts: list[ColumnStats] = []
        for group_index in range(footer.num_row_groups):
            group = footer.row_group(group_index)
            column = group.column(position)
            st = column.statistics
            if st is None or not st.has_null_count:
                parts = []
                break
            if st.null_count == group.num_rows:
                parts.append(ColumnStats(field.name, "null", None, None, st.null_count))
                continue
            if not st.has_min_max:
                parts = []
                break
            parts.append(ColumnStats(field.name, value_type, _plain(st.min, field.type), _plain(st.max, field.type),
                                     st.null_count))
        if parts:
            stats[field.name] = merge_column_stats(parts)
    return stats
