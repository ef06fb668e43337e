"""Fixtures shared by the query tests."""

from __future__ import annotations

import pytest

from strata_services.sample_data import metrics_index_config
from tests.helpers import unique_index_id


@pytest.fixture
async def index_id(indexer, keys) -> str:
    """A new metrics index with messages, whose default lookback (three days) covers every row the tests write."""
    index_id = unique_index_id("kept")
    config = metrics_index_config(index_id, messages=True, query={"default_lookback_secs": 3 * 86400})
    response = await indexer.post("/v1/indexes", json=config, headers=keys.header(keys.admin))
    assert response.status_code == 201, response.text
    return index_id
