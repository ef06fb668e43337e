"""maintenance skips: what a periodic pass could not handle, listed for operators

Revision ID: 2026_11_27_0011
Revises: 2026_11_27_0010
Create Date: 2026-11-27

`maintenance_skips` holds one row per (pass, entry) that a garbage-collection, retention, janitor or planning pass
skipped (a file outside the storage root, one that cannot be deleted, an unreadable artifact, an index whose
planning raises), with the reason, when it was first and last met and how many passes met it. A pass upserts what
it skipped and deletes the rows of the entries it has since handled or no longer met.
"""

import sqlalchemy as sa
from alembic import op

revision = "2026_11_27_0011"
down_revision = "2026_11_27_0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "maintenance_skips",
        sa.Column("skip_id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("pass", sa.String(32), nullable=False),
        sa.Column("index_id", sa.String(64), nullable=True),
        sa.Column("entry", sa.Text(), nullable=False),
        sa.Column("reason_class", sa.String(128), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("first_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("skip_id", name="pk_maintenance_skips"),
        sa.UniqueConstraint("pass", "entry", name="uq_maintenance_skips_pass_entry"),
        sa.CheckConstraint("pass IN ('gc', 'retention', 'janitor', 'compaction-planning', 'indexing-planning')",
                           name="ck_maintenance_skips_known_pass"),
    )
    op.create_index("ix_maintenance_skips_pass_index", "maintenance_skips", ["pass", "index_id"])


def downgrade() -> None:
    op.drop_index("ix_maintenance_skips_pass_index", table_name="maintenance_skips")
    op.drop_table("maintenance_skips")
