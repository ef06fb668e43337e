"""A candidate source over files a test holds in memory, in place of the metastore: the cascade's stages run on
what it reads exactly as they do on what PostgreSQL reads. It applies the time range and the tenant, and leaves
split statistics wholly to the cascade's reference stage (PostgreSQL's SQL form only narrows ahead of it, never
ruling out a split the reference keeps: tests/metastore/test_split_pruning_sql.py)."""

from __future__ import annotations

from strata_query.planning.candidates import CandidateFile, CandidateQuery, CandidateRead, Tally


class InMemoryCandidates:
    def __init__(self, files: list[CandidateFile]) -> None:
        self.files = files

    async def read(self, query: CandidateQuery) -> CandidateRead:
        published = [f for f in self.files if query.tenant is None or f.split.partition_id == query.tenant]
        in_range = [f for f in published if _meets(query, f)]
        starts = [f.split.time_range_start for f in in_range]
        return CandidateRead(
            published=Tally.of_splits(f.split.summary() for f in published),
            in_time_range=Tally.of_splits(f.split.summary() for f in in_range),
            min_time_range_start=min((s for s in starts if s is not None), default=None),
            null_time_range_starts=sum(s is None for s in starts), files=in_range[:query.limit],
            truncated=len(in_range) > query.limit)


def _meets(query: CandidateQuery, f: CandidateFile) -> bool:
    split = f.split
    if split.time_range_start is None:
        return query.ranges.includes_null
    return query.ranges.overlaps(split.time_range_start, split.time_range_end)
