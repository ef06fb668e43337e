"""A delete's condition goes through the query SQL front (`strata_core.sql.delete_where`): the same names,
literals and NNF as a query's WHERE, positions counted in the condition itself, and anything a delete could not
apply exactly row by row refused."""

from __future__ import annotations

import pytest

from strata_core.domain.index_config import IndexSettings
from strata_core.query.predicate import Compare, InList, IsNull, Or, describe
from strata_core.sql.delete_where import DeleteConditionError, parse_delete_where
from strata_core.sql.errors import QuerySyntaxError, QueryValidationError
from strata_services.sample_data import metrics_index_config

SETTINGS = IndexSettings.model_validate({k: v for k, v in metrics_index_config("logs").items() if k != "index_id"})


def parse(where: str):
    return parse_delete_where(where, index_id="logs", settings=SETTINGS)


def test_the_condition_means_what_it_means_in_a_query():
    assert parse("NOT (Service != 'api' AND host IS NOT NULL)") == Or((Compare("service", "=", "api"),
                                                                        IsNull("host")))
    assert parse("partition_id IN ('acme')") == InList("partition_id", ("acme",))
    assert describe(parse("value BETWEEN 1 AND 2")) == "(value >= 1.0 AND value <= 2.0)"


@pytest.mark.parametrize(("where", "line", "column"), [
    ("service = 'a' AND (", 1, 19),
    ("service =\n  'unterminated", 2, 3),
    ("service = = 'a'", 1, 11),
])
def test_a_syntax_error_points_into_the_condition(where, line, column):
    with pytest.raises(QuerySyntaxError) as error:
        parse(where)
    assert (error.value.line, error.value.column) == (line, column)
    assert error.value.errors[0]["field"] == "where"


@pytest.mark.parametrize(("where", "kind", "field"), [
    ("", DeleteConditionError, "where"),
    ("value + 1 > 3", DeleteConditionError, "where"),
    ("lower(service) = 'api'", DeleteConditionError, "where"),
    ("service = 'a' ORDER BY host", DeleteConditionError, "where"),
    ("service = 'a' LIMIT 1", DeleteConditionError, "where"),
    ("service = 'a'; SELECT 1", DeleteConditionError, "where"),
    ("nope = 1", QueryValidationError, "nope"),
    ("count(*) > 1", QueryValidationError, "where"),
    ("service = (SELECT 1)", QueryValidationError, "where"),
])
def test_what_a_delete_cannot_apply_exactly_is_refused(where, kind, field):
    with pytest.raises(kind) as error:
        parse(where)
    assert error.value.errors[0]["field"] == field
