"""The SQL of background pass leases (`web/singleton.py` says why they exist and how a replica uses them).

Every decision is one statement on PostgreSQL's clock (`now()`), so replicas whose clocks disagree still agree on
who holds a pass and when it is due. A run is named by its holder and its `last_started_at` together: a replica
whose lease expired and was taken by another can neither renew nor finish the new holder's run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Interval, and_, bindparam, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from strata_metastore.background_pass_models import BackgroundPassRow


@dataclass(frozen=True, slots=True)
class PassRun:
    """One claimed run of a pass: who runs it and when it started (by the database's clock)."""

    name: str
    holder: str
    started_at: datetime


@dataclass(frozen=True, slots=True)
class PassState:
    """A pass as an operator sees it: whether a live lease is held, and how its last run went."""

    name: str
    holder: str | None
    running: bool
    lease_expires_at: datetime | None
    last_started_at: datetime | None
    last_finished_at: datetime | None
    last_error: str | None


def _seconds(name: str, secs: float):
    return bindparam(name, timedelta(seconds=secs), type_=Interval())


class BackgroundPassRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def claim(self, name: str, holder: str, interval_secs: float, lease_secs: float) -> PassRun | None:
        """Take the pass for one run if no live lease is held and `interval_secs` have passed since its last start;
        None otherwise. One upsert: concurrent claims serialise on the row, and PostgreSQL evaluates the
        condition again on the row the winner wrote, so exactly one of them gets it."""
        r = BackgroundPassRow
        now = func.now()
        stmt = insert(r).values(name=name, holder=holder, lease_expires_at=now + _seconds("lease", lease_secs),
                                last_started_at=now)
        stmt = stmt.on_conflict_do_update(
            index_elements=[r.name],
            set_={"holder": stmt.excluded.holder, "lease_expires_at": stmt.excluded.lease_expires_at,
                  "last_started_at": stmt.excluded.last_started_at},
            where=and_(or_(r.lease_expires_at.is_(None), r.lease_expires_at <= now),
                       or_(r.last_started_at.is_(None),
                           r.last_started_at <= now - _seconds("interval", interval_secs))),
        ).returning(r.last_started_at)
        started_at = await self.session.scalar(stmt)
        return None if started_at is None else PassRun(name, holder, started_at)

    async def renew(self, run: PassRun, lease_secs: float) -> bool:
        """Extend the lease of a run still under way; False when the run is no longer its holder's (its lease
        expired and another replica claimed the pass)."""
        r = BackgroundPassRow
        renewed = await self.session.scalar(
            update(r).where(*self._of(run), r.lease_expires_at.is_not(None))
            .values(lease_expires_at=func.now() + _seconds("lease", lease_secs)).returning(r.name))
        return renewed is not None

    async def finish(self, run: PassRun, error: str | None) -> bool:
        """Give the lease back at the end of a run and record how it ended; False when the run had already been
        taken over."""
        r = BackgroundPassRow
        finished = await self.session.scalar(
            update(r).where(*self._of(run))
            .values(lease_expires_at=None, last_finished_at=func.now(),
                    last_error=None if error is None else error[:2000]).returning(r.name))
        return finished is not None

    async def list(self) -> list[PassState]:
        r = BackgroundPassRow
        running = and_(r.lease_expires_at.is_not(None), r.lease_expires_at > func.now())
        rows = (await self.session.execute(select(r, running).order_by(r.name))).all()
        return [PassState(name=row.name, holder=row.holder, running=bool(live), lease_expires_at=row.lease_expires_at,
                          last_started_at=row.last_started_at, last_finished_at=row.last_finished_at,
                          last_error=row.last_error)
                for row, live in rows]

    @staticmethod
    def _of(run: PassRun):
        r = BackgroundPassRow
        return r.name == run.name, r.holder == run.holder, r.last_started_at == run.started_at
