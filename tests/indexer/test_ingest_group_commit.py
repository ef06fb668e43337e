"""Group commit of ingest requests against real PostgreSQL and storage: concurrent requests of one scope become
fewer splits holding exactly the union of their rows (each split one window, TW-1, and sorted, MC-3), each answer
counts its own rows; a bad body is refused alone; a failed write (storage or PostgreSQL) fails its whole group
and publishes nothing; two tenants never share a split (CS-1); turned off, every request is its own split.

The first write of a test is held at the storage until the requests meant to join the next group wait for it, so
what forms a group does not depend on timing."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from asgi_lifespan import LifespanManager

from strata_core.domain.sort_key import is_sorted
from strata_core.domain.sort_schema import SortSchema
from strata_core.storage_layout import COMMIT_LOG_DIR
from strata_indexer.services import indexer_services_of
from strata_metastore import publish_splits
from strata_metastore.engine import database_unavailable
from strata_metastore.plain_writes import PlainTransaction
from strata_metastore.repositories import SplitRepository
from strata_services.sample_data import metrics_index_config
from tests.helpers import ARROW, NDJSON, arrow_stream, assert_problem, ndjson, unique_index_id

SORT = SortSchema.parse(metrics_index_config("x")["sort_schema"])


async def _create(client, keys) -> str:
    index_id = unique_index_id()
    response = await client.post("/v1/indexes", json=metrics_index_config(index_id), headers=keys.header(keys.admin))
    assert response.status_code == 201, response.text
    return index_id


def _window(back: int = 0) -> int:
    now = int(time.time())
    return now - now % 900 - back * 900


def _rows(n: int, ts: int | None, host: str, **extra: Any) -> list[dict[str, Any]]:
    return [{"metric_name": f"m{i % 3}", "service": "api", "host": host,
             "timestamp_secs": None if ts is None else ts + (i * 7) % 900, "value": float(i), **extra}
            for i in range(n)]


async def _ingest(client, keys, index_id: str, body: bytes, content_type: str = NDJSON, key: str | None = None,
                  **params) -> httpx.Response:
    headers = {**keys.header(key or keys.writer), "Content-Type": content_type}
    return await client.post(f"/v1/indexes/{index_id}/ingest", content=body, headers=headers, params=params)


async def _splits(client, keys, index_id: str, state: str = "published") -> list[dict[str, Any]]:
    response = await client.get(f"/v1/indexes/{index_id}/splits", params={"state": state, "limit": 1000},
                                headers=keys.header(keys.admin))
    assert response.status_code == 200, response.text
    return response.json()["splits"]


def _stored_rows(storage, splits: list[dict[str, Any]]) -> Counter:
    rows: Counter = Counter()
    for split in splits:
        table = pq.read_table(storage.open_input(split["uri"]))
        assert table.num_rows == split["num_rows"]
        assert is_sorted(table, SORT), "MC-3"
        starts = {0 if t is None else t - t % 900 for t in table.column("timestamp_secs").to_pylist()}
        assert starts == {split["window_start"]}, "TW-1"
        rows.update(_key(row) for row in table.to_pylist())
    return rows


def _key(row: dict[str, Any]) -> tuple:
    return tuple(row.get(name) for name in ("metric_name", "service", "host", "timestamp_secs", "value"))


class HeldStorage:
    """Holds the app's first split upload until released; later uploads fail when `fail_after_first`. Commit log
    entries pass (they are not uploads of the group's data; a refused one is only logged, CL-2)."""

    def __init__(self, monkeypatch, app, *, fail_after_first: bool = False) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.committer = indexer_services_of(app).ingest.committer
        storage = app.state.strata.storage
        real = storage.write_bytes
        calls = itertools.count()

        def write_bytes(uri: str, data: bytes) -> None:
            if COMMIT_LOG_DIR in uri:
                return real(uri, data)
            if next(calls) == 0:
                self.entered.set()
                self.release.wait(60)
            elif fail_after_first:
                raise OSError("storage went away")
            return real(uri, data)

        monkeypatch.setattr(storage, "write_bytes", write_bytes)

    async def held(self) -> None:
        assert await asyncio.to_thread(self.entered.wait, 30), "the first commit never reached storage"

    async def release_when_waiting(self, requests: int) -> None:
        try:
            async with asyncio.timeout(30):
                while self.committer.waiting() < requests:
                    await asyncio.sleep(0.005)
        finally:
            self.release.set()


async def _hold_first(client, keys, index_id: str, held: HeldStorage, **params) -> asyncio.Task:
    """One request of a single window, its commit held at the storage: what the next requests queue behind."""
    leader = asyncio.create_task(_ingest(client, keys, index_id, ndjson(_rows(5, _window(), "leader")), **params))
    await held.held()
    return leader


async def test_concurrent_requests_become_one_split_per_window_holding_exactly_their_rows(indexer, keys, storage,
                                                                                           monkeypatch):
    index_id = await _create(indexer, keys)
    held = HeldStorage(monkeypatch, indexer.app)
    leader = await _hold_first(indexer, keys, index_id, held)

    late = _window(back=8)  # older than the late-data window (3600 s)
    bodies = [
        (ndjson(_rows(40, _window(), "h1")), NDJSON),
        (ndjson(_rows(30, _window(back=1), "h2") + _rows(3, late, "h2")), NDJSON),
        # Lacks service and value: its columns are nulls in the shared split.
        (ndjson([{"metric_name": "m9", "host": "h3", "timestamp_secs": _window() + i} for i in range(7)]), NDJSON),
        (ndjson(_rows(4, None, "h4") + _rows(6, _window(), "h4")), NDJSON),
        (arrow_stream(pa.Table.from_pylist(_rows(25, _window(back=1), "h5"))), ARROW),
        (ndjson(_rows(2, late, "h6")), NDJSON),
    ]
    followers = [asyncio.create_task(_ingest(indexer, keys, index_id, body, kind)) for body, kind in bodies]
    await held.release_when_waiting(len(bodies) - 1)  # the last one, all late, has nothing to commit
    answers = [await leader] + [await f for f in followers]
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    first, *rest = [a.json() for a in answers]

    expected = [(40, 40, 0, 0), (33, 30, 3, 0), (7, 7, 0, 0), (10, 10, 0, 4), (25, 25, 0, 0), (2, 0, 2, 0)]
    assert [(a["rows_received"], a["rows_written"], a["rows_dropped_late"], a["rows_null_timestamp"])
            for a in rest] == expected
    published = await _splits(indexer, keys, index_id)
    by_id = {s["split_id"]: s for s in published}
    # The leader alone, then the six others together: windows 0 (null timestamps), previous and current.
    assert len(published) == 1 + 3 < len(answers)
    assert len(set(itertools.chain.from_iterable(a["split_ids"] for a in rest))) == 3
    for answer in (first, *rest):
        assert set(answer["split_ids"]) <= by_id.keys()
        assert sum(s["rows_of_request"] for s in answer["splits"]) == answer["rows_written"]
        for split in answer["splits"]:
            assert split["num_rows"] == by_id[split["split_id"]]["num_rows"] >= split["rows_of_request"]
    assert rest[-1]["splits"] == []
    assert {s["window_start"] for s in rest[3]["splits"]} == {0, _window()}

    sent: Counter = Counter(_key(r) for r in _rows(5, _window(), "leader"))
    for body, _ in bodies:
        if body.startswith(b"{"):
            rows = [json.loads(line) for line in body.splitlines()]
        else:
            rows = pa.ipc.open_stream(body).read_all().to_pylist()
        sent.update(_key(r) for r in rows if r["timestamp_secs"] is None or r["timestamp_secs"] >= _window(back=4))
    assert _stored_rows(storage, published) == sent
    assert await _splits(indexer, keys, index_id, "staged") == []
    metrics = (await indexer.get("/metrics")).text
    assert "strata_ingest_group_requests_bucket" in metrics


async def test_a_bad_body_among_concurrent_good_ones_is_refused_alone(indexer, keys, storage, monkeypatch):
    index_id = await _create(indexer, keys)
    held = HeldStorage(monkeypatch, indexer.app)
    leader = await _hold_first(indexer, keys, index_id, held)
    good = [ndjson(_rows(10, _window(), f"g{i}")) for i in range(4)]
    bodies = [good[0], good[1], b'{"metric_name": "a"}\n{"metric_name": 7}\n', good[2], good[3]]
    requests = [asyncio.create_task(_ingest(indexer, keys, index_id, body)) for body in bodies]
    await held.release_when_waiting(len(good))
    answers = [await r for r in requests]
    assert (await leader).status_code == 200

    bad = assert_problem(answers[2], 400, "bad-request")
    assert "line 2" in bad["detail"]
    oks = [a.json() for i, a in enumerate(answers) if i != 2]
    assert all(a.status_code == 200 for i, a in enumerate(answers) if i != 2)
    assert len({a["split_ids"][0] for a in oks}) == 1, "the good ones share one split"
    assert [a["rows_written"] for a in oks] == [10] * 4
    published = await _splits(indexer, keys, index_id)
    assert sorted(s["num_rows"] for s in published) == [5, 40]


@pytest.mark.parametrize("failing", ["storage", "postgres"])
async def test_a_failed_write_fails_the_whole_group_with_one_problem_and_publishes_nothing_of_it(indexer, keys,
                                                                                                 storage, monkeypatch,
                                                                                                 failing):
    index_id = await _create(indexer, keys)
    held = HeldStorage(monkeypatch, indexer.app, fail_after_first=failing == "storage")
    if failing == "postgres":
        real_insert, real_execute = SplitRepository.insert, PlainTransaction.execute
        inserts = itertools.count()

        async def insert(self, splits):
            if next(inserts):  # the leader's stage goes through, the group's finds PostgreSQL gone
                raise database_unavailable("test-postgres", ConnectionRefusedError("connection refused"))
            await real_insert(self, splits)

        async def execute(self, statement, params):  # the same on the plain connections the app stages on
            if statement is publish_splits._PLAIN_SPLITS_INSERT and next(inserts):
                raise database_unavailable("test-postgres", ConnectionRefusedError("connection refused"))
            await real_execute(self, statement, params)

        monkeypatch.setattr(SplitRepository, "insert", insert)
        monkeypatch.setattr(PlainTransaction, "execute", execute)
    leader = await _hold_first(indexer, keys, index_id, held)
    bodies = [ndjson(_rows(10, _window(back=i % 2), f"f{i}")) for i in range(4)]
    requests = [asyncio.create_task(_ingest(indexer, keys, index_id, body)) for body in bodies]
    await held.release_when_waiting(len(bodies))
    answers = [await r for r in requests]
    kept = (await leader).json()

    slug, words = {"storage": ("unavailable", "storage went away"),
                   "postgres": ("database-unavailable", "connection refused")}[failing]
    problems = [assert_problem(a, 503, slug) for a in answers]
    assert len({p["detail"] for p in problems}) == 1 and words in problems[0]["detail"]
    published = await _splits(indexer, keys, index_id)
    assert [s["split_id"] for s in published] == kept["split_ids"]
    assert await _splits(indexer, keys, index_id, "staged") == []
    assert storage.list_files(f"indexes/{index_id}") == [s["uri"] for s in published]


async def test_two_tenants_writing_at_once_never_share_a_split(indexer, keys, storage, monkeypatch):
    index_id = await _create(indexer, keys)
    held = HeldStorage(monkeypatch, indexer.app)
    leader = await _hold_first(indexer, keys, index_id, held, partition_id="globex")
    tenants = [("acme", {"key": keys.writer_acme}), ("globex", {"partition_id": "globex"})] * 3
    requests = [asyncio.create_task(_ingest(indexer, keys, index_id, ndjson(_rows(5, _window(), f"{t}-{i}")),
                                            **params))
                for i, (t, params) in enumerate(tenants)]
    # acme's requests do not wait behind globex's held commit: only globex's three queue.
    acme = [await r for r, (t, _) in zip(requests, tenants, strict=True) if t == "acme"]
    assert all(a.status_code == 200 for a in acme), [a.text for a in acme]
    await held.release_when_waiting(3)
    assert (await leader).status_code == 200
    answers = {i: (await r).json() for i, r in enumerate(requests)}

    published = await _splits(indexer, keys, index_id)
    by_id = {s["split_id"]: s for s in published}
    for i, (tenant, _) in enumerate(tenants):
        for split_id in answers[i]["split_ids"]:
            assert by_id[split_id]["partition_id"] == tenant, "CS-1"
    for split in published:
        hosts = set(pq.read_table(storage.open_input(split["uri"]), columns=["host"]).column("host").to_pylist())
        assert {h.split("-")[0] for h in hosts} <= {split["partition_id"], "leader"}
        assert split["partition_id"] == "globex" or "leader" not in hosts
    assert len({answers[i]["split_ids"][0] for i in (1, 3, 5)}) == 1, "globex's three were one group"


@pytest.fixture
async def ungrouped(settings) -> AsyncIterator[httpx.AsyncClient]:
    """indexer-api with group commit turned off."""
    from strata_indexer.app import create_app

    app = create_app(settings.model_copy(update={"ingest_group_commit": False}), background=False)
    async with LifespanManager(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://indexer-api",
                                     timeout=60) as client:
            client.app = app
            yield client


async def test_turned_off_every_request_is_its_own_split(ungrouped, indexer, keys, monkeypatch):
    # `indexer` too: its fixture deletes at the end the indexes a test created (the two apps share the database).
    index_id = await _create(ungrouped, keys)
    held = HeldStorage(monkeypatch, ungrouped.app)
    leader = await _hold_first(ungrouped, keys, index_id, held)
    others = [await _ingest(ungrouped, keys, index_id, ndjson(_rows(10, _window(), f"o{i}"))) for i in range(3)]
    held.release.set()
    assert (await leader).status_code == 200 and all(a.status_code == 200 for a in others)
    assert len(await _splits(ungrouped, keys, index_id)) == 4


async def test_a_request_at_an_idle_scope_writes_its_stage_entry_before_its_file_and_a_failed_upload_is_a_503(
        indexer, keys, storage, monkeypatch):
    """A request that finds its scope idle decodes, cuts and encodes in one hand-off, and writes its stage's
    commit-log entry and its files in another: the entry still goes first, and a refused upload still answers 503,
    its staged rows removed, nothing published."""
    index_id = await _create(indexer, keys)
    app_storage = indexer.app.state.strata.storage
    real = app_storage.write_bytes
    written: list[str] = []

    def write_bytes(uri: str, data: bytes) -> None:
        if COMMIT_LOG_DIR not in uri:
            written.append("split")
            raise OSError("storage went away")
        written.append("entry")
        return real(uri, data)

    monkeypatch.setattr(app_storage, "write_bytes", write_bytes)
    answer = await _ingest(indexer, keys, index_id, ndjson(_rows(10, _window(), "alone")))
    problem = assert_problem(answer, 503, "unavailable")
    assert "storage went away" in problem["detail"]
    # The stage's entry, then the split's file (refused), then the unstaging's entry.
    assert written == ["entry", "split", "entry"]
    assert await _splits(indexer, keys, index_id) == []
    assert await _splits(indexer, keys, index_id, "staged") == []
    monkeypatch.setattr(app_storage, "write_bytes", real)
    bad = await _ingest(indexer, keys, index_id, b'{"metric_name": 7}\n')
    assert_problem(bad, 400, "bad-request")
    good = await _ingest(indexer, keys, index_id, ndjson(_rows(10, _window(), "again")))
    assert good.status_code == 200, good.text
    assert [s["num_rows"] for s in await _splits(indexer, keys, index_id)] == [10]
