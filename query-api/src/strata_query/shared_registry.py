"""Work in flight shared by every query-api replica through PostgreSQL (tables of migration 0013), so a poll, a
DELETE of a plan or a cancel of a query is answered whichever replica receives it.

- **Plans**: a submitted plan is a row before its id is handed out; its owner records how it ended (the body or
  the problem the API answers). A cancel on any replica is one conditional UPDATE; the owner, which polls its
  plans in flight (`cancel_requests`), stops planning. A live owner finishes or fails a plan within the query
  timeout, so a plan still submitted past it (and a grace for the last write) is a dead replica's: it reads as
  failed. Plans leave the table an hour after their last write (deleted as new ones are added).
- **Running queries** are registered off the query's path: `add_running` only notes the query, and a writer task
  sends the new rows and the ended ones in batches. A query's row is sent once it has run `SHARE_AFTER_SECS`, or
  at once when its caller is about to learn its id (a streamed result's first batch): a query that ends before
  then leaves nothing to write at all, which is most interactive queries (a cancel needs the id, which the
  caller of a finished result gets with the whole answer, and the garbage collector's grace, minutes, covers the
  files it reads); one that ends while it is being sent is deleted by the next batch.
  A cancel received elsewhere sets the row's flag, which the owner polls while it has queries running. The owner
  refreshes its rows every few seconds; rows it stopped refreshing are a killed replica's, reached by no cancel
  and deleted by any replica's writer.

Why polling and not LISTEN/NOTIFY: a listener needs a connection of its own per replica, and after that
connection drops it must read the flags anyway for the notifications it missed; the poll is that read alone, one
indexed statement every quarter second on the kept connection of `SingleReads` (which replaces a dropped one),
sent only while the replica has work in flight.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import suppress
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.errors import StrataError
from strata_metastore.engine import DatabaseUnavailable
from strata_metastore.query_registry_repository import RUNNING_ALIVE_SECS, QueryRegistryRepository, StoredPlan
from strata_metastore.single_reads import SingleReads
from strata_query.registry import AsyncPlan, RunningQuery, replica_stopped

log = logging.getLogger("strata.query")

# One statement on a kept connection, sent every few tenths of a second while a replica has work in flight: which of
# its plans were cancelled elsewhere (no longer submitted), and which of its running queries a cancel was asked for.
_CANCEL_REQUESTS = """
    SELECT ARRAY(SELECT plan_id FROM query_plans WHERE plan_id = ANY($1::varchar[]) AND status <> 'submitted'),
           ARRAY(SELECT query_id FROM running_queries WHERE query_id = ANY($2::varchar[]) AND cancel_requested)"""


# A replica's batch of started and ended queries, one autocommit statement on a kept connection (the writer runs
# beside every query: a session's BEGIN and COMMIT would triple its round trips). Sent twice, it does the same.
_WRITE_RUNNING = """
    WITH ended AS (DELETE FROM running_queries WHERE query_id = ANY($1::varchar[]))
    INSERT INTO running_queries (query_id, tenant, owner)
    SELECT query_id, tenant, $4 FROM unnest($2::varchar[], $3::varchar[]) AS started(query_id, tenant)
    ON CONFLICT (query_id) DO NOTHING"""


async def write_running(reads: SingleReads, added: Sequence[tuple[str, str | None]], removed: Collection[str],
                        owner: str) -> None:
    """One batch of a replica's changes: `added` (query id, tenant) started, `removed` ended."""
    await reads.fetchrow(_WRITE_RUNNING, list(removed), [query_id for query_id, _ in added],
                         [tenant for _, tenant in added], owner)


async def cancel_requests(reads: SingleReads, plan_ids: Sequence[str],
                          query_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """Of these plans, those no longer submitted; of these queries, those another replica asked to cancel."""
    row = await reads.fetchrow(_CANCEL_REQUESTS, list(plan_ids), list(query_ids))
    return list(row[0]), list(row[1])

# A live owner's last write of a timed-out plan lands within this much after the timeout.
OWNER_GRACE_SECS = 5.0
PLAN_RETENTION_SECS = 3600.0
# The owner refreshes its running rows this often (well within RUNNING_ALIVE_SECS, after which a row is a dead
# replica's).
KEEP_ALIVE_SECS = 5.0
# A batch the database refused is sent again after this long.
RETRY_SECS = 1.0
# A running query's row is sent once it has run this long (unless its id is handed out before): a fresh query of
# a few milliseconds then costs the metastore no INSERT and DELETE, and its replica's event loop no round trip.
SHARE_AFTER_SECS = 0.05


class SharedQueryRegistry:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], reads: SingleReads, owner: str,
                 query_timeout_secs: float, problem_form: Callable[[StrataError], dict[str, Any]]) -> None:
        self.sessions = sessions
        # How the door shows a failure (`async_plans.RecordForms.problem`): a dead owner's plan reads as one.
        self.problem_form = problem_form
        self.reads = reads
        # This replica (`web.singleton.replica_id`).
        self.owner = owner
        self.owner_lost_after_secs = query_timeout_secs + OWNER_GRACE_SECS
        self.retention_secs = max(PLAN_RETENTION_SECS, 2 * self.owner_lost_after_secs)
        # Queries this replica runs.
        self.running_queries: dict[str, RunningQuery] = {}
        # Their rows: not sent yet, being sent, written; and the written rows of queries that ended.
        self._unsent: dict[str, RunningQuery] = {}
        # When each unsent query was noted (monotonic); the ids whose rows are wanted at once.
        self._noted_at: dict[str, float] = {}
        self._urgent: set[str] = set()
        self._wake = asyncio.Event()
        self._sending: set[str] = set()
        self._written: set[str] = set()
        self._ended: set[str] = set()
        self._batch_done = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._kept_alive_at = time.monotonic()
        self._dead_rows_cleared_at = 0.0

    # --- asynchronous plans ----------------------------------------------------------------------------------

    async def add_plan(self, plan: AsyncPlan) -> None:
        async with self.sessions() as session:
            await QueryRegistryRepository(session).add_plan(plan.plan_id, plan.tenant, self.owner,
                                                            retention_secs=self.retention_secs)
            await session.commit()

    async def finish_plan(self, plan: AsyncPlan) -> bool:
        async with self.sessions() as session:
            finished = await QueryRegistryRepository(session).finish_plan(plan.plan_id, plan.status, plan=plan.plan,
                                                                          problem=plan.problem)
            await session.commit()
        return finished

    async def plan(self, plan_id: str) -> AsyncPlan | None:
        async with self.sessions() as session:
            stored = await QueryRegistryRepository(session).plan(plan_id,
                                                                 owner_lost_after_secs=self.owner_lost_after_secs)
        return None if stored is None else self._as_plan(stored)

    async def cancel_plan(self, plan_id: str) -> AsyncPlan | None:
        async with self.sessions() as session:
            plans = QueryRegistryRepository(session)
            await plans.cancel_plan(plan_id, owner_lost_after_secs=self.owner_lost_after_secs)
            stored = await plans.plan(plan_id, owner_lost_after_secs=self.owner_lost_after_secs)
            await session.commit()
        return None if stored is None else self._as_plan(stored)

    # --- running queries -------------------------------------------------------------------------------------

    def add_running(self, query: RunningQuery) -> None:
        self.running_queries[query.query_id] = query
        self._unsent[query.query_id] = query
        self._noted_at[query.query_id] = time.monotonic()
        self._write_soon()

    def forget_running(self, query_id: str) -> None:
        if self.running_queries.pop(query_id, None) is None:
            return
        if self._unsent.pop(query_id, None) is not None:
            # Never sent, and now never will be; the writer looks again (it may have nothing left to do).
            self._noted_at.pop(query_id, None)
            self._urgent.discard(query_id)
            self._wake.set()
            return
        self._ended.add(query_id)
        self._write_soon()

    def running_here(self, query_id: str) -> RunningQuery | None:
        return self.running_queries.get(query_id)

    def has_running(self) -> bool:
        return bool(self.running_queries)

    async def until_shared(self, query_id: str, timeout_secs: float) -> None:
        if query_id in self._unsent:
            self._urgent.add(query_id)
            self._wake.set()
        with suppress(TimeoutError):
            async with asyncio.timeout(timeout_secs):
                while query_id in self._unsent or query_id in self._sending:
                    await self._batch_done.wait()

    async def request_cancel(self, query_id: str, tenant: str | None) -> bool:
        if query_id in self._ended or (query_id in self._written and query_id not in self.running_queries):
            # It ended here and its row is not deleted yet (the writer batches deletes): nothing to cancel.
            return False
        async with self.sessions() as session:
            asked = await QueryRegistryRepository(session).request_cancel(query_id, tenant,
                                                                            alive_secs=RUNNING_ALIVE_SECS)
            await session.commit()
        return asked

    async def cancel_requests(self, plan_ids: Sequence[str]) -> tuple[list[str], list[RunningQuery]]:
        query_ids = [query_id for query_id in self._written if query_id in self.running_queries]
        if not plan_ids and not query_ids:
            return [], []
        if query_ids and time.monotonic() - self._kept_alive_at >= KEEP_ALIVE_SECS:
            async with self.sessions() as session:
                await QueryRegistryRepository(session).keep_running_alive(query_ids)
                await session.commit()
            self._kept_alive_at = time.monotonic()
        cancelled_plans, asked = await cancel_requests(self.reads, plan_ids, query_ids)
        return cancelled_plans, [self.running_queries[query_id] for query_id in asked
                                 if query_id in self.running_queries]

    async def close(self) -> None:
        """Stops writing and deletes every row of this replica's running queries: none outlives its process."""
        if self._writer is not None:
            self._writer.cancel()
            with suppress(asyncio.CancelledError):
                await self._writer
        try:
            async with self.sessions() as session:
                await QueryRegistryRepository(session).forget_running_of(self.owner)
                await session.commit()
        except (DatabaseUnavailable, DBAPIError) as exc:
            # A replica stops even while PostgreSQL is away; rows it leaves stop being refreshed, so they read as a
            # dead replica's and the next writer deletes them.
            log.warning("running queries of %s left for the next writer to delete: %s", self.owner, exc)
        finally:
            self.reads.close()

    def _write_soon(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write(), name="running-queries-writer")

    async def _write(self) -> None:
        """Sends the rows of started and ended queries, a batch at a time, until nothing is left to send."""
        while self._unsent or self._ended:
            await self._until_due()
            added = self._due_rows()
            removed, self._ended = self._ended, set()
            if not added and not removed:
                continue
            self._sending = set(added)
            try:
                await write_running(self.reads, [(query_id, query.tenant) for query_id, query in added.items()],
                                    removed, self.owner)
                if time.monotonic() - self._dead_rows_cleared_at >= RUNNING_ALIVE_SECS:
                    async with self.sessions() as session:
                        await QueryRegistryRepository(session).forget_dead_running(alive_secs=RUNNING_ALIVE_SECS)
                        await session.commit()
                    self._dead_rows_cleared_at = time.monotonic()
            except Exception:  # noqa: BLE001 - a database away must not fail queries; the batch is sent again
                log.warning("recording %d running and %d ended queries failed; retrying", len(added), len(removed),
                            exc_info=True)
                # Queries that ended meanwhile are in `_ended` already (deleting a row never written is harmless).
                again = {query_id: query for query_id, query in added.items() if query_id in self.running_queries}
                self._unsent.update(again)
                self._noted_at.update(dict.fromkeys(again, 0.0))
                self._ended |= removed
                self._batch_finished()
                await asyncio.sleep(RETRY_SECS)
                continue
            self._written = (self._written | added.keys()) - removed
            self._batch_finished()

    async def _until_due(self) -> None:
        """Until a row is due: an ended query's deletion, an urgent row, or the oldest row's share time."""
        while not self._ended and not self._urgent and self._unsent:
            wait = min(self._noted_at.values()) + SHARE_AFTER_SECS - time.monotonic()
            if wait <= 0:
                return
            self._wake.clear()
            with suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._wake.wait()

    def _due_rows(self) -> dict[str, RunningQuery]:
        shared_before = time.monotonic() - SHARE_AFTER_SECS
        due = {query_id: query for query_id, query in self._unsent.items()
               if query_id in self._urgent or self._noted_at[query_id] <= shared_before}
        for query_id in due:
            del self._unsent[query_id]
            del self._noted_at[query_id]
            self._urgent.discard(query_id)
        return due

    def _as_plan(self, stored: StoredPlan) -> AsyncPlan:
        if stored.owner_lost:
            return AsyncPlan(stored.plan_id, stored.tenant, "failed",
                             problem=self.problem_form(replica_stopped(stored.plan_id)))
        return AsyncPlan(stored.plan_id, stored.tenant, stored.status, stored.plan,  # type: ignore[arg-type]
                         stored.problem)

    def _batch_finished(self) -> None:
        self._sending = set()
        self._batch_done.set()
        self._batch_done = asyncio.Event()
