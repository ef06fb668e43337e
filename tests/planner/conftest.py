"""Fixtures of the planner's tests that run merges for real."""

from __future__ import annotations

import pytest

from strata_frame.jobqueue.local_jobs import LocalJobPool


@pytest.fixture
def local_pool():
    """One local job process, as a worker's tiny merges run in."""
    pool = LocalJobPool(1, niceness=5)
    yield pool
    pool.close()
