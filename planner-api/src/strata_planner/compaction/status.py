"""Read models of compaction: job views and the per-window timeline summary."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, case, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from strata_planner.compaction.planning import policy_params
from strata_planner.compaction.schemas import JobOut, WindowOut
from strata_shared.domain.index_config import IndexSettings
from strata_shared.domain.jobs import LIVE_STATUSES
from strata_shared.domain.merge_policy import split_level
from strata_shared.domain.split import SplitState
from strata_shared.domain.windows import is_window_closed
from strata_shared.metastore.compaction_models import CompactionJobRow, CompactionWindowRow
from strata_shared.metastore.models import IndexRow, SplitRow


def job_out(job: CompactionJobRow, input_ids: list[str]) -> JobOut:
    duration = None
    if job.first_assigned_at and job.finished_at:
        duration = (job.finished_at - job.first_assigned_at).total_seconds()
    return JobOut(
        job_id=job.job_id, index_uid=job.index_uid, partition_id=job.partition_id, source_id=job.source_id,
        window_start=job.window_start, window_duration_secs=job.window_duration_secs, kind=job.kind,
        level=job.level, status=str(job.status), stage=job.stage, progress=job.progress,
        fencing_token=job.fencing_token, worker_id=job.worker_id, lease_expires_at=job.lease_expires_at,
        failures=job.failures, last_error=job.last_error, failure_log=job.failure_log,
        spark_operation_tag=job.spark_operation_tag, input_split_ids=input_ids, input_rows=job.input_rows,
        input_bytes=job.input_bytes, output_split_ids=list(job.output_split_ids or []),
        output_bytes=job.output_bytes, created_at=job.created_at, first_assigned_at=job.first_assigned_at,
        assigned_at=job.assigned_at, finished_at=job.finished_at, duration_secs=duration,
    )


async def window_summaries(session: AsyncSession, index: IndexRow, now: datetime, *, start_gte: int | None,
                           start_lt: int | None, limit: int) -> list[WindowOut]:
    settings = IndexSettings.model_validate(index.config)
    params = policy_params(settings)
    published = SplitRow.state == SplitState.PUBLISHED
    stmt = (
        select(SplitRow.window_duration_secs, SplitRow.window_start,
               func.count().filter(published).label("splits"),
               func.coalesce(func.sum(case((published, SplitRow.num_rows), else_=0)), 0).label("rows"),
               func.coalesce(func.sum(case((published, SplitRow.size_bytes), else_=0)), 0).label("bytes"),
               func.count().filter(SplitRow.state == SplitState.MARKED_FOR_DELETION).label("marked"),
               func.array_agg(case((published, SplitRow.num_rows))).label("row_counts"))
        .where(SplitRow.index_uid == index.index_uid,
               SplitRow.state.in_([SplitState.PUBLISHED, SplitState.MARKED_FOR_DELETION]))
        .group_by(SplitRow.window_duration_secs, SplitRow.window_start)
        .order_by(SplitRow.window_start.desc())
        .limit(limit)
    )
    if start_gte is not None:
        stmt = stmt.where(SplitRow.window_start >= start_gte)
    if start_lt is not None:
        stmt = stmt.where(SplitRow.window_start < start_lt)
    rows = (await session.execute(stmt)).all()
    jobs = dict(((d, w), n) for d, w, n in (await session.execute(
        select(CompactionJobRow.window_duration_secs, CompactionJobRow.window_start, func.count())
        .where(CompactionJobRow.index_uid == index.index_uid, CompactionJobRow.status.in_(LIVE_STATUSES))
        .group_by(CompactionJobRow.window_duration_secs, CompactionJobRow.window_start))).all())
    compacted = dict(((d, w), t) for d, w, t in (await session.execute(
        select(CompactionWindowRow.window_duration_secs, CompactionWindowRow.window_start,
               CompactionWindowRow.last_compacted_at)
        .where(and_(CompactionWindowRow.index_uid == index.index_uid)))).all())
    now_secs = int(now.timestamp())
    out = []
    for r in rows:
        levels: dict[str, int] = {}
        for count in r.row_counts or []:
            if count is not None:
                key = str(split_level(count, params))
                levels[key] = levels.get(key, 0) + 1
        out.append(WindowOut(
            window_start=r.window_start, window_duration_secs=r.window_duration_secs, splits=r.splits,
            rows=int(r.rows), bytes=int(r.bytes), levels=levels, live_jobs=jobs.get((r.window_duration_secs,
                                                                                     r.window_start), 0),
            marked_for_deletion=r.marked,
            closed=is_window_closed(r.window_start, r.window_duration_secs, settings.late_data_acceptance_secs,
                                    now_secs),
            last_compacted_at=compacted.get((r.window_duration_secs, r.window_start)),
        ))
    return out
