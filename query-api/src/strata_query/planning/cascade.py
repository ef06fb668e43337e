"""The pruning cascade over candidate files, counted stage by stage:

  split min/max  ->  zone maps (row groups)  ->  blooms and bitmaps (= and IN)  ->  full-text  ->  read shaping

Each stage only ever removes a file or row group that its own evidence proves cannot hold a matching row
(`strata_shared.query.pruning`), so the cascade never drops a matching row. A file without a published snapshot
is pruned with its Parquet footer statistics at the zone-map stage and passes the artifact stages untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from strata_query.planning.caches import ArtifactCache, FooterCache
from strata_query.planning.row_group_ranges import (
    absent_columns,
    column_byte_ranges,
    column_bytes,
    ranges_from_footer,
    ranges_from_zone_map,
)
from strata_shared.domain.split import SplitMetadata, SplitSummary
from strata_shared.query.predicate import Predicate, Value, columns_of
from strata_shared.query.pruning import ColumnRange, MembershipOracle, RangeOracle, TextOracle, may_match


@dataclass(frozen=True, slots=True)
class PublishedArtifact:
    artifact_type: str
    column: str
    uri: str
    content_hash: str


@dataclass(slots=True)
class CandidateFile:
    split: SplitMetadata
    # None: the file has no published snapshot (its artifacts are not visible yet).
    artifacts: list[PublishedArtifact] | None


@dataclass(frozen=True, slots=True)
class StageCount:
    stage: str
    files_before: int
    files_after: int
    row_groups_before: int
    row_groups_after: int
    bytes_before: int
    bytes_after: int


@dataclass(slots=True)
class FilePart:
    split_id: str
    partition_id: str
    uri: str
    row_groups: list[int]
    row_group_rows: list[int]
    byte_ranges: list[list[tuple[int, int]]]
    columns: list[str]
    bytes: int
    rows: int
    pruned_with: str


@dataclass(slots=True)
class CascadeResult:
    stages: list[StageCount] = field(default_factory=list)
    files: list[FilePart] = field(default_factory=list)


@dataclass(slots=True)
class _Live:
    candidate: CandidateFile
    row_groups: list[int]
    loaded: dict[tuple[str, str], object] = field(default_factory=dict)

    def group_bytes(self) -> int:
        spans = self.candidate.split.row_groups
        return sum(spans[g].byte_length for g in self.row_groups) if spans else self.candidate.split.size_bytes

    def artifact(self, cache: ArtifactCache, artifact_type: str, column: str):
        key = (artifact_type, column)
        if key not in self.loaded:
            found = next((a for a in self.candidate.artifacts or []
                          if (a.artifact_type, a.column) == key), None)
            self.loaded[key] = None if found is None else cache.get(found.uri, found.content_hash)
        return self.loaded[key]


def _count(stage: str, before: list[_Live], after: list[_Live], rg_before: int, bytes_before: int) -> StageCount:
    return StageCount(stage, len(before), len(after), rg_before, sum(len(f.row_groups) for f in after),
                      bytes_before, sum(f.group_bytes() for f in after))


def _totals(files: list[_Live]) -> tuple[int, int]:
    return sum(len(f.row_groups) for f in files), sum(f.group_bytes() for f in files)


def _num_groups(split: SplitMetadata, footers: FooterCache) -> int:
    # Registered files always carry their row-group spans; the footer answers for any that would not.
    return len(split.row_groups) if split.row_groups else footers.get(split.uri).num_row_groups


def passes_split_stats(pred: Predicate, split: SplitSummary,
                       constants: Mapping[str, Callable[[SplitSummary], Value]]) -> bool:
    """May the split hold a matching row, by its stored statistics and metadata columns?"""
    stats = {name: ColumnRange.from_column_stats(st, split.num_rows) for name, st in split.column_stats.items()}
    for name, value_of in constants.items():
        value = value_of(split)
        stats[name] = ColumnRange(value, value, 0, split.num_rows)
    return may_match(pred, RangeOracle(stats))


def split_min_max(pred: Predicate, splits: list[SplitSummary],
                  constants: Mapping[str, Callable[[SplitSummary], Value]]) -> tuple[list[SplitSummary], StageCount]:
    """Stage 1 on every candidate's summary, the reference the planner's SQL (`published_candidates`) follows."""
    kept = [s for s in splits if passes_split_stats(pred, s, constants)]
    return kept, split_stage_count(
        (len(splits), sum(s.num_row_groups for s in splits), sum(s.row_group_bytes for s in splits)), kept)


def split_stage_count(before: tuple[int, int, int], kept: list[SplitSummary]) -> StageCount:
    """Stage 1's counts: `before` is (files, row groups, row-group bytes) of every candidate, `kept` its survivors."""
    files, row_groups, group_bytes = before
    return StageCount("split_min_max", files, len(kept), row_groups, sum(s.num_row_groups for s in kept),
                      group_bytes, sum(s.row_group_bytes for s in kept))


def run_full_cascade(pred: Predicate, candidates: list[CandidateFile], needed_columns: set[str],
                     artifacts: ArtifactCache, footers: FooterCache,
                     split_constants: Mapping[str, Callable[[SplitSummary], Value]] | None = None) -> CascadeResult:
    """Every stage over candidates whose full metadata is at hand (the planner reads summaries first instead)."""
    constants = dict(split_constants or {})
    kept, stage = split_min_max(pred, [c.split.summary() for c in candidates], constants)
    survivors = {s.split_id for s in kept}
    return run_cascade(pred, stage, [c for c in candidates if c.split.split_id in survivors], needed_columns,
                       artifacts, footers, constants)


def run_cascade(pred: Predicate, split_stage: StageCount, survivors: list[CandidateFile], needed_columns: set[str],
                artifacts: ArtifactCache, footers: FooterCache,
                split_constants: Mapping[str, Callable[[SplitSummary], Value]] | None = None) -> CascadeResult:
    """The stages after split min/max (`split_stage`, whose kept files are `survivors`).

    `split_constants`: columns that are split metadata (one value per split, not in the file), pruned on at the
    split stage only."""
    result = CascadeResult(stages=[split_stage])
    predicate_columns = set(columns_of(pred)) - set(split_constants or {})
    # Row groups are counted from the stored spans; the footer is read only for a file without them.
    files = [_Live(c, list(range(_num_groups(c.split, footers)))) for c in survivors]

    # 2. zone maps: row groups by their min/max (the published zone map, else the Parquet footer).
    rg_before, bytes_before = _totals(files)
    kept = []
    for f in files:
        zone_map = f.artifact(artifacts, "zone_map", "") if f.candidate.artifacts is not None else None
        absent: frozenset[str] = frozenset()
        if zone_map is not None:
            ranges = ranges_from_zone_map(zone_map, predicate_columns)
        else:
            metadata = footers.get(f.candidate.split.uri)
            ranges = ranges_from_footer(metadata, predicate_columns)
            absent = absent_columns(metadata, predicate_columns)
        if len(ranges) == len(f.row_groups):
            f.row_groups = [g for g in f.row_groups if may_match(pred, RangeOracle(ranges[g], absent))]
        if f.row_groups:
            kept.append(f)
    result.stages.append(_count("zone_maps", files, kept, rg_before, bytes_before))
    files = kept

    # 3. blooms and bitmaps: = and IN, per file (bloom) and per row group (bloom, exact bitmap).
    rg_before, bytes_before = _totals(files)
    kept = []
    for f in files:
        if f.candidate.artifacts is not None and not _membership_prune(pred, f, artifacts, predicate_columns):
            continue
        if f.row_groups:
            kept.append(f)
    result.stages.append(_count("blooms_bitmaps", files, kept, rg_before, bytes_before))
    files = kept

    # 4. full-text: row groups whose text index holds every term of a text_match.
    rg_before, bytes_before = _totals(files)
    kept = []
    for f in files:
        full_text = f.artifact(artifacts, "full_text", "") if f.candidate.artifacts is not None else None
        if full_text is not None:
            memo: dict[tuple[str, tuple[str, ...]], set[int] | None] = {}

            def groups_of(column: str, terms: tuple[str, ...], index=full_text, memo=memo) -> set[int] | None:
                if (column, terms) not in memo:
                    memo[(column, terms)] = index.row_groups_matching(column, list(terms))
                return memo[(column, terms)]

            f.row_groups = [g for g in f.row_groups if may_match(pred, TextOracle(
                lambda column, terms, g=g: None if (found := groups_of(column, terms)) is None else g in found))]
        if f.row_groups:
            kept.append(f)
    result.stages.append(_count("full_text", files, kept, rg_before, bytes_before))
    files = kept

    # 5. read shaping: only the needed columns of the kept row groups are fetched.
    rg_before, bytes_before = _totals(files)
    for f in files:
        split = f.candidate.split
        metadata = footers.get(split.uri)
        f.row_groups = [g for g in f.row_groups if g < metadata.num_row_groups]
        result.files.append(FilePart(
            split_id=split.split_id, partition_id=split.partition_id, uri=split.uri, row_groups=f.row_groups,
            row_group_rows=[metadata.row_group(g).num_rows for g in f.row_groups],
            byte_ranges=[column_byte_ranges(metadata, g, needed_columns) for g in f.row_groups],
            columns=sorted(needed_columns), bytes=column_bytes(metadata, f.row_groups, needed_columns),
            rows=sum(metadata.row_group(g).num_rows for g in f.row_groups),
            pruned_with="artifacts" if f.candidate.artifacts is not None else "parquet_statistics"))
    result.stages.append(StageCount("read_shaping", len(files), len(files), rg_before, rg_before, bytes_before,
                                    sum(p.bytes for p in result.files)))
    return result


def _membership_prune(pred: Predicate, f: _Live, cache: ArtifactCache, columns: set[str]) -> bool:
    """Narrow f.row_groups with its blooms and bitmaps; False when the whole file is ruled out."""
    blooms = {c: b for c in columns if (b := f.artifact(cache, "bloom", c)) is not None}
    bitmaps = {c: b for c in columns if (b := f.artifact(cache, "bitmap", c)) is not None}
    if not blooms and not bitmaps:
        return True
    file_probes = {}
    for column, bloom in blooms.items():
        file_probes[column] = lambda values, bloom=bloom: bloom.might_contain(list(values))
    for column, bitmap in bitmaps.items():
        file_probes[column] = lambda values, bitmap=bitmap: bool(bitmap.row_groups_containing(list(values)))
    if not may_match(pred, MembershipOracle(file_probes)):
        return False
    memo: dict[tuple[str, tuple], set[int]] = {}

    def groups(column: str, values: tuple) -> set[int]:
        if (column, values) not in memo:
            if column in bitmaps:
                memo[(column, values)] = bitmaps[column].row_groups_containing(list(values))
            else:
                memo[(column, values)] = blooms[column].row_groups_maybe_containing(list(values))
        return memo[(column, values)]

    f.row_groups = [g for g in f.row_groups if may_match(pred, MembershipOracle(
        {c: (lambda values, c=c, g=g: g in groups(c, tuple(values))) for c in (*blooms, *bitmaps)}))]
    return bool(f.row_groups)
