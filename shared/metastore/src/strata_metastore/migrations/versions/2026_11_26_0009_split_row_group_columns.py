"""splits keep their row-group count and row-group bytes as stored columns

Revision ID: 2026_11_26_0009
Revises: 2026_11_25_0008
Create Date: 2026-11-26

The planner's candidates statement counts what every candidate of the query's windows holds (the first stage's
"after"): their row groups and row-group bytes, read from each split's `row_groups` JSON. At 1,000,000 splits
that aggregate over the 694 candidates of two windows took 5 of the statement's 9.5 ms (EXPLAIN ANALYZE): every
row's JSON detoasted, its array walked by `strata_row_group_bytes`. Both values are fixed when a split is
written, so PostgreSQL computes them then, once, as generated columns; the statement sums two integers per
candidate. The definitions stay the ones the counters use (`strata_row_group_bytes`, the array's length).

Adding stored columns rewrites `splits` and its indexes once: 37 s for the EXPLAIN benchmark's 1,000,000 splits
on the 2-core benchmark machine.
"""

from alembic import op

revision = "2026_11_26_0009"
down_revision = "2026_11_25_0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
        ALTER TABLE splits
          ADD COLUMN num_row_groups integer GENERATED ALWAYS AS (coalesce(jsonb_array_length(row_groups), 0)) STORED,
          ADD COLUMN row_group_bytes bigint GENERATED ALWAYS AS (strata_row_group_bytes(row_groups, size_bytes))
            STORED
    """)


def downgrade() -> None:
    op.execute("ALTER TABLE splits DROP COLUMN row_group_bytes, DROP COLUMN num_row_groups")
