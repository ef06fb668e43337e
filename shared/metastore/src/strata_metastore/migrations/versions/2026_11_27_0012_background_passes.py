"""background passes: one lease per named periodic pass, shared by every replica

Revision ID: 2026_11_27_0012
Revises: 2026_11_27_0011
Create Date: 2026-11-27

Every replica of planner-api and indexer-api ticks its periodic passes (garbage collection, retention, the janitor,
debt samples); a pass runs only in the replica that claims its row here (`strata_frame.web.singleton`), so it
runs once per interval across the replicas, and moves to another replica when its holder dies and the lease
expires. The row also tells an operator who ran the pass last, when, and how it ended.
"""

import sqlalchemy as sa
from alembic import op

revision = "2026_11_27_0012"
down_revision = "2026_11_27_0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "background_passes",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("holder", sa.String(300), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("name", name="pk_background_passes"),
    )


def downgrade() -> None:
    op.drop_table("background_passes")
