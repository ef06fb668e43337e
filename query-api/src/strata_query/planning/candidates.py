"""Where the pruning cascade's candidates come from: a `CandidateSource` reads, in one go, what the index holds
for the caller's tenant, which of its files meet the query's time range, and those files with their published
artifacts. A source may also apply split statistics ahead of the cascade (PostgreSQL does, in the same statement:
`metastore/split_pruning.py`); what it rules out that way is counted but never sent, and the cascade's
`split_min_max` stage then decides on the rest with the Python reference.

Production reads the metastore (`MetastoreCandidates`); the cascade's property tests read files held in memory
(`tests/query_logic/in_memory_candidates.py`) and run the very same stages on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.split import SplitMetadata, SplitSummary
from strata_core.query.artifact_pruning import PublishedArtifact
from strata_core.query.predicate import Predicate
from strata_core.query.time_range import TimeRanges
from strata_metastore.indexing_repository import IndexingRepository
from strata_metastore.repositories import SplitRepository


@dataclass(frozen=True, slots=True)
class Tally:
    """Files, their row groups and the bytes of those row groups: the units every stage is counted in."""

    files: int
    row_groups: int
    bytes: int

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.files + other.files, self.row_groups + other.row_groups, self.bytes + other.bytes)

    def __sub__(self, other: Tally) -> Tally:
        return Tally(self.files - other.files, self.row_groups - other.row_groups, self.bytes - other.bytes)

    @classmethod
    def of_splits(cls, splits: Iterable[SplitSummary]) -> Tally:
        files = row_groups = group_bytes = 0
        for split in splits:
            files += 1
            row_groups += split.num_row_groups
            group_bytes += split.row_group_bytes
        return cls(files, row_groups, group_bytes)


NOTHING = Tally(0, 0, 0)


@dataclass(slots=True)
class CandidateFile:
    split: SplitMetadata
    # None: the file has no published snapshot (its artifacts are not visible yet).
    artifacts: list[PublishedArtifact] | None


@dataclass(frozen=True, slots=True)
class CandidateQuery:
    """What a source needs to find a query's candidates."""

    tenant: str | None
    # In seconds, like split time ranges and windows.
    ranges: TimeRanges
    # In negation normal form.
    predicate: Predicate
    window_duration_secs: int
    # Predicate columns that are columns of the split itself (one value per split), by their column in `splits`.
    split_columns: Mapping[str, str]
    # Predicate columns whose statistics the candidates carry, and those a source may prune on ahead of the
    # cascade (leaving one out only keeps more files).
    stats_columns: frozenset[str]
    prune_columns: frozenset[str]
    # At most this many files are sent; more is reported as `truncated`.
    limit: int


@dataclass(frozen=True, slots=True)
class CandidateRead:
    """One consistent read of a query's candidates."""

    # Every published file of the index for the tenant: what a query would read without any pruning.
    published: Tally
    # The files whose time range meets the query's, and their earliest start (None: none has a start) and how
    # many have none (null timestamps only).
    in_time_range: Tally
    min_time_range_start: int | None
    null_time_range_starts: int
    # Of the files in the time range, those the source's own split statistics did not rule out, with their
    # artifacts (none when truncated).
    files: list[CandidateFile]
    # More than the query's limit of files would have been sent.
    truncated: bool


class CandidateSource(Protocol):
    async def read(self, query: CandidateQuery) -> CandidateRead:
        """The query's candidates, every count and file from one snapshot."""
        ...


class MetastoreCandidates:
    """The published splits and artifact snapshots of one index incarnation in PostgreSQL. `session` must be in
    the plan's read-only REPEATABLE READ transaction, so the counts and the files are one snapshot."""

    def __init__(self, session: AsyncSession, index_uid: str) -> None:
        self.session = session
        self.index_uid = index_uid

    async def read(self, query: CandidateQuery) -> CandidateRead:
        splits = SplitRepository(self.session)
        totals = await splits.published_totals(self.index_uid, query.tenant)
        published = Tally(totals.files, totals.row_groups, totals.row_group_bytes)
        if query.ranges.is_empty:
            return CandidateRead(published, NOTHING, None, 0, [], False)
        window = query.window_duration_secs
        lo, hi = query.ranges.lower, query.ranges.upper
        # Time range and split min/max in one statement: only the splits it cannot rule out come back (a busy
        # range has hundreds of candidates and keeps a few), with the counts of every candidate.
        found = await splits.published_candidates(
            self.index_uid, query.tenant, None if lo is None else lo - lo % window, hi,
            include_window_zero=query.ranges.includes_null, ranges=query.ranges, predicate=query.predicate,
            split_columns=query.split_columns, stats_columns=set(query.stats_columns),
            prune_columns=set(query.prune_columns), limit=query.limit)
        in_time_range = Tally(found.files, found.row_groups, found.row_group_bytes)
        if found.truncated:
            # The plan is refused: reading the files' artifacts would be wasted.
            return CandidateRead(published, in_time_range, found.min_time_range_start,
                                 found.null_time_range_starts, [], True)
        published_artifacts = await IndexingRepository(self.session).published_artifacts(
            [m.split_id for m in found.splits])
        files = [CandidateFile(m, None if m.split_id not in published_artifacts else [
            PublishedArtifact(a.artifact_type, a.column_name, a.uri, a.content_hash)
            for a in published_artifacts[m.split_id]]) for m in found.splits]
        return CandidateRead(published, in_time_range, found.min_time_range_start, found.null_time_range_starts,
                             files, False)
