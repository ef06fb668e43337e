"""The stages of the pruning cascade, in the order `CASCADE` runs them (`planning/cascade.py` is the loop):

  time_range  ->  split_min_max  ->  zone_maps  ->  blooms_bitmaps  ->  full_text  ->  read_shaping

Where each decision lives:

- `time_range`: the candidate source applies it (`planning/candidates.py`; in PostgreSQL, `published_candidates`
  with its `_in_time` condition); the stage takes the files it read.
- `split_min_max`: split statistics, in two halves. The source may apply the SQL form first
  (`strata_metastore.split_pruning`), which never rules out a split the reference keeps and keeps it where
  it is unsure; the stage then runs the Python reference (`strata_core.query.pruning.split_may_match`) on what
  was sent, so the plan is the one the reference alone would make.
- `zone_maps`: row groups by their min/max, from the published zone map or, for a file without a snapshot, the
  Parquet footer (`planning/row_group_ranges.py`), decided by `RangeOracle`.
- `blooms_bitmaps`: `=` and `IN`, per file and per row group, decided by `MembershipOracle`.
- `full_text`: `text_match`, per row group, decided by `TextOracle`.
- `read_shaping`: per kept file, its row groups' column-chunk byte ranges and the columns a scan reads.

The oracles (`strata_core.query.pruning`) answer "may match" unless their evidence rules the unit out; a file
without a published snapshot passes the artifact stages untouched. The artifact stages' decisions per file are
`strata_core.query.artifact_pruning`'s, which a delete's coverage runs too.
"""

from __future__ import annotations

from strata_core.domain.split import SplitMetadata
from strata_core.query.artifact_pruning import (
    full_text_row_groups,
    membership_row_groups,
    ranged_row_groups,
    ranges_from_zone_map,
)
from strata_core.query.pruning import split_may_match
from strata_query.planning.caches import FooterCache
from strata_query.planning.cascade import Candidates, CascadeContext, LiveFile
from strata_query.planning.plan import FilePart
from strata_query.planning.row_group_ranges import (
    absent_columns,
    coalesced_reads,
    column_byte_ranges,
    column_bytes,
    ranges_from_footer,
)


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
            if zone_map is not None:
                f.row_groups = ranged_row_groups(pred, ranges_from_zone_map(zone_map, columns), f.row_groups)
            else:
                metadata = context.footers.get(f.candidate.split.uri)
                f.row_groups = ranged_row_groups(pred, ranges_from_footer(metadata, columns), f.row_groups,
                                                 absent_columns(metadata, columns))
            if f.row_groups:
                kept.append(f)
        return Candidates(kept)


class Membership:
    """Blooms and bitmaps: = and IN, per file (bloom) and per row group (bloom, exact bitmap)."""

    name = "blooms_bitmaps"

    def narrow(self, candidates: Candidates, context: CascadeContext) -> Candidates:
        kept = []
        for f in candidates.files:
            if f.candidate.artifacts is not None:
                f.row_groups = membership_row_groups(context.predicate, context.predicate_columns,
                                                     lambda t, c, f=f: f.artifact(context.artifacts, t, c),
                                                     f.row_groups)
            if f.row_groups:
                kept.append(f)
        return Candidates(kept)


class FullText:
    """Row groups whose full-text index holds every term of a text_match."""

    name = "full_text"

    def narrow(self, candidates: Candidates, context: CascadeContext) -> Candidates:
        kept = []
        for f in candidates.files:
            if f.candidate.artifacts is not None:
                f.row_groups = full_text_row_groups(context.predicate,
                                                    lambda t, c, f=f: f.artifact(context.artifacts, t, c),
                                                    f.row_groups)
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
