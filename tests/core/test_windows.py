"""Pure window arithmetic: TW-2 validation and TW-1 assignment, boundaries included."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata_core.domain.windows import (
    VALID_WINDOW_DURATIONS_SECS,
    is_window_closed,
    validate_window_duration,
    window_start,
    window_starts,
)


@pytest.mark.parametrize("duration", VALID_WINDOW_DURATIONS_SECS)
def test_tw2_every_valid_duration_divides_an_hour(duration):
    validate_window_duration(duration)
    assert 3600 % duration == 0


@pytest.mark.parametrize("duration", [0, 1, 59, 90, 420, 7200, -900])
def test_tw2_other_durations_are_refused(duration):
    with pytest.raises(ValueError, match="does not divide one hour"):
        validate_window_duration(duration)


def test_tw1_boundaries_belong_to_the_window_they_start():
    assert window_start(900, 900) == 900
    assert window_start(899, 900) == 0
    assert window_start(1799, 900) == 900
    assert window_start(-1, 900) == -900


@given(st.lists(st.one_of(st.none(), st.integers(-(2**40), 2**40)), max_size=200),
       st.sampled_from(VALID_WINDOW_DURATIONS_SECS))
def test_tw1_vectorized_assignment_matches_scalar(timestamps, duration):
    starts = window_starts(pa.array(timestamps, pa.int64()), duration)
    for ts, start in zip(timestamps, starts, strict=True):
        if ts is None:
            assert start == 0
        else:
            assert start == window_start(ts, duration)
            assert start <= ts < start + duration


def test_window_closes_after_end_plus_late_window():
    assert not is_window_closed(0, 900, 3600, 4499)
    assert is_window_closed(0, 900, 3600, 4500)
