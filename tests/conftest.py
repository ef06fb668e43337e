# Imported here, before any test starts threads: hypothesis's pytest plugin otherwise imports (and so
# assertion-rewrites, i.e. ast-parses) it at the end of the run, which CPython 3.11.7 can fail with "AST
# constructor recursion depth mismatch" when other threads rendered tracebacks meanwhile (cpython gh-106905).
import hypothesis  # noqa: F401

pytest_plugins = ["tests.fixtures.spark", "tests.fixtures.postgres", "tests.fixtures.apps"]
