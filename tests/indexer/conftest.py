"""Fixtures of the indexer tests that more than one module uses."""

from tests.indexer.otlp_stack import otlp_stack  # noqa: F401 - a fixture, found by pytest here
