"""`GET /v1/compaction/summary` and `/v1/indexing/summary`: every status counted, reached through the proxy."""

from __future__ import annotations

import httpx

from tests.fixtures.apps import Keys


def test_summaries_count_every_status(observed_stack, keys: Keys):
    with httpx.Client(base_url=observed_stack.proxy, timeout=30) as client:
        compaction = client.get("/v1/compaction/summary", headers=Keys.header(keys.worker))
        indexing = client.get("/v1/indexing/summary", headers=Keys.header(keys.writer)).json()
        listed = client.get("/v1/indexing/jobs", params={"limit": 1000}, headers=Keys.header(keys.writer)).json()
        refused = client.get("/v1/compaction/summary")
        forbidden = client.get("/v1/indexing/summary", headers=Keys.header(keys.query_acme))
    assert compaction.status_code == 200, compaction.text
    jobs = observed_stack.compaction_jobs
    assert compaction.json() == {"queue": "compaction", "counts": {
        "unassigned": jobs - 3, "in_progress": 1, "success": 1, "excluded": 1, "cancelled": 0}}
    assert indexing["queue"] == "indexing" and indexing["counts"]["in_progress"] == 1
    assert sum(indexing["counts"].values()) == len(listed["jobs"])
    for status, n in indexing["counts"].items():
        assert n == sum(1 for j in listed["jobs"] if j["status"] == status), status
    assert refused.status_code == 401 and refused.headers["content-type"] == "application/problem+json"
    assert forbidden.status_code == 403
