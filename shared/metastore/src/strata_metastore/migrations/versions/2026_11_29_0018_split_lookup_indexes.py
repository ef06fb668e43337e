"""split lookup indexes: published splits read from their own index, replaced ones found without a table walk

Revision ID: 2026_11_29_0018
Revises: 2026_11_29_0017
Create Date: 2026-11-29

Measured with `bench.bench_metastore_growth` (docs/benchmarks.md, "Metastore growth"):

- `ix_splits_published_window`: the published splits of an index by window, carrying every column the plan's
  candidate statement (`SplitRepository.published_candidates`) and its counts read, so that statement is an
  index-only scan of the published rows of the queried windows, however many replaced, staged or older rows the
  table holds; only the few survivors' full rows come from the table.
- `ix_splits_marked_for_deletion`: GC pages through the splits marked for deletion in mark order
  (`SplitRepository.deletable`). Without it that page walked the (index, state, window) index over every row of
  the table, as long as the table whatever the backlog; partial and led by the mark time, it reads only the splits
  whose grace has passed (an index on split_id alone made GC's probe walk every split replaced within the grace).
- `ix_indexing_jobs_split`, `ix_compaction_job_inputs_split`: GC's DELETE of a page of splits cascades to their
  indexing jobs and merge claims (ON DELETE CASCADE), one lookup by split_id per deleted split. Only live jobs and
  live claims had an index on split_id (partial), so each lookup read the whole table, whose finished jobs number
  about as many as the splits ever published: deleting 1,000 splits took 22 s beside 100,000 finished indexing
  jobs, 77 ms with these indexes, and GC could not have kept the split table bounded.
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
        "CREATE INDEX ix_splits_marked_for_deletion ON splits (marked_for_deletion_at, split_id) "
        "WHERE state = 'marked_for_deletion'")
    op.execute("CREATE INDEX ix_indexing_jobs_split ON indexing_jobs (split_id)")
    op.execute("CREATE INDEX ix_compaction_job_inputs_split ON compaction_job_inputs (split_id)")


def downgrade() -> None:
    op.execute("DROP INDEX ix_compaction_job_inputs_split")
    op.execute("DROP INDEX ix_indexing_jobs_split")
    op.execute("DROP INDEX ix_splits_marked_for_deletion")
    op.execute("DROP INDEX ix_splits_published_window")
