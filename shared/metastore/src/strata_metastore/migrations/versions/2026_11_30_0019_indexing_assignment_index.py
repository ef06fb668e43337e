"""indexing assignment index: a poll takes the head of the indexing queue in its order without sorting the queue

Revision ID: 2026_11_30_0019
Revises: 2026_11_29_0018
Create Date: 2026-11-30

An indexing poll leases the unassigned jobs first in `INDEXING_ASSIGNMENT_ORDER` (fewest failures, then oldest,
then job id). `ix_indexing_jobs_queue` (status, created_at) cannot give that order, so each poll read every
unassigned job and sorted them: 21.6 ms at 7,900 waiting builds of a 20,000-split backlog
(`bench.bench_soak --part backlog --backlog-splits 20000`), on every poll of a runner that gets at most 2 builds
a poll (the per-tenant cap). With the order as an index, the poll reads the head of the queue: 0.17 ms there.
"""

from alembic import op

revision = "2026_11_30_0019"
down_revision = "2026_11_29_0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX ix_indexing_jobs_assignment ON indexing_jobs (status, failures, created_at, job_id)")


def downgrade() -> None:
    op.execute("DROP INDEX ix_indexing_jobs_assignment")
