"""lifecycle: per-index pause of compaction and indexing, and when retention dropped a window

Revision ID: 2026_11_25_0005
Revises: 2026_11_24_0004
Create Date: 2026-11-25

Pausing is operator state, not configuration: it lives in its own columns of `indexes`, so a `PUT` of the
index's settings neither clears nor sets it. A window dropped by retention (or by an operator) keeps its
planning row with `dropped_at`, which the windows listing shows.
"""

import sqlalchemy as sa
from alembic import op

revision = "2026_11_25_0005"
down_revision = "2026_11_24_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("indexes", sa.Column("compaction_paused_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("indexes", sa.Column("indexing_paused_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("compaction_windows", sa.Column("dropped_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("compaction_windows", "dropped_at")
    op.drop_column("indexes", "indexing_paused_at")
    op.drop_column("indexes", "compaction_paused_at")
