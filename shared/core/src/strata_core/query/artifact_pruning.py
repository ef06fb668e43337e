"""The artifact stages of the pruning cascade, for one file: which of its row groups its published index artifacts
(zone map, blooms, bitmaps, full-text index) cannot rule out for a predicate.

Two callers, one code: query-api's cascade runs each function as a stage over a query's candidates
(`strata_query/planning/stages.py`), and a delete's acceptance runs them all over each split that split statistics
leave it (`splits_ruled_out`), so a delete covers, and its rewrites read, only the splits that may hold a row it
matches. Every answer is "may match" unless an artifact's evidence rules the unit out (the oracles of
`strata_core.query.pruning`); an artifact that is missing, not published or unreadable (`ArtifactOf` answers
None) rules nothing out, so a file without artifacts keeps every row group.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from strata_core.artifacts import ArtifactFormatError, load_artifact
from strata_core.query.predicate import (
    Atom,
    Predicate,
    PredicateVisitor,
    TextMatch,
    Unknown,
    columns_of,
    visit,
)
from strata_core.query.pruning import ColumnRange, MembershipOracle, RangeOracle, TextOracle, may_match
from strata_core.storage import ObjectStore

log = logging.getLogger("strata.artifacts")

# (artifact type, column) -> the file's published artifact of that type and column, decoded; None when it has
# none or it cannot be read. Per-file types (zone map, full text) have the column "".
ArtifactOf = Callable[[str, str], Any]


@dataclass(frozen=True, slots=True)
class PublishedArtifact:
    """An artifact listed by its file's published snapshot: where it lies and the hash it was registered with."""

    artifact_type: str
    column: str
    uri: str
    content_hash: str


def read_artifact(storage: ObjectStore, uri: str, content_hash: str) -> tuple[Any | None, int]:
    """The decoded artifact and a size to account it by; None when it cannot be read, fails its checks or is not
    the object that was registered (pruning then goes on without it: only less pruning, never a wrong answer)."""
    try:
        with storage.open_input(uri) as source:
            data = source.read()
        header, artifact = load_artifact(data)
    except (OSError, ArtifactFormatError) as exc:
        log.warning("artifact %s unusable, pruning without it: %s", uri, exc)
        return None, 1
    if header.content_hash != content_hash:
        log.warning("artifact %s changed since it was registered, pruning without it", uri)
        return None, 1
    # Decoded artifacts are larger than their compressed bytes; a factor keeps a cache's bound honest.
    return artifact, len(data) * 4


# --- the stages ------------------------------------------------------------------------------------------------


def ranges_from_zone_map(zone_map, columns: Iterable[str]) -> list[dict[str, ColumnRange]]:
    wanted = set(columns)
    out = []
    for group in zone_map.row_groups:
        ranges = {}
        for name, zone in group.columns.items():
            if name in wanted:
                # The zone map counts NaNs (left out of min/max), so float columns prune from above too.
                ranges[name] = ColumnRange(zone.min, zone.max, zone.null_count, group.num_rows, zone.nan_count)
        out.append(ranges)
    return out


def ranged_row_groups(pred: Predicate, ranges: Sequence[Mapping[str, ColumnRange]], row_groups: Sequence[int],
                      absent: frozenset[str] = frozenset()) -> list[int]:
    """The row groups per-row-group min/max (a zone map, or a footer's statistics) cannot rule out. Ranges that
    do not describe every row group asked about prove nothing."""
    if any(g >= len(ranges) for g in row_groups):
        return list(row_groups)
    return [g for g in row_groups if may_match(pred, RangeOracle(ranges[g], absent))]


def membership_row_groups(pred: Predicate, columns: Iterable[str], artifact_of: ArtifactOf,
                          row_groups: Sequence[int]) -> list[int]:
    """`=` and IN against the file's blooms (file filter, then per row group) and bitmaps (exact per row group);
    [] when the whole file is ruled out."""
    blooms = {c: b for c in columns if (b := artifact_of("bloom", c)) is not None}
    bitmaps = {c: b for c in columns if (b := artifact_of("bitmap", c)) is not None}
    if not blooms and not bitmaps:
        return list(row_groups)
    file_probes = {}
    for column, bloom in blooms.items():
        file_probes[column] = lambda values, bloom=bloom: bloom.might_contain(list(values))
    for column, bitmap in bitmaps.items():
        file_probes[column] = lambda values, bitmap=bitmap: bool(bitmap.row_groups_containing(list(values)))
    if not may_match(pred, MembershipOracle(file_probes)):
        return []
    memo: dict[tuple[str, tuple], set[int]] = {}

    def groups(column: str, values: tuple) -> set[int]:
        if (column, values) not in memo:
            if column in bitmaps:
                memo[(column, values)] = bitmaps[column].row_groups_containing(list(values))
            else:
                memo[(column, values)] = blooms[column].row_groups_maybe_containing(list(values))
        return memo[(column, values)]

    return [g for g in row_groups if may_match(pred, MembershipOracle(
        {c: (lambda values, c=c, g=g: g in groups(c, tuple(values))) for c in (*blooms, *bitmaps)}))]


def has_text_match(pred: Predicate) -> bool:
    """Whether a text_match atom is there for a full-text index to decide (`may_match` never looks inside an
    Unknown, so neither does this)."""
    return visit(pred, _HasTextMatch())


class _HasTextMatch(PredicateVisitor[bool]):
    def visit_const(self, value: bool) -> bool:
        return False

    def visit_and(self, results: Iterator[bool]) -> bool:
        return any(results)

    visit_or = visit_and

    def visit_not(self, result: bool) -> bool:
        return result

    def visit_unknown(self, pred: Unknown) -> bool:
        return False

    def visit_atom(self, atom: Atom) -> bool:
        return isinstance(atom, TextMatch)


def full_text_row_groups(pred: Predicate, artifact_of: ArtifactOf, row_groups: Sequence[int]) -> list[int]:
    """Row groups whose full-text index holds every term of a text_match. The index is loaded only when the
    predicate has one: it constrains nothing else."""
    if not has_text_match(pred) or (index := artifact_of("full_text", "")) is None:
        return list(row_groups)
    memo: dict[tuple[str, tuple[str, ...]], set[int] | None] = {}

    def groups_of(column: str, terms: tuple[str, ...]) -> set[int] | None:
        if (column, terms) not in memo:
            memo[(column, terms)] = index.row_groups_matching(column, list(terms))
        return memo[(column, terms)]

    return [g for g in row_groups if may_match(pred, TextOracle(
        lambda column, terms, g=g: None if (found := groups_of(column, terms)) is None else g in found))]


def artifact_row_groups(pred: Predicate, columns: Iterable[str], artifact_of: ArtifactOf,
                        row_groups: Sequence[int]) -> list[int]:
    """The artifact stages on one file with published artifacts: the row groups none of them rules out. Each
    decides a row group on its own evidence, so the order changes what is read, not the answer: blooms and
    bitmaps first, since for `=` and IN they rule most files out with one object, then the zone map and the
    full-text index only for what is left."""
    columns = frozenset(columns)
    kept = membership_row_groups(pred, columns, artifact_of, row_groups)
    if kept and (zone_map := artifact_of("zone_map", "")) is not None:
        kept = ranged_row_groups(pred, ranges_from_zone_map(zone_map, columns), kept)
    if kept:
        kept = full_text_row_groups(pred, artifact_of, kept)
    return kept


# --- a delete's coverage -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ArtifactCandidate:
    """A split split statistics could not rule out, with its published artifacts (None: no published snapshot)."""

    split_id: str
    num_row_groups: int
    artifacts: Sequence[PublishedArtifact] | None


# Artifacts are read for this many candidates at a time (object-store latency, not CPU, is what a delete over a
# long time range waits on), and no longer than the budget: a candidate not examined by then stays covered.
EXAMINE_THREADS = 8
EXAMINE_BUDGET_SECS = 20.0


def splits_ruled_out(pred: Predicate, split_constants: Iterable[str], candidates: Iterable[ArtifactCandidate],
                     storage: ObjectStore, *, budget_secs: float = EXAMINE_BUDGET_SECS) -> set[str]:
    """The ids of the candidates whose published artifacts prove that no row matches `pred` (negation normal
    form): every row group ruled out by the cascade's artifact stages. A split without a published snapshot, or
    whose artifacts do not cover the predicate's columns or cannot be read, is never among them, nor is one not
    examined within `budget_secs`. Blocking: reads artifacts from storage, only those the predicate's columns
    need, on a few threads."""
    columns = frozenset(columns_of(pred)) - frozenset(split_constants)
    deadline = time.monotonic() + budget_secs

    def ruled_out(candidate: ArtifactCandidate) -> bool:
        if candidate.artifacts is None or candidate.num_row_groups <= 0 or time.monotonic() >= deadline:
            return False
        by_key = {(a.artifact_type, a.column): a for a in candidate.artifacts}
        loaded: dict[tuple[str, str], Any] = {}

        def artifact_of(artifact_type: str, column: str) -> Any:
            key = (artifact_type, column)
            if key not in loaded:
                found = by_key.get(key)
                loaded[key] = None if found is None else read_artifact(storage, found.uri, found.content_hash)[0]
            return loaded[key]

        return not artifact_row_groups(pred, columns, artifact_of, range(candidate.num_row_groups))

    examined = list(candidates)
    if not examined:
        return set()
    with ThreadPoolExecutor(max_workers=min(EXAMINE_THREADS, len(examined)),
                            thread_name_prefix="strata-delete-artifacts") as pool:
        verdicts = list(pool.map(ruled_out, examined))
    return {c.split_id for c, out in zip(examined, verdicts, strict=True) if out}
