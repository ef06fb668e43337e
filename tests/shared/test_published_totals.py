"""The published-split counters (the trigger of migrations 0004 and 0007) equal a count of the published splits
(files, bytes, row groups, row-group bytes) after any sequence of inserts, state changes, row-group rewrites and
deletes, per (index, partition) and for an index dropped whole. The truth is kept in Python beside the database."""

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
