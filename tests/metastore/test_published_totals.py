"""The published-split counters (the triggers of migrations 0004, 0007 and 0008) equal a count of the published
splits (files, bytes, row groups, row-group bytes) after any sequence of inserts, state changes, row-group rewrites
and deletes, one row or many per statement, per (index, partition) and for an index dropped whole. The truth is
kept in Python beside the database."""

from __future__ import annotations

import asyncio
import json
import random

from sqlalchemy import text

from tests.fixtures.postgres import rolled_back

STATES = ["staged", "published", "marked_for_deletion"]
COUNTED = text("SELECT index_uid, partition_id, files, bytes, row_groups, row_group_bytes FROM published_totals "
               "WHERE files <> 0 OR bytes <> 0 OR row_groups <> 0 OR row_group_bytes <> 0")


def _row_groups(rng: random.Random) -> list[dict[str, int]]:
    # No row groups recorded (an external split registered without them) counts the file's size.
    return [{"byte_length": rng.randrange(1, 5_000)} for _ in range(rng.choice([0, 1, 1, 2, 5]))]


def _truth(splits: dict[str, dict]) -> dict[tuple[str, str], tuple[int, int, int, int]]:
    out: dict[tuple[str, str], tuple[int, int, int, int]] = {}
    for split in splits.values():
        if split["state"] != "published":
            continue
        files, size, groups, group_bytes = out.get((split["u"], split["p"]), (0, 0, 0, 0))
        rgs = split["rgs"]
        out[split["u"], split["p"]] = (files + 1, size + split["b"], groups + len(rgs),
                                       group_bytes + (sum(g["byte_length"] for g in rgs) if rgs else split["b"]))
    return out


async def _random_history(url: str, seed: int) -> None:
    rng = random.Random(seed)
    async with rolled_back(url) as db:
        for uid in ("a:1", "b:1"):
            await db.execute(text(
                "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
                "VALUES (:u, :i, 'x', '{}', 'd', 1)"), {"u": uid, "i": uid[0]})
        model: dict[str, dict] = {}
        for step in range(300):
            action = rng.random()
            if action < 0.4 or not model:
                split_id = f"s{step:05d}"
                split = {"s": split_id, "uri": f"file:///{split_id}", "u": rng.choice(["a:1", "b:1"]),
                         "p": rng.choice(["p1", "p2"]), "b": rng.randrange(1, 10_000), "state": rng.choice(STATES),
                         "rgs": _row_groups(rng)}
                await db.execute(text(
                    "INSERT INTO splits (split_id, index_uid, source_id, partition_id, doc_mapping_uid, "
                    "sort_schema, window_start, window_duration_secs, num_rows, size_bytes, uri, row_groups, "
                    "num_merge_ops, generation, root_split_ids, parent_split_ids, state) VALUES (:s, :u, 'src', "
                    ":p, 'd', '', 0, 60, 1, :b, :uri, CAST(:rg AS jsonb), 0, 0, '{}', '{}', :state)"),
                    {**{k: v for k, v in split.items() if k != "rgs"}, "rg": json.dumps(split["rgs"])})
                model[split_id] = split
            elif action < 0.7:
                # Several splits at once, as a merge's publication does.
                chosen = rng.sample(sorted(model), min(len(model), rng.randrange(1, 4)))
                state = rng.choice(STATES)
                await db.execute(text("UPDATE splits SET state = :st WHERE split_id = ANY(:ids)"),
                                 {"st": state, "ids": chosen})
                for split_id in chosen:
                    model[split_id]["state"] = state
            elif action < 0.8:
                split_id = rng.choice(sorted(model))
                model[split_id]["rgs"] = _row_groups(rng)
                await db.execute(text("UPDATE splits SET row_groups = CAST(:rg AS jsonb) WHERE split_id = :s"),
                                 {"rg": json.dumps(model[split_id]["rgs"]), "s": split_id})
            else:
                victim = rng.choice(sorted(model))
                del model[victim]
                await db.execute(text("DELETE FROM splits WHERE split_id = :s"), {"s": victim})
            if step % 50 == 49:
                counted = {(u, p): tuple(rest) for u, p, *rest in (await db.execute(COUNTED)).all()}
                assert counted == _truth(model), f"after step {step}"
        await db.execute(text("DELETE FROM indexes WHERE index_uid = 'a:1'"))
        remaining = {u for u, *_ in (await db.execute(text("SELECT * FROM published_totals"))).all()}
        assert "a:1" not in remaining


def test_counters_equal_a_count_of_published_splits_after_any_history(repository_database):
    # One long history covers every transition; the seed is fixed so a failure reproduces. It runs in a
    # transaction rolled back at the end: the trigger fires per statement, inside a transaction or not.
    asyncio.run(_random_history(repository_database, seed=7))


# Multi-row statements as the system issues them (a registration batch, a merge's publication, an index marked for
# deletion, the janitor's deletes, the bench's COPY), over three indexes and four partitions. Split i's index,
# partition, state, size and row groups follow from i, so each statement below touches a mix of them.
INSERT_MANY = text("""
    INSERT INTO splits (split_id, index_uid, source_id, partition_id, doc_mapping_uid, sort_schema, window_start,
                        window_duration_secs, num_rows, size_bytes, uri, row_groups, num_merge_ops, generation,
                        root_split_ids, parent_split_ids, state)
    SELECT :prefix || i, (ARRAY['a:1', 'b:1', 'c:1'])[1 + i % 3], 'src', 'p' || (i % 4), 'd', '', 0, 60, 1,
           1 + i * 7 % 10000, 'file:///' || :prefix || i,
           (SELECT coalesce(jsonb_agg(jsonb_build_object('byte_length', 1 + (i * g) % 900)), '[]')
              FROM generate_series(1, i % 4) AS g),
           0, 0, '{}', '{}', CAST((ARRAY['staged', 'published', 'published', 'marked_for_deletion'])[1 + i % 4]
                                  AS split_state)
      FROM generate_series(1, :n) AS i
    ON CONFLICT (split_id) DO UPDATE SET state = 'published'""")
SPLITS = text("SELECT split_id, index_uid, partition_id, size_bytes, state, row_groups FROM splits")
STATEMENTS = [
    # Publication of many staged splits of every index and partition at once.
    "UPDATE splits SET state = 'published' WHERE state = 'staged' AND split_id LIKE 'm%'",
    # An index's splits marked for deletion, and a merge's inputs replaced (some published, some not).
    "UPDATE splits SET state = 'marked_for_deletion' WHERE index_uid = 'a:1' AND partition_id IN ('p1', 'p2')",
    "UPDATE splits SET state = 'marked_for_deletion' WHERE split_id LIKE 'm1%'",
    # Splits moving between partitions and between indexes, published or not.
    "UPDATE splits SET partition_id = 'p9' WHERE split_id LIKE '%3'",
    "UPDATE splits SET index_uid = 'b:1' WHERE index_uid = 'c:1' AND split_id LIKE '%7'",
    # Sizes and row groups rewritten, and an update of nothing counted.
    "UPDATE splits SET size_bytes = size_bytes + 5, row_groups = '[]' WHERE split_id LIKE '%5'",
    "UPDATE splits SET row_groups = '[{\"byte_length\": 3}, {\"byte_length\": 4}]' WHERE split_id LIKE '%6'",
    "UPDATE splits SET updated_at = now() WHERE state = 'published'",
    "DELETE FROM splits WHERE split_id LIKE '%2' OR state = 'marked_for_deletion' AND split_id LIKE 'c%'",
]


async def _multi_row_history(url: str) -> None:
    async with rolled_back(url) as db:
        for uid in ("a:1", "b:1", "c:1"):
            await db.execute(text(
                "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
                "VALUES (:u, :i, 'x', '{}', 'd', 1)"), {"u": uid, "i": uid[0]})

        async def check(after: str) -> None:
            model = {s: {"u": u, "p": p, "b": b, "state": st, "rgs": rgs}
                     for s, u, p, b, st, rgs in (await db.execute(SPLITS)).all()}
            counted = {(u, p): tuple(rest) for u, p, *rest in (await db.execute(COUNTED)).all()}
            assert counted == _truth(model), f"after {after}"
            assert len(counted) > 4, f"after {after}: the statements should leave several groups counted"

        await db.execute(INSERT_MANY, {"prefix": "m", "n": 2000})
        await check("the first insert")
        # The path of the bench's loads: COPY of many published and staged rows.
        raw = await (await db.connection()).get_raw_connection()
        await raw.driver_connection.copy_records_to_table(
            "splits", columns=("split_id", "index_uid", "source_id", "partition_id", "doc_mapping_uid",
                               "sort_schema", "window_start", "window_duration_secs", "num_rows", "size_bytes",
                               "uri", "row_groups", "num_merge_ops", "generation", "root_split_ids", "state"),
            records=[(f"c{i}", ["a:1", "b:1", "c:1"][i % 3], "src", f"p{i % 4}", "d", "", 0, 60, 1, 100 + i,
                      f"file:///c{i}", json.dumps([{"byte_length": 10 + i}] * (i % 3)), 0, 0, [],
                      "published" if i % 5 else "staged") for i in range(1500)])
        await check("COPY")
        # An upsert: rows inserted (published or not) and rows updated to published, in one statement.
        await db.execute(INSERT_MANY, {"prefix": "m", "n": 2600})
        await check("the upsert")
        for statement in STATEMENTS:
            await db.execute(text(statement))
            await check(statement)
        await db.execute(text("DELETE FROM indexes WHERE index_uid = 'a:1'"))
        remaining = {u for u, *_ in (await db.execute(text("SELECT * FROM published_totals"))).all()}
        assert remaining == {"b:1", "c:1"}


def test_counters_equal_a_recount_after_multi_row_statements(repository_database):
    asyncio.run(_multi_row_history(repository_database))
