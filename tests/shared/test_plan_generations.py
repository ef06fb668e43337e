"""The plan generation (migration 0006's triggers) moves with every change that can change a query plan, and only
with those: a statement touching a split that is or was published, or an index's artifact snapshots, raises its
index's counter; changes to staged splits leave it. Dropping an index whole removes its counter."""

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
