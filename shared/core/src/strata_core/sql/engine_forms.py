"""One meaning on both engines: the catalog's functions whose engines disagree (or which one engine lacks) are
rewritten by Strata, at parse time, into a neutral form made of arithmetic and a few marker calls; each engine's
SQL then maps the markers to its own functions (`render`).

The neutral forms:
- time buckets (`time_bucket`, `date_bin`) are integer arithmetic on epoch microseconds, floored towards the
  origin: `from_us(d - ((d % w) + w) % w + origin)` with `d = epoch_us(ts) - origin`;
- epochs (`epoch`, `extract(epoch ...)`, `epoch_ms`, `epoch_us`, `to_timestamp`) go through the same two markers;
- `extract` fields whose numbering differs (dow, isodow, second, millisecond, microsecond) are spelled out;
- `now()` / `current_timestamp` is the query's instant, fixed when it is parsed (so pruning sees it too);
- exact percentiles (`quantile_cont`, `percentile_cont ... WITHIN GROUP`, `median`) and `approx_quantile` are one
  marker each; `first`/`last` by an order are `arg_min`/`arg_max`;
- regular expressions keep DuckDB's (RE2) meaning: on Spark (Java) only patterns that mean the same there run,
  and `regexp_extract` names its group.
For Spark, `DISTINCT ON` and `QUALIFY` become a filter on a subquery (sqlglot's own rewrite loses the outer order
and leaks its helper column).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from strata_core.domain.fields import FieldType
from strata_core.sql.errors import QueryValidationError
from strata_core.sql.time_values import VariableInterval, instant_micros, interval_micros
from strata_core.sql.validation import clause_of, written

# Markers: neutral calls each engine spells its own way.
EPOCH_US, FROM_US, EPOCH_SECONDS = "__strata_epoch_us", "__strata_from_us", "__strata_epoch_seconds"
PERCENTILE, APPROX_PERCENTILE = "__strata_percentile", "__strata_approx_percentile"
DOW, ISODOW = "__strata_dow", "__strata_isodow"
# arg_max/arg_min skip rows whose value is NULL (DuckDB's meaning); first/last by an order keep them.
ARG_MAX, ARG_MIN = "__strata_arg_max", "__strata_arg_min"
VALUE_AT_MAX, VALUE_AT_MIN = "__strata_value_at_max", "__strata_value_at_min"
# TimescaleDB's (and DuckDB's) default origin of time_bucket: Monday 2000-01-03T00:00:00Z.
TIME_BUCKET_ORIGIN_US = 946_857_600_000_000
SPARK_APPROX_ACCURACY = 10_000


def _call(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _number(value: int | float | str) -> exp.Literal:
    return exp.Literal.number(str(value))


def _paren(node: exp.Expression) -> exp.Paren:
    return exp.Paren(this=node)


def from_us(micros: exp.Expression) -> exp.Expression:
    return _call(FROM_US, micros)


def epoch_us(instant: exp.Expression) -> exp.Expression:
    return _call(EPOCH_US, instant)


@dataclass(slots=True)
class Neutralizer:
    """Rewrites one validated statement in place. `now_us`: the query's instant. Learns whether the query uses
    `now()` and whether it must run on the local engine (`local_only`, with the reason)."""

    types: dict[str, FieldType]
    now_us: int
    uses_now: bool = False
    local_only: str | None = None

    def run(self, statement: exp.Expression) -> None:
        if any(True for _ in statement.find_all(exp.Join)):
            # A join can multiply rows without bound, and Spark cannot stop a task inside a join's loop (it checks
            # for a kill only between input rows): such a query would hold an executor slot after its time limit,
            # where DuckDB stops it. IN and EXISTS subqueries stay on Spark: their semi-joins emit at most their
            # input rows.
            self.local_only = "a join runs on the local engine, where a query past its time limit is stopped"
        # Deepest first (reversed breadth-first order): an argument is neutral before its call is rewritten.
        for node in reversed(list(statement.walk(bfs=True))):
            replacement = self._rewrite(node)
            if replacement is not None and replacement is not node:
                node.replace(replacement)

    def _rewrite(self, node: exp.Expression) -> exp.Expression | None:
        if isinstance(node, exp.CurrentTimestamp) or (
                isinstance(node, exp.Anonymous) and node.name.lower() in (
                    "now", "get_current_timestamp", "transaction_timestamp")):
            if node.expressions if isinstance(node, exp.Anonymous) else node.this:
                raise QueryValidationError(f"{written(node)} takes no argument", clause_of(node))
            self.uses_now = True
            return exp.UnixToTime(this=_number(self.now_us), scale=exp.UnixToTime.MICROS)
        if isinstance(node, exp.Anonymous):
            handler = _NAMED.get(node.name.lower())
            return handler(self, node) if handler is not None else None
        if isinstance(node, exp.Extract):
            return self._field(node.this.name, node.expression, node)
        if isinstance(node, exp.WithinGroup):
            return self._within_group(node)
        if isinstance(node, exp.First | exp.Last):
            return self._first_last(node)
        if isinstance(node, exp.ArgMax | exp.ArgMin):
            if node.args.get("count") is not None:
                raise QueryValidationError(f"{written(node)}: the form with a count is not supported",
                                           clause_of(node))
            return _call(ARG_MAX if isinstance(node, exp.ArgMax) else ARG_MIN, node.this.copy(),
                         node.expression.copy())
        if isinstance(node, exp.RegexpLike | exp.RegexpExtract | exp.RegexpReplace):
            return self._regexp(node)
        return None

    # --- time
    def _bucket(self, node: exp.Anonymous) -> exp.Expression:
        name = node.name.lower()
        args = node.expressions
        if len(args) not in (2, 3):
            raise QueryValidationError(f"{name}(width, ts [, origin]) takes two or three arguments",
                                       clause_of(node))
        width_us = self._interval(args[0], node, f"{name}'s width")
        if width_us <= 0:
            raise QueryValidationError(f"{name}'s width must be positive", clause_of(node))
        origin_us = TIME_BUCKET_ORIGIN_US if name == "time_bucket" else 0
        if len(args) == 3:
            instant = instant_micros(args[2])
            if instant is not None:
                origin_us = instant
            else:
                origin_us += self._interval(args[2], node, f"{name}'s origin (an instant) or offset (an interval)")
        self._require_instant(args[1], node, f"{name}'s second argument")
        since = exp.Sub(this=epoch_us(args[1].copy()), expression=_number(origin_us))
        floor_offset = exp.Mod(this=_paren(exp.Add(this=_paren(exp.Mod(this=_paren(since.copy()),
                                                                          expression=_number(width_us))),
                                                     expression=_number(width_us))),
                               expression=_number(width_us))
        bucket = exp.Add(this=exp.Sub(this=_paren(since), expression=_paren(floor_offset)),
                         expression=_number(origin_us))
        return from_us(bucket)

    def _interval(self, node: exp.Expression, call: exp.Expression, what: str) -> int:
        try:
            micros = interval_micros(node)
        except VariableInterval as error:
            raise QueryValidationError(f"{what}: {error}; use date_trunc('month', ts) or date_trunc('year', ts)",
                                       clause_of(call)) from error
        if micros is None:
            raise QueryValidationError(f"{what} must be a constant interval such as INTERVAL '5 minutes', not "
                                       f"{written(node)}", clause_of(call))
        return micros

    def _require_instant(self, node: exp.Expression, call: exp.Expression, what: str) -> None:
        if self.kind_of(node) != "timestamp":
            raise QueryValidationError(f"{what} must be a timestamp, not {written(node)}", clause_of(call))

    def kind_of(self, node: exp.Expression) -> str:
        """'timestamp', 'number' or 'other': enough typing to pick an epoch function's meaning."""
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Column):
            field = self.types.get(node.name)
            if field is FieldType.TIMESTAMP:
                return "timestamp"
            if field in (FieldType.I64, FieldType.U64, FieldType.F64):
                return "number"
            return "other"
        if isinstance(node, exp.Anonymous) and node.name == EPOCH_SECONDS:
            return "number"
        if isinstance(node, exp.Anonymous) and node.name == FROM_US or isinstance(
                node, exp.UnixToTime | exp.TimestampTrunc | exp.DateTrunc):
            return "timestamp"
        if isinstance(node, exp.Cast):
            return "timestamp" if node.to.is_type(*exp.DataType.TEMPORAL_TYPES) else (
                "number" if node.to.is_type(*exp.DataType.NUMERIC_TYPES) else "other")
        if isinstance(node, exp.Literal):
            return "other" if node.is_string else "number"
        if isinstance(node, exp.Add | exp.Sub):
            left, right = self.kind_of(node.this), self.kind_of(node.expression)
            if "timestamp" in (left, right) and isinstance(node.expression, exp.Interval | exp.Literal):
                return "timestamp"
            return "number" if left == right == "number" else "other"
        if isinstance(node, exp.Mul | exp.Div | exp.IntDiv | exp.Mod | exp.Neg | exp.Floor | exp.Ceil | exp.Round
                      | exp.Abs | exp.Count | exp.Sum | exp.Avg):
            return "number"
        if isinstance(node, exp.Min | exp.Max | exp.Coalesce):
            return self.kind_of(node.this)
        return "other"

    def _field(self, field: str, instant: exp.Expression, node: exp.Expression) -> exp.Expression:
        field = field.lower()
        self._require_instant(instant, node, f"extract({field} ...)'s argument")
        arg = instant.copy()
        if field == "epoch":
            return _call(EPOCH_SECONDS, arg)
        if field in ("year", "quarter", "month", "day", "hour", "minute"):
            return exp.Extract(this=exp.var(field.upper()), expression=arg)
        simple = {"second": "second", "week": "weekofyear", "doy": "dayofyear", "dayofyear": "dayofyear",
                  "dow": DOW, "dayofweek": DOW, "isodow": ISODOW}
        if field in simple:
            return _call(simple[field], arg)
        if field in ("millisecond", "milliseconds", "microsecond", "microseconds"):
            within_minute = exp.Mod(this=epoch_us(arg), expression=_number(60_000_000))
            if field.startswith("micro"):
                return within_minute
            return exp.IntDiv(this=_paren(within_minute), expression=_number(1000))
        raise QueryValidationError(f"extract field {field!r} is not supported: use epoch, year, quarter, month, "
                                   "week, day, dow, isodow, doy, hour, minute, second, millisecond or microsecond",
                                   clause_of(node))

    def _date_part(self, node: exp.Anonymous) -> exp.Expression:
        args = node.expressions
        if len(args) != 2 or not (isinstance(args[0], exp.Literal) and args[0].is_string):
            raise QueryValidationError("date_part('field', ts) takes a field name and a timestamp", clause_of(node))
        return self._field(args[0].this, args[1], node)

    def _epoch(self, node: exp.Anonymous) -> exp.Expression:
        name, args = node.name.lower(), node.expressions
        if len(args) != 1:
            raise QueryValidationError(f"{name}() takes one argument", clause_of(node))
        arg = args[0].copy()
        kind = self.kind_of(arg)
        if name == "epoch":
            return self._field("epoch", arg, node)
        if name == "to_timestamp":
            if kind != "number":
                raise QueryValidationError(f"to_timestamp() takes a number of seconds, not {written(arg)}",
                                           clause_of(node))
            if isinstance(args[0], exp.Column) and self.types.get(args[0].name) in (FieldType.I64, FieldType.U64):
                return from_us(exp.Mul(this=arg, expression=_number(1_000_000)))
            return from_us(exp.Cast(this=exp.Round(this=exp.Mul(this=arg, expression=_number(1_000_000))),
                                    to=exp.DataType.build("BIGINT")))
        scale = 1000 if name == "epoch_ms" else 1
        if kind == "timestamp":
            if scale == 1:
                return epoch_us(arg)
            # DuckDB rounds to the nearest millisecond, half away from zero (Spark's unix_millis truncates).
            return exp.Cast(this=exp.Round(this=exp.Div(this=epoch_us(arg), expression=_number("1000.0"))),
                            to=exp.DataType.build("BIGINT"))
        if kind == "number" and name == "epoch_ms":
            return from_us(exp.Mul(this=arg, expression=_number(1000)))
        raise QueryValidationError(f"{name}() takes a timestamp{' or a number of milliseconds' if scale > 1 else ''}"
                                   f", not {written(arg)}", clause_of(node))

    # --- aggregates
    def _percentile(self, node: exp.Anonymous) -> exp.Expression:
        name, args = node.name.lower(), node.expressions
        if name == "median":
            if len(args) != 1:
                raise QueryValidationError("median(x) takes one argument", clause_of(node))
            return _call(PERCENTILE, args[0].copy(), _number("0.5"))
        if len(args) != 2:
            raise QueryValidationError(f"{name}(x, q) takes a value and a fraction", clause_of(node))
        fraction = self._fraction(args[1], node, name)
        return _call(APPROX_PERCENTILE if name == "approx_quantile" else PERCENTILE, args[0].copy(),
                     _number(fraction))

    def _fraction(self, node: exp.Expression, call: exp.Expression, name: str) -> str:
        if not (isinstance(node, exp.Literal) and not node.is_string) or not 0 <= float(node.this) <= 1:
            raise QueryValidationError(f"{name}'s fraction must be a number between 0 and 1, not {written(node)}",
                                       clause_of(call))
        return node.this

    def _within_group(self, node: exp.WithinGroup) -> exp.Expression:
        inner, order = node.this, node.expression
        if not isinstance(inner, exp.PercentileCont) or not isinstance(order, exp.Order) \
                or len(order.expressions) != 1:
            raise QueryValidationError(f"{written(node)} is not supported: use percentile_cont(q) WITHIN GROUP "
                                       "(ORDER BY x)", clause_of(node))
        fraction = float(self._fraction(inner.this, node, "percentile_cont"))
        ordered = order.expressions[0]
        if ordered.args.get("desc"):
            fraction = 1 - fraction
        return _call(PERCENTILE, ordered.this.copy(), _number(repr(fraction)))

    def _first_last(self, node: exp.First | exp.Last) -> exp.Expression:
        order = node.this
        name = "first" if isinstance(node, exp.First) else "last"
        if not isinstance(order, exp.Order) or len(order.expressions) != 1:
            raise QueryValidationError(f"{name}() needs its order, with one key: {name}(x ORDER BY ts)",
                                       clause_of(node))
        ordered = order.expressions[0]
        smallest = (name == "first") != bool(ordered.args.get("desc"))
        value, key = order.this.copy(), ordered.this.copy()
        return _call(VALUE_AT_MIN if smallest else VALUE_AT_MAX, value, key)

    # --- regular expressions
    def _regexp(self, node: exp.Expression) -> exp.Expression | None:
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            self.local_only = self.local_only or f"{written(node)} has a pattern that is not a literal"
        elif not java_compatible(pattern.this):
            self.local_only = self.local_only or (
                f"regular expression {pattern.this!r} may mean something else, or backtrack, in Spark's Java "
                "regular expressions")
        if isinstance(node, exp.RegexpLike) and node.args.get("flag"):
            raise QueryValidationError("regexp_matches' options are not supported: use (?i) in the pattern",
                                       clause_of(node))
        if isinstance(node, exp.RegexpExtract) and node.args.get("group") is None:
            node.set("group", _number(0))
        if isinstance(node, exp.RegexpReplace):
            modifiers = node.args.get("modifiers")
            if modifiers is not None and not (isinstance(modifiers, exp.Literal) and modifiers.this in ("g", "")):
                raise QueryValidationError("regexp_replace's options: only 'g' (every match) is supported",
                                           clause_of(node))
            replacement = node.args.get("replacement")
            if not (isinstance(replacement, exp.Literal) and replacement.is_string):
                self.local_only = self.local_only or f"{written(node)} has a replacement that is not a literal"
            if modifiers is None or modifiers.this != "g":
                self.local_only = self.local_only or (
                    f"{written(node)} replaces the first match only, which Spark cannot: add the 'g' option")
        return None


_NAMED: dict[str, Callable[[Neutralizer, exp.Anonymous], exp.Expression | None]] = {
    "time_bucket": Neutralizer._bucket, "date_bin": Neutralizer._bucket,
    "date_part": Neutralizer._date_part, "datepart": Neutralizer._date_part,
    "epoch": Neutralizer._epoch, "epoch_ms": Neutralizer._epoch, "epoch_us": Neutralizer._epoch,
    "to_timestamp": Neutralizer._epoch,
    "quantile_cont": Neutralizer._percentile, "quantile": Neutralizer._percentile,
    "median": Neutralizer._percentile, "approx_quantile": Neutralizer._percentile,
}

# RE2 and Java agree on these: literal characters, the escapes below, classes without nesting or intersection,
# groups (plain, non-capturing, named as (?P<...>) is refused), alternation, anchors and quantifiers.
_JAVA_SAFE_ESCAPES = set("dDwWsSbB.\\^$|?*+()[]{}-/ntrf") | {"'"}


# A quantified group holding a quantifier ((a+)+, (a|aa)*): RE2 runs it in linear time, Java's backtracking
# engine in exponential time on a near miss, so it runs where RE2 does.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}?](?:[^()\\]|\\.)*\)[+*{]|\((?:[^()]*\|[^()]*)\)[+*{]")


def java_compatible(pattern: str) -> bool:
    """Whether the RE2 `pattern` means the same to Java's regex engine, and runs there without backtracking
    blow-ups."""
    if _NESTED_QUANTIFIER.search(pattern):
        return False
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            if index + 1 >= len(pattern) or pattern[index + 1] not in _JAVA_SAFE_ESCAPES:
                return False
            index += 2
            continue
        if in_class:
            if char == "[" or pattern.startswith("&&", index):
                return False
            if char == "]":
                in_class = False
        elif char == "[":
            in_class = True
            if pattern.startswith("[^]", index) or pattern.startswith("[]", index):
                return False
        elif char == "(" and pattern.startswith("(?", index) and not pattern.startswith("(?:", index) \
                and not pattern.startswith("(?i)", index):
            return False
        elif char in "+*?}" and index + 1 < len(pattern) and pattern[index + 1] == "+":
            return False  # possessive in Java, an error in RE2
        index += 1
    return not in_class


# --- rendering
def _duckdb_from_us(args: list[exp.Expression]) -> exp.Expression:
    return exp.Cast(this=_call("make_timestamp", *args), to=exp.DataType.build("TIMESTAMPTZ"))


def _non_null_key(args: list[exp.Expression]) -> exp.Expression:
    """The ordering key where the value is not NULL, else NULL (Spark's max_by/min_by skip NULL keys)."""
    value, key = args
    return exp.Case(ifs=[exp.If(this=exp.Not(this=exp.Is(this=value.copy(), expression=exp.Null())),
                                true=key)])


_DUCKDB: dict[str, Callable[[list[exp.Expression]], exp.Expression]] = {
    ARG_MAX: lambda a: _call("arg_max", *a),
    ARG_MIN: lambda a: _call("arg_min", *a),
    VALUE_AT_MAX: lambda a: _call("arg_max_null", *a),
    VALUE_AT_MIN: lambda a: _call("arg_min_null", *a),
    EPOCH_US: lambda a: _call("epoch_us", *a),
    EPOCH_SECONDS: lambda a: _call("epoch", *a),
    FROM_US: _duckdb_from_us,
    PERCENTILE: lambda a: _call("quantile_cont", *a),
    APPROX_PERCENTILE: lambda a: _call("approx_quantile", *a),
    DOW: lambda a: _call("dayofweek", *a),
    ISODOW: lambda a: _call("isodow", *a),
}
_SPARK: dict[str, Callable[[list[exp.Expression]], exp.Expression]] = {
    ARG_MAX: lambda a: _call("max_by", a[0], _non_null_key(a)),
    ARG_MIN: lambda a: _call("min_by", a[0], _non_null_key(a)),
    VALUE_AT_MAX: lambda a: _call("max_by", *a),
    VALUE_AT_MIN: lambda a: _call("min_by", *a),
    EPOCH_US: lambda a: _call("unix_micros", *a),
    # Within the last bit of DuckDB's epoch(), which computes it its own way.
    EPOCH_SECONDS: lambda a: exp.Div(this=exp.Cast(this=_call("unix_micros", *a),
                                                   to=exp.DataType.build("DOUBLE")),
                                     expression=_number("1000000.0")),
    FROM_US: lambda a: _call("timestamp_micros", *a),
    PERCENTILE: lambda a: _call("percentile", *a),
    APPROX_PERCENTILE: lambda a: _call("percentile_approx", *a, _number(SPARK_APPROX_ACCURACY)),
    DOW: lambda a: exp.Sub(this=_call("dayofweek", *a), expression=_number(1)),
    ISODOW: lambda a: exp.Add(this=_call("weekday", *a), expression=_number(1)),
}


def spell_markers(statement: exp.Expression, dialect: str) -> None:
    """Each marker call as the engine's own function, in place."""
    table = _DUCKDB if dialect == "duckdb" else _SPARK
    for node in reversed(list(statement.find_all(exp.Anonymous, bfs=True))):
        build = table.get(node.name)
        if build is not None:
            node.replace(build([a.copy() for a in node.expressions]))
    if dialect == "spark":
        # DuckDB rounds a number cast to an integer type, Spark truncates it. DuckDB rounds a double's
        # ties to even (bround) and a decimal's away from zero (round); a decimal is a literal or a cast.
        for node in list(statement.find_all(exp.Cast)):
            if node.to.is_type(*exp.DataType.INTEGER_TYPES) and not _rounded(node.this):
                operand = node.this.copy()
                node.set("this", exp.Round(this=operand) if _is_decimal(operand)
                         else exp.Anonymous(this="BROUND", expressions=[operand]))
        for node in list(statement.find_all(exp.RegexpReplace)):
            replacement = node.args.get("replacement")
            if isinstance(replacement, exp.Literal) and replacement.is_string:
                node.set("replacement", exp.Literal.string(_java_replacement(replacement.this)))
            node.set("modifiers", None)


def _rounded(node: exp.Expression) -> bool:
    return isinstance(node, exp.Round) or (isinstance(node, exp.Anonymous) and node.name.upper() == "BROUND")


def _is_decimal(node: exp.Expression) -> bool:
    while isinstance(node, exp.Paren | exp.Neg):
        node = node.this
    if isinstance(node, exp.Literal):
        return not node.is_string
    return isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.DECIMAL)


def _java_replacement(text: str) -> str:
    r"""RE2's replacement (\1 for a group, \\ for a backslash) as Java's ($1, \$ for a dollar)."""
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            following = text[index + 1]
            out.append(f"${following}" if following.isdigit() else re.escape(following) if following in "\\$"
                       else following)
            index += 2
            continue
        out.append("\\$" if char == "$" else char)
        index += 1
    return "".join(out)
