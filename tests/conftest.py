# Imported here, before any test starts threads: hypothesis's pytest plugin otherwise imports (and so
# assertion-rewrites, i.e. ast-parses) it at the end of the run, which CPython 3.11.7 can fail with "AST
# constructor recursion depth mismatch" when other threads rendered tracebacks meanwhile (cpython gh-106905).
import os

import hypothesis
import pytest

# Property tests state their example counts for the `ci` profile (the default, what `make test` runs); `dev` runs a
# tenth of them for a quick loop, `thorough` ten times as many before a release or after a change to pruning or the
# merge. Chosen with HYPOTHESIS_PROFILE; the counts scale through `tests.helpers.examples`.
hypothesis.settings.register_profile("ci", print_blob=True)
hypothesis.settings.register_profile("dev", max_examples=10)
hypothesis.settings.register_profile("thorough", max_examples=1000, print_blob=True)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Every query-api a test starts, in process or as a child, serves Flight SQL on a free port rather than on 8004,
# which a developer's own `strata up` may hold; a test that needs a known port sets one.
os.environ.setdefault("STRATA_FLIGHT_PORT", "0")

pytest_plugins = ["tests.fixtures.spark", "tests.fixtures.postgres", "tests.fixtures.s3", "tests.fixtures.apps"]

# A test needs a service when its fixtures reach the one that starts it (directly or through an app).
SERVICE_FIXTURES = {"pg_databases": "postgres", "spark_remote": "spark", "s3_server": "s3"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test by the services its fixtures start, so `-m "not postgres and not spark and not s3"` (make
    test-fast) selects exactly the tests that need none, whatever their file declares. A test reaching the S3
    server only through a parameter (`request.getfixturevalue`) carries the mark on that parameter itself."""
    for item in items:
        for fixture, marker in SERVICE_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)
    _longest_files_first(items)


def _longest_files_first(items: list[pytest.Item]) -> None:
    """Files ordered by how long they usually take, longest first (stable within a rank): `make test` hands whole
    files to its workers in this order (`--dist loadfile --no-loadscope-reorder`), so the end-to-end journeys, a
    few minutes each, start at once instead of leaving one worker running them alone at the end."""

    def rank(item: pytest.Item) -> int:
        if "/e2e/" in f"/{item.nodeid}":
            return 0
        return 1 if item.get_closest_marker("spark") else 2

    ranks: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        ranks[path] = min(ranks.get(path, 3), rank(item))
    items.sort(key=lambda item: ranks[item.nodeid.split("::", 1)[0]])
