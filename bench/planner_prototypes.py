"""Prototypes of the planner fixes that bench_planner's numbers point at (bench-only: nothing outside bench/
changes; they reuse the planner's own policy, helpers and models, so their plans can be compared with the
real ones).

`plan_index_fast` is `strata_planner.compaction.planning.plan_index` with these changes (the first version of
this benchmark measured plan_index before it filtered mature splits in SQL and batched its INSERTs; both are
in plan_index now, and stay here for the comparison):

1. lean load: the same SELECT sent on the session's own asyncpg connection (no SQLAlchemy Row objects),
   created_at as epoch seconds computed by PostgreSQL, and one CompactionScope per distinct scope instead of one
   per row;
2. mature splits filtered in SQL (optional): a mature split is never merged, so only non-mature rows are
   loaded; mature splits are counted by an aggregate (so `skipped` lists them as a count, not per split);
3. batched writes: every job of the pass inserted with two multi-row INSERTs (or two COPYs) in one savepoint
   (one savepoint per job again, as today, only if that savepoint hits a concurrent claim), and the planned
   windows marked with one UPDATE ... FROM unnest(...) instead of one UPDATE per window.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, Integer, bindparam, insert, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.exc import IntegrityError
from ulid import ULID

from bench.common import fmt_int, fmt_s, median

# Reason precedence of merge_policy._exclusion: a split counted as mature here is one that no earlier reason
# (before compaction start, unsorted, in a live job) would have claimed.
_SELECT = """
SELECT s.split_id, s.source_id, s.partition_id, s.doc_mapping_uid, s.sort_schema, s.window_duration_secs,
       s.window_start, s.num_rows, s.size_bytes, s.num_merge_ops,
       floor(extract(epoch FROM s.created_at))::bigint AS created,
       EXISTS (SELECT 1 FROM compaction_job_inputs j WHERE j.split_id = s.split_id AND j.live) AS claimed
FROM splits s
WHERE s.index_uid = $1 AND s.state = 'published' {extra}
"""
_NOT_MATURE = ("s.num_rows < {rows} AND s.size_bytes < {size} "
               "AND floor(extract(epoch FROM s.created_at))::bigint > {cutoff}")
_COUNT_MATURE = """
SELECT count(*) FROM splits s
WHERE s.index_uid = $1 AND s.state = 'published' {extra}
  AND s.window_start >= {start} AND s.sort_schema <> ''
  AND NOT EXISTS (SELECT 1 FROM compaction_job_inputs j WHERE j.split_id = s.split_id AND j.live)
  AND NOT ({not_mature})
"""


async def _raw(session):
    """The session's asyncpg connection, inside the session's transaction. SQLAlchemy's asyncpg adapter sends
    BEGIN lazily, with its first statement: driver calls made before any SQLAlchemy statement run in
    autocommit, and even `session.begin_nested()` does not start the transaction (a COPY inside it committed
    at once in the first version of this prototype). So one SQLAlchemy statement goes first."""
    connection = await session.connection()
    raw = (await connection.get_raw_connection()).driver_connection
    if not raw.is_in_transaction():
        await session.execute(text("SELECT 1"))
    if not raw.is_in_transaction():
        raise RuntimeError("the session's asyncpg connection is not in a transaction")
    return raw


def _window_filter(window_range, windows, params: list) -> str:
    parts = []
    if window_range.start_gte is not None:
        params.append(window_range.start_gte)
        parts.append(f"s.window_start >= ${len(params)}")
    if window_range.start_lt is not None:
        params.append(window_range.start_lt)
        parts.append(f"s.window_start < ${len(params)}")
    if windows is not None:
        params.append([d for d, _ in windows])
        params.append([w for _, w in windows])
        parts.append(f"(s.window_duration_secs, s.window_start) IN "
                     f"(SELECT * FROM unnest(${len(params) - 1}::int[], ${len(params)}::bigint[]))")
    return "".join(f" AND {p}" for p in parts)


async def load_candidates_lean(session, index_uid: str, window_range, windows, *, params, rules, now_secs: int,
                               prune_mature: bool, timings: dict[str, float]) -> tuple[list, int]:
    from strata_shared.domain.merge_policy import SplitCandidate
    from strata_shared.domain.split import CompactionScope

    if windows is not None and not windows:
        return [], 0
    conn = await _raw(session)
    args: list = [index_uid]
    extra = _window_filter(window_range, windows, args)
    not_mature = _NOT_MATURE.format(rows=int(params.target_split_num_rows), size=int(params.target_split_size_bytes),
                                    cutoff=int(now_secs - params.maturation_period_secs))
    started = time.perf_counter()
    rows = await conn.fetch(_SELECT.format(extra=extra + (f" AND {not_mature}" if prune_mature else "")), *args)
    mature = 0
    if prune_mature:
        mature = await conn.fetchval(_COUNT_MATURE.format(extra=extra, start=int(rules.compaction_start_time),
                                                          not_mature=not_mature), *args)
    timings["sql"] = timings.get("sql", 0.0) + time.perf_counter() - started
    started = time.perf_counter()
    scopes: dict[tuple, CompactionScope] = {}
    out = []
    append = out.append
    for r in rows:
        key = (r[1], r[2], r[3], r[4], r[5])
        scope = scopes.get(key)
        if scope is None:
            scope = scopes[key] = CompactionScope(index_uid, r[1], r[2], r[3], r[4], r[5])
        append(SplitCandidate(r[0], scope, r[6], r[7], r[8], r[9], r[10], r[11]))
    timings["build"] = timings.get("build", 0.0) + time.perf_counter() - started
    return out, mature


async def create_jobs_batched(session, ops, now: datetime) -> list[str] | None:
    """Every job and claim in two multi-row INSERTs inside one savepoint; None when a concurrent claim hits
    (the caller then falls back to one savepoint per job, as CompactionRepository.create_job does)."""
    from strata_shared.domain.jobs import JobStatus
    from strata_shared.metastore.compaction_models import CompactionJobInputRow, CompactionJobRow

    if not ops:
        return []
    job_ids = [str(ULID()) for _ in ops]
    jobs = []
    claims = []
    for job_id, op in zip(job_ids, ops, strict=True):
        scope = op.scope
        jobs.append({
            "job_id": job_id, "index_uid": scope.index_uid, "source_id": scope.source_id,
            "partition_id": scope.partition_id, "doc_mapping_uid": scope.doc_mapping_uid,
            "sort_schema": scope.sort_schema, "window_duration_secs": scope.window_duration_secs,
            "window_start": op.window_start, "kind": str(op.kind), "level": op.level,
            "status": JobStatus.UNASSIGNED, "failures": 0, "failure_log": [], "progress": 0.0,
            "input_split_ids": list(op.split_ids), "input_rows": op.num_rows, "input_bytes": op.size_bytes,
            "output_split_ids": [], "created_at": now, "updated_at": now,
        })
        claims.extend({"job_id": job_id, "split_id": s, "live": True} for s in op.split_ids)
    try:
        async with session.begin_nested():
            await session.execute(insert(CompactionJobRow.__table__), jobs)
            await session.execute(insert(CompactionJobInputRow.__table__), claims)
    except IntegrityError:
        return None
    return job_ids


async def create_jobs_copy(session, ops, now: datetime) -> list[str] | None:
    """Like create_jobs_batched, with COPY (binary, on the session's asyncpg connection) for both tables."""
    import json

    import asyncpg

    if not ops:
        return []
    job_ids = [str(ULID()) for _ in ops]
    jobs = []
    claims = []
    for job_id, op in zip(job_ids, ops, strict=True):
        scope = op.scope
        jobs.append((job_id, scope.index_uid, scope.source_id, scope.partition_id, scope.doc_mapping_uid,
                     scope.sort_schema, scope.window_duration_secs, op.window_start, str(op.kind), op.level,
                     "unassigned", 0, json.dumps([]), 0.0, list(op.split_ids), op.num_rows, op.size_bytes, [], now,
                     now))
        claims.extend((job_id, s, True) for s in op.split_ids)
    conn = await _raw(session)
    try:
        async with session.begin_nested():
            await conn.copy_records_to_table("compaction_jobs", records=jobs, columns=_JOB_COLUMNS)
            await conn.copy_records_to_table("compaction_job_inputs", records=claims,
                                             columns=("job_id", "split_id", "live"))
    except asyncpg.IntegrityConstraintViolationError:  # a concurrent claim (unique) or a vanished split (FK)
        return None
    return job_ids


_JOB_COLUMNS = ("job_id", "index_uid", "source_id", "partition_id", "doc_mapping_uid", "sort_schema",
                "window_duration_secs", "window_start", "kind", "level", "status", "failures", "failure_log",
                "progress", "input_split_ids", "input_rows", "input_bytes", "output_split_ids", "created_at",
                "updated_at")

_MARK = text("""
UPDATE compaction_windows AS w SET dirty = false, planned_at = :now, final_planned = v.closed
FROM unnest(:durations, :starts, :closed) AS v(d, s, closed)
WHERE w.index_uid = :index_uid AND w.window_duration_secs = v.d AND w.window_start = v.s AND w.changed_at <= :now
""").bindparams(bindparam("durations", type_=ARRAY(Integer)), bindparam("starts", type_=ARRAY(BigInteger)),
                bindparam("closed", type_=ARRAY(Boolean)))


async def mark_planned_batched(session, index_uid: str, settings, windows: set[tuple[int, int]], now: datetime,
                               force_final: bool) -> None:
    from strata_shared.domain.windows import is_window_closed

    if not windows:
        return
    now_secs = int(now.timestamp())
    ordered = sorted(windows)
    await session.execute(_MARK, {
        "now": now, "index_uid": index_uid, "durations": [d for d, _ in ordered], "starts": [s for _, s in ordered],
        "closed": [force_final or is_window_closed(s, d, settings.late_data_acceptance_secs, now_secs)
                   for d, s in ordered],
    })


async def plan_index_fast(session, index, now: datetime, *, window_range, force_final: bool, create_jobs: bool,
                          max_new_jobs: int | None = None, incremental: bool = False, prune_mature: bool = True,
                          timings: dict[str, float] | None = None, facts: dict[str, Any] | None = None,
                          copy: bool = True):
    from strata_planner.compaction import planning
    from strata_shared.domain.index_config import IndexSettings
    from strata_shared.domain.merge_policy import plan_merges
    from strata_shared.metastore.compaction_repository import CompactionRepository

    timings = {} if timings is None else timings
    settings = IndexSettings.model_validate(index.config)
    params, rules = planning.policy_params(settings), planning.window_rules(settings)
    now_secs = int(now.timestamp())
    windows = None
    if incremental:
        started = time.perf_counter()
        windows = await planning._changed_windows(session, index.index_uid, settings, now)
        timings["changed_windows"] = timings.get("changed_windows", 0.0) + time.perf_counter() - started
    candidates, mature = await load_candidates_lean(session, index.index_uid, window_range, windows, params=params,
                                                    rules=rules, now_secs=now_secs, prune_mature=prune_mature,
                                                    timings=timings)
    started = time.perf_counter()
    plan = plan_merges(candidates, params, rules, now_secs, force_final=force_final)
    timings["policy"] = timings.get("policy", 0.0) + time.perf_counter() - started
    if windows is not None:
        examined = set(windows)
    elif prune_mature:
        # Windows whose splits are all mature are examined too (and marked planned): list them from SQL.
        conn = await _raw(session)
        args: list = [index.index_uid]
        extra = _window_filter(window_range, None, args)
        rows = await conn.fetch("SELECT DISTINCT window_duration_secs, window_start FROM splits s "
                                f"WHERE s.index_uid = $1 AND s.state = 'published' {extra}", *args)
        examined = {(r[0], r[1]) for r in rows}
    else:
        examined = {(c.scope.window_duration_secs, c.window_start) for c in candidates}
    outcome = planning.PlanOutcome(plan=plan, windows_examined=len(examined))
    if hasattr(outcome, "mature_splits"):
        outcome.mature_splits = mature
    if facts is not None:
        facts["mature_counted"] = mature
    if not create_jobs:
        return outcome
    started = time.perf_counter()
    ordered = planning._priority_order(plan.operations)
    deferred: set[tuple[int, int]] = set()
    chosen = ordered if max_new_jobs is None else ordered[:max(0, max_new_jobs)]
    for op in ordered[len(chosen):]:
        outcome.operations_not_created += 1
        deferred.add((op.scope.window_duration_secs, op.window_start))
    created = await (create_jobs_copy if copy else create_jobs_batched)(session, chosen, now)
    if created is None:  # a concurrent pass claimed a split: one savepoint per job, as today
        repo = CompactionRepository(session)
        created = []
        for op in chosen:
            job_id = await repo.create_job(op, now)
            if job_id is None:
                outcome.operations_not_created += 1
                deferred.add((op.scope.window_duration_secs, op.window_start))
            else:
                created.append(job_id)
    outcome.created_job_ids.extend(created)
    timings["create_jobs"] = timings.get("create_jobs", 0.0) + time.perf_counter() - started
    started = time.perf_counter()
    await mark_planned_batched(session, index.index_uid, settings, examined - deferred, now, force_final)
    timings["mark_planned"] = timings.get("mark_planned", 0.0) + time.perf_counter() - started
    return outcome


async def plan_incrementally_fast(session, now: datetime, budget: int, timings: dict[str, float]) -> int:
    """strata_planner.compaction.scheduler.plan_incrementally with plan_index_fast."""
    from sqlalchemy import select

    from strata_planner.compaction.planning import WindowRange
    from strata_shared.metastore.compaction_models import CompactionWindowRow
    from strata_shared.metastore.models import IndexRow

    index_uids = (await session.execute(
        select(CompactionWindowRow.index_uid).distinct().where(
            (CompactionWindowRow.dirty) | (~CompactionWindowRow.final_planned)))).scalars().all()
    created = 0
    for index_uid in sorted(index_uids):
        index = await session.get(IndexRow, index_uid)
        if index is None or index.deleted_at is not None:
            continue
        outcome = await plan_index_fast(session, index, now, window_range=WindowRange(), force_final=False,
                                        create_jobs=True, max_new_jobs=budget - created, incremental=True,
                                        timings=timings)
        created += len(outcome.created_job_ids)
        if created >= budget:
            break
    return created


# ------------------------------------------------------------------------------------------------------------


def _same_operations(a, b) -> bool:
    key: Callable[[Any], tuple] = lambda op: (op.scope, op.window_start, op.split_ids, op.level, str(op.kind))  # noqa: E731
    return sorted(map(key, a.plan.operations), key=str) == sorted(map(key, b.plan.operations), key=str)


async def _timed(sessions, action, runs: int) -> dict[str, Any]:
    seconds, stage_runs, outcome = [], [], None
    for _ in range(runs):
        timings: dict[str, float] = {}
        async with sessions() as session:
            try:
                started = time.perf_counter()
                outcome = await action(session, timings)
                seconds.append(time.perf_counter() - started)
            finally:
                await session.rollback()
        stage_runs.append(timings)
    stages = {k: median([t.get(k, 0.0) for t in stage_runs]) for k in stage_runs[0]}
    return {"median": median(seconds), "runs": seconds, "stages": stages, "outcome": outcome}


async def measure_full(sessions, dsn: str, index, now: Callable[[], datetime], runs: int) -> dict[str, Any]:
    from strata_planner.compaction.planning import WindowRange, plan_index

    del dsn
    out: dict[str, Any] = {}
    # The reference plan, to check the prototypes plan exactly the same operations.
    async with sessions() as session:
        at = now()
        reference = await plan_index(session, index, at, window_range=WindowRange(), force_final=False,
                                     create_jobs=False)
        facts: dict[str, Any] = {}
        lean_pruned = await plan_index_fast(session, index, at, window_range=WindowRange(), force_final=False,
                                            create_jobs=False, prune_mature=True, facts=facts)
        await session.rollback()
    mature_ref = sum(1 for r in reference.plan.skipped.values() if str(r) == "mature") + getattr(
        reference, "mature_splits", 0)
    out["same_ops_pruned"] = _same_operations(reference, lean_pruned)
    out["mature_reference"] = mature_ref
    out["mature_counted"] = facts["mature_counted"]
    out["windows_same"] = reference.windows_examined == lean_pruned.windows_examined
    out["windows_reference"] = reference.windows_examined
    out["windows_prototype"] = lean_pruned.windows_examined

    def dry(prune: bool):
        async def action(session, timings):
            return await plan_index_fast(session, index, now(), window_range=WindowRange(), force_final=False,
                                         create_jobs=False, prune_mature=prune, timings=timings)
        return action

    def create(copy: bool):
        async def action(session, timings):
            return await plan_index_fast(session, index, now(), window_range=WindowRange(), force_final=False,
                                         create_jobs=True, prune_mature=True, timings=timings, copy=copy)
        return action

    async def today_without_gc(session, timings):
        # Today's plan_index, with the cyclic garbage collector paused for the pass: building 2M small objects
        # (a SplitCandidate and a CompactionScope per row) triggers full collections over a growing heap.
        gc.disable()
        try:
            return await plan_index(session, index, now(), window_range=WindowRange(), force_final=False,
                                    create_jobs=False)
        finally:
            gc.enable()

    out["dry_nogc"] = await _timed(sessions, today_without_gc, runs)

    out["dry_pruned"] = await _timed(sessions, dry(True), runs)
    out["create"] = await _timed(sessions, create(False), runs)
    out["create"]["created"] = len(out["create"].pop("outcome").created_job_ids)
    out["create_copy"] = await _timed(sessions, create(True), runs)
    out["create_copy"]["created"] = len(out["create_copy"].pop("outcome").created_job_ids)
    for key in ("dry_pruned", "dry_nogc"):
        out[key]["operations"] = len(out[key].pop("outcome").plan.operations)
    return out


async def measure_incremental(sessions, index, now: Callable[[], datetime], runs: int) -> dict[str, Any]:
    from bench.bench_planner import UNBOUNDED_BUDGET, WORKER_BUDGET

    del index
    out: dict[str, Any] = {}
    for label, budget in (("worker", WORKER_BUDGET), ("unbounded", UNBOUNDED_BUDGET)):
        async def action(session, timings, budget=budget):
            return await plan_incrementally_fast(session, now(), budget, timings)

        result = await _timed(sessions, action, runs)
        result["created"] = result.pop("outcome")
        out[label] = result
    return out


def _stages(stages: dict[str, float]) -> str:
    return ", ".join(f"{k} {fmt_s(v)}" for k, v in stages.items())


def render(result: dict[str, Any]) -> list[str]:
    from bench.bench_planner import UNBOUNDED_BUDGET, WORKER_BUDGET

    proto = result.get("proto") or {}
    inc = result.get("proto_inc") or {}
    if not proto:
        return []
    full, create = result["full_dry"], result["full_create"]
    lines = [
        "### Prototypes of the fixes (`bench/planner_prototypes.py`, bench-only)",
        "",
        "`plan_index_fast` = `plan_index` with (1) a lean load: the same SELECTs (mature splits filtered and "
        "counted in SQL, as `plan_index` now does) sent on the session's asyncpg connection, so no SQLAlchemy "
        "Row objects, created_at as epoch seconds computed by PostgreSQL, one `CompactionScope` per distinct "
        "scope; (2) the pass's jobs in two multi-row INSERTs (as `plan_index` now does) or two COPYs, in one "
        "savepoint, one savepoint per job only as a fallback when a concurrent claim hits; (3) the planned "
        "windows marked by one `UPDATE ... FROM unnest(...)` instead of one UPDATE per window. Same data, same "
        "clock, every pass rolled back.",
        "",
        "| pass | today | prototype | speed-up | stages of the prototype |",
        "|---|---|---|---|---|",
        f"| (1) full dry run, today's code with the garbage collector paused for the pass | "
        f"{fmt_s(full['median'])} | {fmt_s(proto['dry_nogc']['median'])} | "
        f"{full['median'] / proto['dry_nogc']['median']:.1f}x | (same code) |",
        f"| (1) full dry run, lean load (mature filtered in SQL, as today) | {fmt_s(full['median'])} | "
        f"{fmt_s(proto['dry_pruned']['median'])} | {full['median'] / proto['dry_pruned']['median']:.1f}x | "
        f"{_stages(proto['dry_pruned']['stages'])} |",
        f"| (2) full pass with create_jobs=True ({fmt_int(proto['create']['created'])} jobs), multi-row INSERTs | "
        f"{fmt_s(create['median'])} | {fmt_s(proto['create']['median'])} | "
        f"{create['median'] / proto['create']['median']:.1f}x | {_stages(proto['create']['stages'])} |",
        f"| (2) the same with COPY into compaction_jobs and compaction_job_inputs "
        f"({fmt_int(proto['create_copy']['created'])} jobs) | "
        f"{fmt_s(create['median'])} | {fmt_s(proto['create_copy']['median'])} | "
        f"{create['median'] / proto['create_copy']['median']:.1f}x | {_stages(proto['create_copy']['stages'])} |",
    ]
    for label, key, budget in (("worker", "inc_worker", WORKER_BUDGET), ("unbounded", "inc_unbounded",
                                                                         UNBOUNDED_BUDGET)):
        if label in inc:
            today = result[key]["median"]
            lines.append(
                f"| (3) `plan_incrementally`, budget {budget} ({fmt_int(inc[label]['created'])} jobs) | "
                f"{fmt_s(today)} | {fmt_s(inc[label]['median'])} | {today / inc[label]['median']:.1f}x | "
                f"{_stages(inc[label]['stages'])} |")
    lines += [
        "",
        f"Same operations as `plan_index`: {'yes' if proto['same_ops_pruned'] else '**no**'}; mature splits "
        f"{fmt_int(proto['mature_counted'])} vs {fmt_int(proto['mature_reference'])} in `plan_index`'s outcome; "
        f"windows examined: {fmt_int(proto.get('windows_reference', 0))} by `plan_index`, "
        f"{fmt_int(proto.get('windows_prototype', 0))} by the prototype"
        + ("." if proto["windows_same"] else
           " (`plan_index` now derives the examined windows from the loaded, i.e. non-mature, candidates, so a "
           "full pass no longer marks windows holding only mature splits as planned; the prototype lists every "
           "window with a published split, as `plan_index` did before mature splits were filtered in SQL)."),
    ]
    return lines
