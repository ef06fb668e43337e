"""The storage layout and index uids: the paths written by ingestion, merges and artifact builds are the ones
already in object stores, so they are pinned here; an index uid splits back into what made it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata_core.domain.index_uid import make_index_uid, split_index_uid
from strata_core.domain.wire_types import INDEX_ID_PATTERN, ULID_PATTERN
from strata_core.storage_layout import artifacts_dir, merge_attempt_dir, merges_dir, split_path


def test_layout_paths_are_the_documented_tree():
    assert split_path("m", "01J", "S1") == "indexes/m/01J/splits/S1.parquet"
    assert merges_dir("m", "01J") == "indexes/m/01J/merges"
    assert merge_attempt_dir("m", "01J", "JOB", 7) == "indexes/m/01J/merges/JOB/7"
    assert artifacts_dir("m", "01J") == "indexes/m/01J/artifacts"


@given(st.from_regex(INDEX_ID_PATTERN, fullmatch=True), st.from_regex(ULID_PATTERN, fullmatch=True))
def test_an_index_uid_splits_back_into_its_id_and_incarnation(index_id, incarnation):
    uid = make_index_uid(index_id, incarnation)
    assert uid == f"{index_id}:{incarnation}"
    assert split_index_uid(uid) == (index_id, incarnation)


def test_a_uid_without_separator_is_refused():
    with pytest.raises(ValueError, match="index_id:incarnation"):
        split_index_uid("metrics")
