"""deletes: row-level delete requests and the splits each one covers

Revision ID: 2026_11_27_0014
Revises: 2026_11_27_0013
Create Date: 2026-11-27

A delete is a predicate over an index accepted at one point of its publication history: it covers the published
splits its split statistics cannot rule out at that point, one `delete_splits` row each. Until a fenced rewrite
job replaces a covered split, query plans hide the rows the predicate matches in it; a merge that consumes a
covered split passes the coverage on to its outputs (so it never publishes deleted rows back). The rows stay as
the delete's receipt: every split rewritten, its replacement, the rows it held and the rows removed.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "2026_11_27_0014"
down_revision = "2026_11_27_0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deletes",
        sa.Column("delete_id", sa.String(26), nullable=False),
        sa.Column("index_uid", sa.String(96), nullable=False),
        sa.Column("partition_id", sa.String(128), nullable=True),
        sa.Column("where_sql", sa.Text(), nullable=False),
        sa.Column("predicate", postgresql.JSONB(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("requested_by", sa.String(128), nullable=True),
        sa.Column("cutoff_generation", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("accepted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("status IN ('pending', 'running', 'succeeded', 'failed', 'cancelled')",
                           name="ck_deletes_delete_status"),
        sa.ForeignKeyConstraint(["index_uid"], ["indexes.index_uid"], ondelete="CASCADE",
                                name="fk_deletes_index_uid_indexes"),
        sa.PrimaryKeyConstraint("delete_id", name="pk_deletes"),
    )
    op.create_index("ix_deletes_index_uid", "deletes", ["index_uid", "delete_id"])
    op.create_table(
        "delete_splits",
        sa.Column("delete_id", sa.String(26), nullable=False),
        sa.Column("split_id", sa.String(26), nullable=False),
        sa.Column("index_uid", sa.String(96), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("job_id", sa.String(26), nullable=True),
        sa.Column("rows_before", sa.BigInteger(), nullable=False),
        sa.Column("rows_removed", sa.BigInteger(), nullable=True),
        sa.Column("new_split_ids", postgresql.ARRAY(sa.String(26)), server_default="{}", nullable=False),
        sa.Column("inherited_from", sa.String(26), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("state IN ('pending', 'rewriting', 'rewritten', 'merged')",
                           name="ck_delete_splits_delete_split_state"),
        sa.ForeignKeyConstraint(["delete_id"], ["deletes.delete_id"], ondelete="CASCADE",
                                name="fk_delete_splits_delete_id_deletes"),
        sa.PrimaryKeyConstraint("delete_id", "split_id", name="pk_delete_splits"),
    )
    # What query plans and the rewrite planner look up: the coverage still in force, by split.
    op.create_index("ix_delete_splits_in_force", "delete_splits", ["split_id"],
                    postgresql_where=sa.text("state IN ('pending', 'rewriting')"))


def downgrade() -> None:
    op.drop_index("ix_delete_splits_in_force", table_name="delete_splits")
    op.drop_table("delete_splits")
    op.drop_index("ix_deletes_index_uid", table_name="deletes")
    op.drop_table("deletes")
