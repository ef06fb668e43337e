"""How Strata reads SQL: PostgreSQL-flavoured SQL as DuckDB reads it, with the time-series spellings users bring
from TimescaleDB (`time_bucket`) and InfluxDB 3 / DataFusion (`date_bin`).

sqlglot's DuckDB dialect parses the text. The functions whose meaning Strata itself defines for both engines
(`ENGINE_NEUTRAL` in catalog.py: time buckets, epochs, `now()`, percentiles) are kept as named calls instead of
being mapped to sqlglot's generic expressions, whose Spark rendering differs from DuckDB's answer (sqlglot renders
`date_bin` as a function Spark does not have, `epoch_ms(ts)` as `timestamp_millis(ts)`, and drops
`regexp_extract`'s group). engine_forms.py turns each named call into the form each engine runs.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB

# Functions parsed as plain named calls, to be translated by Strata (engine_forms.py) rather than by sqlglot.
OWNED_FUNCTIONS = (
    "time_bucket", "date_bin", "date_part", "datepart", "epoch", "epoch_ms", "epoch_us", "to_timestamp", "now",
    "get_current_timestamp", "transaction_timestamp", "quantile_cont", "quantile", "median", "approx_quantile",
)


def _named(name: str):
    def build(args: list[exp.Expression]) -> exp.Expression:
        return exp.Anonymous(this=name, expressions=args)
    return build


class StrataSQL(DuckDB):
    """The dialect queries and delete conditions are read in."""

    class Parser(DuckDB.Parser):
        FUNCTIONS = {**DuckDB.Parser.FUNCTIONS, **{name.upper(): _named(name) for name in OWNED_FUNCTIONS}}
        FUNCTION_PARSERS = {name: parser for name, parser in DuckDB.Parser.FUNCTION_PARSERS.items()
                            if name.lower() not in OWNED_FUNCTIONS}


READ_DIALECT = StrataSQL
