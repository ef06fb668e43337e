"""The plan generation (the triggers of migrations 0006 and 0008) moves with every change that can change a query
plan, and only with those: a statement touching a split that is or was published, or an index's artifact
snapshots, raises its index's counter (once, however many rows); changes to staged splits leave it. Dropping an
index whole removes its counter."""

from __future__ import annotations

import asyncio
import random

from sqlalchemy import text

from tests.fixtures.postgres import rolled_back

STATES = ["staged", "published", "marked_for_deletion"]
GENERATIONS = text("SELECT index_uid, generation FROM plan_generations")
PUBLISHED_AMONG = text("SELECT count(*) FROM splits WHERE split_id = ANY(:ids) AND state = 'published'")


async def _generations(db) -> dict[str, int]:
    return dict((await db.execute(GENERATIONS)).all())


async def _random_history(url: str, seed: int) -> None:
    rng = random.Random(seed)
    async with rolled_back(url) as db:
        for uid in ("a:1", "b:1"):
            await db.execute(text(
                "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
                "VALUES (:u, :i, 'x', '{}', 'd', 1)"), {"u": uid, "i": uid[0]})
        live: dict[str, str] = {}  # split_id -> index_uid
        snapshots: set[str] = set()
        for step in range(300):
            before = await _generations(db)
            action = rng.random()
            if action < 0.35 or not live:
                split_id, uid, state = f"s{step:05d}", rng.choice(["a:1", "b:1"]), rng.choice(STATES)
                await db.execute(text(
                    "INSERT INTO splits (split_id, index_uid, source_id, partition_id, doc_mapping_uid, "
                    "sort_schema, window_start, window_duration_secs, num_rows, size_bytes, uri, row_groups, "
                    "num_merge_ops, generation, root_split_ids, parent_split_ids, state) VALUES (:s, :u, 'src', "
                    "'p', 'd', '', 0, 60, 1, 10, :uri, '[]', 0, 0, '{}', '{}', :st)"),
                    {"s": split_id, "uri": f"file:///{split_id}", "u": uid, "st": state})
                live[split_id] = uid
                touched = {uid} if state == "published" else set()
            elif action < 0.65:
                chosen = rng.sample(sorted(live), min(len(live), rng.randrange(1, 4)))
                state = rng.choice(STATES)
                was = (await db.execute(text("SELECT split_id FROM splits WHERE split_id = ANY(:ids) "
                                             "AND state = 'published'"), {"ids": chosen})).scalars().all()
                await db.execute(text("UPDATE splits SET state = :st WHERE split_id = ANY(:ids)"),
                                 {"st": state, "ids": chosen})
                touched = {live[s] for s in chosen if s in was or state == "published"}
            elif action < 0.8:
                split_id = rng.choice(sorted(live))
                published = rng.random() < 0.5
                await db.execute(text(
                    "INSERT INTO artifact_snapshots (split_id, index_uid, manifest_uri, published, artifact_ids, "
                    "published_by) VALUES (:s, :u, 'm', :p, '[]', 't') ON CONFLICT (split_id) DO UPDATE "
                    "SET published = :p"), {"s": split_id, "u": live[split_id], "p": published})
                snapshots.add(split_id)
                touched = {live[split_id]}
            else:
                victim = rng.choice(sorted(live))
                was = (await db.execute(PUBLISHED_AMONG, {"ids": [victim]})).scalar_one()
                await db.execute(text("DELETE FROM splits WHERE split_id = :s"), {"s": victim})
                # The split's artifact snapshot goes with it (ON DELETE CASCADE), a change of its own.
                touched = {live[victim]} if was or victim in snapshots else set()
                snapshots.discard(victim)
                live.pop(victim)
            after = await _generations(db)
            for uid in ("a:1", "b:1"):
                moved = after.get(uid, 0) > before.get(uid, 0)
                assert moved == (uid in touched), f"step {step}: {uid} moved={moved}, touched={touched}"
        await db.execute(text("DELETE FROM indexes WHERE index_uid = 'a:1'"))
        assert "a:1" not in await _generations(db)


def test_the_generation_moves_exactly_when_a_plan_could_change(repository_database):
    # One long history covers every transition; the seed is fixed so a failure reproduces.
    asyncio.run(_random_history(repository_database, seed=11))


INSERT_MANY = text("""
    INSERT INTO splits (split_id, index_uid, source_id, partition_id, doc_mapping_uid, sort_schema, window_start,
                        window_duration_secs, num_rows, size_bytes, uri, row_groups, num_merge_ops, generation,
                        root_split_ids, parent_split_ids, state)
    SELECT :prefix || i, (CAST(:uids AS text[]))[1 + i % cardinality(CAST(:uids AS text[]))], 'src', 'p', 'd',
           '', 0, 60, 1, 10, 'file:///' || :prefix || i, '[]', 0, 0, '{}', '{}', CAST(:state AS split_state)
      FROM generate_series(1, :n) AS i""")
# (statement, the indexes whose generation it must raise: once each, whatever the number of rows, unless listed
# twice).
MULTI_ROW = [
    ("UPDATE splits SET state = 'published' WHERE index_uid IN ('b:1', 'c:1') AND state = 'staged'",
     {"b:1", "c:1"}),
    # Staged splits only: nothing a plan reads.
    ("UPDATE splits SET num_rows = 2 WHERE state = 'staged'", set()),
    ("UPDATE splits SET state = 'marked_for_deletion' WHERE split_id LIKE 's%' AND index_uid = 'a:1'", set()),
    ("UPDATE splits SET state = 'marked_for_deletion' WHERE split_id LIKE 'x%'", {"c:1"}),
    # Published splits, even with nothing counted changing (as migration 0006's row trigger did).
    ("UPDATE splits SET updated_at = now() WHERE index_uid = 'a:1' AND state = 'published'", {"a:1"}),
    # Published splits leaving their indexes (p1 of b:1, p4 of a:1) change the plans of those, not of the index
    # that holds them staged; one moving as published changes both.
    ("UPDATE splits SET index_uid = 'c:1', state = 'staged' WHERE split_id IN ('p1', 'p4')", {"a:1", "b:1"}),
    ("UPDATE splits SET index_uid = 'c:1' WHERE split_id = 'p3'", {"b:1", "c:1"}),
    ("INSERT INTO artifact_snapshots (split_id, index_uid, manifest_uri, published, artifact_ids, published_by) "
     "SELECT split_id, index_uid, 'm', true, '[]', 't' FROM splits WHERE index_uid IN ('a:1', 'b:1')",
     {"a:1", "b:1"}),
    ("UPDATE artifact_snapshots SET published = false WHERE index_uid = 'b:1'", {"b:1"}),
    ("DELETE FROM artifact_snapshots WHERE index_uid = 'a:1'", {"a:1"}),
    ("DELETE FROM splits WHERE index_uid IN ('a:1', 'c:1') AND state = 'published'", {"a:1", "c:1"}),
    # Staged splits of every index, and the published splits of b:1 with their snapshots: the cascade to the
    # snapshots is a statement of its own, which raises b:1 again.
    ("DELETE FROM splits WHERE split_id LIKE 's%' OR index_uid = 'b:1'", ["b:1", "b:1"]),
]


async def _multi_row_history(url: str) -> None:
    async with rolled_back(url) as db:
        for uid in ("a:1", "b:1", "c:1"):
            await db.execute(text(
                "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
                "VALUES (:u, :i, 'x', '{}', 'd', 1)"), {"u": uid, "i": uid[0]})
        inserts = [({"prefix": "p", "uids": ["a:1", "b:1"], "state": "published"}, {"a:1", "b:1"}),
                   ({"prefix": "s", "uids": ["a:1", "b:1", "c:1"], "state": "staged"}, set()),
                   ({"prefix": "x", "uids": ["c:1"], "state": "published"}, {"c:1"})]
        steps = [(INSERT_MANY, {**params, "n": 200}, touched) for params, touched in inserts]
        steps += [(text(statement), {}, touched) for statement, touched in MULTI_ROW]
        for statement, params, touched in steps:
            before = await _generations(db)
            await db.execute(statement, params)
            after = await _generations(db)
            for uid in ("a:1", "b:1", "c:1"):
                expected = before.get(uid, 0) + list(touched).count(uid)
                assert after.get(uid, 0) == expected, f"{statement} {params}: {uid} {before} -> {after}"
        await db.execute(text("DELETE FROM indexes WHERE index_uid = 'c:1'"))
        assert set(await _generations(db)) == {"a:1", "b:1"}


def test_a_multi_row_statement_raises_each_touched_index_once(repository_database):
    asyncio.run(_multi_row_history(repository_database))


async def _registered_batch(url: str) -> tuple[int, int]:
    from strata_core.domain.split import SplitMetadata, SplitState
    from strata_metastore.publish_splits import publish_splits

    async with rolled_back(url) as db:
        await db.execute(text("INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, "
                              "version) VALUES ('a:1', 'a', 'x', '{}', 'd', 1)"))
        before = (await _generations(db)).get("a:1", 0)
        await publish_splits(db, [
            SplitMetadata(split_id=f"r{i:025d}", index_uid="a:1", source_id="src", partition_id="p",
                          doc_mapping_uid="d", sort_schema="", window_start=0, window_duration_secs=60,
                          time_range_start=0, time_range_end=59, num_rows=1, uri=f"file:///r{i}", size_bytes=10,
                          state=SplitState.PUBLISHED) for i in range(300)])
        return before, (await _generations(db))["a:1"]


def test_a_registered_batch_is_one_statement_for_the_triggers(repository_database):
    # Registration publishes through publish_splits (SplitRepository.insert): a batch sent row by row would run the
    # statement-level triggers once per split, which is what migration 0008 removed.
    before, after = asyncio.run(_registered_batch(repository_database))
    assert after == before + 1
