"""The stages of the pruning cascade, in the order `CASCADE` runs them (`planning/cascade.py` is the loop):

  time_range  ->  split_min_max  ->  zone_maps  ->  blooms_bitmaps  ->  full_text  ->  read_shaping

Where each decision lives:

- `time_range`: the candidate source applies it (`planning/candidates.py`; in PostgreSQL, `published_candidates`
  with its `_in_time` condition); the stage takes the files it read.
- `split_min_max`: split statistics, in two halves. The source may apply the SQL form first
  (`strata_shared.metastore.split_pruning`), which never rules out a split the reference keeps and keeps it where
  it is unsure; the stage then runs the Python reference (`strata_shared.query.pruning.split_may_match`) on what
  was sent, so the plan is the one the reference alone would make.
- `zone_maps`: row groups by their min/max, from the published zone map or, for a file without a snapshot, the
  Parquet footer (`planning/row_group_ranges.py`), decided by `RangeOracle`.
- `blooms_bitmaps`: `=` and `IN`, per file and per row group, decided by `MembershipOracle`.
- `full_text`: `text_match`, per row group, decided by `TextOracle`.
- `read_shaping`: per kept file, its row groups' column-chunk byte ranges and the columns a scan reads.

The oracles (`strata_shared.query.pruning`) answer "may match" unless their evidence rules the unit out; a file
without a published snapshot passes the artifact stages untouched.
"""

from __future__ import annotations

from strata_query.planning.caches import FooterCache
from strata_query.planning.cascade import Candidates, CascadeContext, LiveFile
from strata_query.planning.plan import FilePart
from strata_query.planning.row_group_ranges import (
    absent_columns,
    coalesced_reads,
    column_byte_ranges,
    column_bytes,
    ranges_from_footer,
    ranges_from_zone_map,
)
from strata_shared.domain.split import SplitMetadata
from strata_shared.query.pruning import MembershipOracle, RangeOracle, TextOracle, may_match, split_may_match


def _num_groups(split: SplitMetadata, footers: FooterCache) -> int:
    # Registered files always carry their row-group spans; the footer answers for any that would not.
    return len(split.row_groups) if split.row_groups else footers.get(split.uri).num_row_groups


class TimeRange:
    name = "time_range"

    def narrow(self, candidates: Candidates, context: CascadeContext) -> Candidates:
        read = context.read
        # Row groups are counted from the stored spans; the footer is read only for a file without them.
        files = [LiveFile(c, list(range(_num_groups(c.split, context.footers)))) for c in read.files]
        sent = Candidates(files).tally()
        return Candidates(files, unsent=read.in_time_range - sent)


class SplitStatistics:
    name = "split_min_max"

    def narrow(self, candidates: Candidates, context: CascadeContext) -> Candidates:
        # What the source left unsent, its SQL form of this rule ruled out already.
        return Candidates([f for f in candidates.files if split_may_match(
            context.predicate, f.candidate.split.summary(), context.split_constants)])


class ZoneMaps:
    name = "zone_maps"

    def narrow(self, candidates: Candidates, context: CascadeContext) -> Candidates:
        pred, columns = context.predicate, context.predicate_columns
        kept = []
        for f in candidates.files:
            zone_map = f.artifact(context.artifacts, "zone_map", "") if f.candidate.artifacts is not None else None
            absent: frozenset[str] = frozenset()
            if zone_map is not None:
                ranges = ranges_from_zone_map(zone_map, columns)
            else:
                metadata = context.footers.get(f.candidate.split.uri)
                ranges = ranges_from_footer(metadata, columns)
                absent = absent_columns(metadata, columns)
            if len(ranges) == len(f.row_groups):
                f.row_groups = [g for g in f.row_groups if may_match(pred, RangeOracle(ranges[g], absent))]
            if f.row_groups:
                kept.append(f)
        return Candidates(kept)


class Membership:
    """Blooms and bitmaps: = and IN, per file (bloom) and per row group (bloom, exact bitmap)."""

    name = "blooms_bitmaps"

    def narrow(self, candidates: Candidates, context: CascadeContext) -> Candidates:
        return Candidates([f for f in candidates.files
                           if f.candidate.artifacts is None or self._narrow_file(f, context)])

    @staticmethod
    def _narrow_file(f: LiveFile, context: CascadeContext) -> bool:
        """Narrow f.row_groups with its blooms and bitmaps; False when the whole file is ruled out."""
        pred, cache, columns = context.predicate, context.artifacts, context.predicate_columns
        blooms = {c: b for c in columns if (b := f.artifact(cache, "bloom", c)) is not None}
        bitmaps = {c: b for c in columns if (b := f.artifact(cache, "bitmap", c)) is not None}
        if not blooms and not bitmaps:
            return bool(f.row_groups)
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


class FullText:
    """Row groups whose full-text index holds every term of a text_match."""

    name = "full_text"

    def narrow(self, candidates: Candidates, context: CascadeContext) -> Candidates:
        kept = []
        for f in candidates.files:
            full_text = (f.artifact(context.artifacts, "full_text", "")
                         if f.candidate.artifacts is not None else None)
            if full_text is not None:
                memo: dict[tuple[str, tuple[str, ...]], set[int] | None] = {}

                def groups_of(column: str, terms: tuple[str, ...], index=full_text, memo=memo) -> set[int] | None:
                    if (column, terms) not in memo:
                        memo[(column, terms)] = index.row_groups_matching(column, list(terms))
                    return memo[(column, terms)]

                f.row_groups = [g for g in f.row_groups if may_match(context.predicate, TextOracle(
                    lambda column, terms, g=g: None if (found := groups_of(column, terms)) is None else g in found))]
            if f.row_groups:
                kept.append(f)
        return Candidates(kept)


class ReadShaping:
    """Only the needed columns of the kept row groups are fetched: per file, their byte ranges and sizes."""

    name = "read_shaping"

    def narrow(self, candidates: Candidates, context: CascadeContext) -> Candidates:
        needed = context.needed_columns
        for f in candidates.files:
            split = f.candidate.split
            metadata = context.footers.get(split.uri)
            f.row_groups = [g for g in f.row_groups if g < metadata.num_row_groups]
            byte_ranges = [column_byte_ranges(metadata, g, needed) for g in f.row_groups]
            f.part = FilePart(
                split_id=split.split_id, partition_id=split.partition_id, uri=split.uri, row_groups=f.row_groups,
                row_group_rows=[metadata.row_group(g).num_rows for g in f.row_groups],
                byte_ranges=byte_ranges, ranged_gets=[coalesced_reads(ranges) for ranges in byte_ranges],
                columns=sorted(needed), bytes=column_bytes(metadata, f.row_groups, needed),
                rows=sum(metadata.row_group(g).num_rows for g in f.row_groups),
                pruned_with="artifacts" if f.candidate.artifacts is not None else "parquet_statistics")
        return candidates


CASCADE = (TimeRange(), SplitStatistics(), ZoneMaps(), Membership(), FullText(), ReadShaping())
