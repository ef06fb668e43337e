"""The pruning cascade: an ordered list of stages (`planning/stages.py`, `CASCADE`) run over a query's candidates
by one loop, which counts the files, row groups and bytes before and after each stage, as EXPLAIN shows them.

A stage only ever removes a file or row group that its own evidence proves cannot hold a matching row, so the
cascade never drops a matching row (`tests/query_logic/test_cascade_never_drops.py` runs this loop and these
stages on real files and artifacts). The loop starts from every published file the source counted; the candidates
a stage passes on are the files in hand plus, right after the read, those the source counted but did not send
(see `Candidates.unsent`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from strata_core.domain.split import SplitSummary
from strata_core.query.predicate import Predicate, Value, columns_of
from strata_query.planning.caches import ArtifactCache, FooterCache
from strata_query.planning.candidates import NOTHING, CandidateFile, CandidateRead, Tally
from strata_query.planning.plan import FilePart, StageCount


@dataclass(slots=True)
class LiveFile:
    """A candidate still in the running, with the row groups it still may need."""

    candidate: CandidateFile
    row_groups: list[int]
    loaded: dict[tuple[str, str], object] = field(default_factory=dict)
    # Set by read shaping: what a scan of this file reads.
    part: FilePart | None = None

    def tally(self) -> Tally:
        if self.part is not None:
            return Tally(1, len(self.part.row_groups), self.part.bytes)
        spans = self.candidate.split.row_groups
        group_bytes = sum(spans[g].byte_length for g in self.row_groups) if spans else self.candidate.split.size_bytes
        return Tally(1, len(self.row_groups), group_bytes)

    def artifact(self, cache: ArtifactCache, artifact_type: str, column: str):
        """The file's published artifact of that type and column, decoded; None when it has none (or it cannot be
        read: the stage then prunes without it)."""
        key = (artifact_type, column)
        if key not in self.loaded:
            found = next((a for a in self.candidate.artifacts or []
                          if (a.artifact_type, a.column) == key), None)
            self.loaded[key] = None if found is None else cache.get(found.uri, found.content_hash)
        return self.loaded[key]


@dataclass(slots=True)
class Candidates:
    """The candidates between two stages: the files in hand, plus those the source counted but did not send
    (`unsent`: the files in the time range its own split statistics ruled out, or every published file before
    the time range is applied)."""

    files: list[LiveFile]
    unsent: Tally = NOTHING

    def tally(self) -> Tally:
        total = self.unsent
        for f in self.files:
            total += f.tally()
        return total


@dataclass(frozen=True, slots=True)
class CascadeContext:
    """What every stage may consult: the source's read, the query's predicate (NNF), and what to read."""

    read: CandidateRead
    predicate: Predicate
    # Columns that are split metadata (one value per split, not in the file), pruned on at the split stage only.
    split_constants: Mapping[str, Callable[[SplitSummary], Value]]
    needed_columns: frozenset[str]
    artifacts: ArtifactCache
    footers: FooterCache
    predicate_columns: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "predicate_columns",
                           frozenset(columns_of(self.predicate)) - frozenset(self.split_constants))


class Stage(Protocol):
    name: str

    def narrow(self, candidates: Candidates, context: CascadeContext) -> Candidates:
        """The candidates this stage cannot rule out (files, and within them row groups)."""
        ...


@dataclass(slots=True)
class CascadeResult:
    stages: list[StageCount]
    files: list[FilePart]


def run_cascade(stages: Sequence[Stage], context: CascadeContext) -> CascadeResult:
    """Every stage in order, each counted. Blocking (footers and artifacts are read from storage): planning calls
    it in a worker thread. The last stage must shape the reads (`ReadShaping`)."""
    candidates = Candidates([], unsent=context.read.published)
    counts = []
    for stage in stages:
        before = candidates.tally()
        candidates = stage.narrow(candidates, context)
        after = candidates.tally()
        counts.append(StageCount(stage.name, before.files, after.files, before.row_groups, after.row_groups,
                                 before.bytes, after.bytes))
    parts = [f.part for f in candidates.files]
    if candidates.unsent != NOTHING or any(part is None for part in parts):
        raise ValueError("the cascade must end with read shaping, every candidate in hand")
    return CascadeResult(counts, parts)  # type: ignore[arg-type]
