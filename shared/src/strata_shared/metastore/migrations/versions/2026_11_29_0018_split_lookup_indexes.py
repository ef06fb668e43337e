"""split lookup indexes: published splits read from their own index, replaced ones found without a table walk

Revision ID: 2026_11_29_0018
Revises: 2026_11_29_0017
Create Date: 2026-11-29

Measured with `bench.bench_metastore_growth` (docs/benchmarks.md, "Metastore growth"):

- `ix_splits_published_window`: the published splits of an index by window, carrying every column the plan's
  candidate statement (`SplitRepository.published_candidates`) and its counts read, so that statement is an
  index-only scan of the published rows of the queried windows, however many replaced, staged or older rows the
  table holds; only the few survivors' full rows come from the table.
- `ix_splits_marked_for_deletion`: GC pages through the splits marked for deletion in split id order
  (`SplitRepository.deletable`). Without it that page walked the (index, state, window) index over every row of
  the table, as long as the table whatever the backlog; partial, it holds the backlog only.
"""

from alembic import op

revision = "2026_11_29_0018"
down_revision = "2026_11_29_0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX ix_splits_published_window ON splits (index_uid, window_start, split_id) "
        "INCLUDE (partition_id, time_range_start, time_range_end, num_rows, size_bytes, num_row_groups, "
        "row_group_bytes) WHERE state = 'published'")
    op.execute(
        "CREATE INDEX ix_splits_marked_for_deletion ON splits (split_id) WHERE state = 'marked_for_deletion'")


def downgrade() -> None:
    op.execute("DROP INDEX ix_splits_marked_for_deletion")
    op.execute("DROP INDEX ix_splits_published_window")
