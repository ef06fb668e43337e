"""compaction debt: sampled history, and the indexes that keep the debt's reads cheap

Revision ID: 2026_11_27_0010
Revises: 2026_11_26_0009
Create Date: 2026-11-27

`compaction_debt_samples` holds one row per index and sampling bucket, written by planner-api's metrics refresh
(every replica tries; the primary key keeps the first) and trimmed to the last hour: the console's chart of debt
over the last minutes. Two partial indexes serve the debt's aggregates: published splits by creation time (the
ones not yet mature are the recent ones) and successful jobs by finish time (the merge rate and first-merge delays
read the last minutes of jobs that are otherwise kept forever).
"""

import sqlalchemy as sa
from alembic import op

revision = "2026_11_27_0010"
down_revision = "2026_11_26_0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "compaction_debt_samples",
        sa.Column("index_uid", sa.String(96), nullable=False),
        sa.Column("sampled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("splits_waiting", sa.BigInteger(), nullable=False),
        sa.Column("bytes_waiting", sa.BigInteger(), nullable=False),
        sa.Column("closed_windows_not_final", sa.Integer(), nullable=False),
        sa.Column("oldest_waiting_split_age_secs", sa.Double(), nullable=True),
        sa.Column("indexing_files_waiting", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("index_uid", "sampled_at", name="pk_compaction_debt_samples"),
        sa.ForeignKeyConstraint(["index_uid"], ["indexes.index_uid"], ondelete="CASCADE",
                                name="fk_compaction_debt_samples_index_uid_indexes"),
    )
    op.create_index("ix_compaction_debt_samples_sampled_at", "compaction_debt_samples", ["sampled_at"])
    op.create_index("ix_splits_published_created", "splits", ["index_uid", "created_at"],
                    postgresql_where=sa.text("state = 'published'"))
    op.create_index("ix_compaction_jobs_index_finished", "compaction_jobs", ["index_uid", "finished_at"],
                    postgresql_where=sa.text("status = 'success'"))


def downgrade() -> None:
    op.drop_index("ix_compaction_jobs_index_finished", table_name="compaction_jobs")
    op.drop_index("ix_splits_published_created", table_name="splits")
    op.drop_table("compaction_debt_samples")
