"""SQL of maintenance skips: a pass's upsert of what it skipped, the clearing of what it has since handled, the
operator's listing and the per-pass counts behind the gauge."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from strata_metastore.maintenance_models import MaintenanceSkipRow


@dataclass(frozen=True, slots=True)
class SkippedEntry:
    pass_name: str
    index_id: str | None
    entry: str
    reason_class: str
    reason: str


class MaintenanceSkipRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def record(self, skipped: Sequence[SkippedEntry], now: datetime) -> None:
        """Upsert: an entry met again is the same row, its attempts counted and its reason the latest."""
        if not skipped:
            return
        # One row per (pass, entry) in one statement: ON CONFLICT cannot touch the same row twice.
        unique = {(s.pass_name, s.entry): s for s in skipped}
        table = MaintenanceSkipRow.__table__
        stmt = insert(table).values([
            {"pass": s.pass_name, "index_id": s.index_id, "entry": s.entry, "reason_class": s.reason_class,
             "reason": s.reason, "first_seen_at": now, "last_seen_at": now, "attempts": 1}
            for s in unique.values()])
        await self.session.execute(stmt.on_conflict_do_update(
            constraint="uq_maintenance_skips_pass_entry",
            set_={"index_id": stmt.excluded.index_id, "reason_class": stmt.excluded.reason_class,
                  "reason": stmt.excluded.reason, "last_seen_at": stmt.excluded.last_seen_at,
                  "attempts": table.c.attempts + 1}))

    async def clear(self, pass_name: str, *, index_ids: Collection[str] | None, keep: Collection[str]) -> int:
        """Delete the pass's rows the pass did not skip this time (handled since, or gone): of every index when
        `index_ids` is None (the pass looked at everything), else of those indexes only."""
        stmt = delete(MaintenanceSkipRow).where(MaintenanceSkipRow.pass_name == pass_name)
        if index_ids is not None:
            if not index_ids:
                return 0
            stmt = stmt.where(MaintenanceSkipRow.index_id.in_(sorted(index_ids)))
        if keep:
            stmt = stmt.where(MaintenanceSkipRow.entry.not_in(sorted(keep)))
        return (await self.session.execute(stmt)).rowcount

    async def counts_by_pass(self, pass_names: Collection[str]) -> dict[str, int]:
        rows = await self.session.execute(
            select(MaintenanceSkipRow.pass_name, func.count())
            .where(MaintenanceSkipRow.pass_name.in_(sorted(pass_names))).group_by(MaintenanceSkipRow.pass_name))
        return {name: 0 for name in pass_names} | {name: int(count) for name, count in rows.all()}

    async def list_page(self, pass_names: Collection[str], *, index_id: str | None, limit: int,
                        after_skip_id: int | None) -> Sequence[MaintenanceSkipRow]:
        stmt = select(MaintenanceSkipRow).where(MaintenanceSkipRow.pass_name.in_(sorted(pass_names)))
        if index_id is not None:
            stmt = stmt.where(MaintenanceSkipRow.index_id == index_id)
        if after_skip_id is not None:
            stmt = stmt.where(MaintenanceSkipRow.skip_id > after_skip_id)
        return (await self.session.execute(stmt.order_by(MaintenanceSkipRow.skip_id).limit(limit))).scalars().all()
