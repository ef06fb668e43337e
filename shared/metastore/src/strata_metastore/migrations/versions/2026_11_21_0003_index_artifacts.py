"""indexing jobs, index artifacts, artifact snapshots

Revision ID: 2026_11_21_0003
Revises: 2026_11_21_0002
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "2026_11_21_0003"
down_revision = "2026_11_21_0002"
branch_labels = None
depends_on = None

JOB_STATUSES = ("unassigned", "in_progress", "success", "excluded", "cancelled")


def _lease_columns() -> list[sa.Column]:
    job_status = postgresql.ENUM(*JOB_STATUSES, name="job_status", create_type=False)
    return [
        sa.Column("status", job_status, nullable=False),
        sa.Column("fencing_token", sa.BigInteger(), nullable=True),
        sa.Column("worker_id", sa.String(128), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("failure_log", postgresql.JSONB(), nullable=False),
        sa.Column("stage", sa.String(32), nullable=True),
        sa.Column("progress", sa.Double(), nullable=False),
        sa.Column("spark_operation_tag", sa.String(128), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("first_assigned_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("assigned_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "indexing_jobs",
        sa.Column("job_id", sa.String(26), nullable=False),
        sa.Column("split_id", sa.String(26), nullable=False),
        sa.Column("index_uid", sa.String(96), nullable=False),
        sa.Column("partition_id", sa.String(128), nullable=False),
        sa.Column("reason", sa.String(16), nullable=False),
        sa.Column("artifact_count", sa.Integer(), nullable=True),
        sa.Column("artifact_bytes", sa.BigInteger(), nullable=True),
        sa.Column("skipped", postgresql.JSONB(), nullable=False),
        *_lease_columns(),
        sa.ForeignKeyConstraint(["split_id"], ["splits.split_id"], ondelete="CASCADE",
                                name="fk_indexing_jobs_split_id_splits"),
        sa.ForeignKeyConstraint(["index_uid"], ["indexes.index_uid"], ondelete="CASCADE",
                                name="fk_indexing_jobs_index_uid_indexes"),
        sa.PrimaryKeyConstraint("job_id", name="pk_indexing_jobs"),
    )
    op.create_index("uq_indexing_jobs_live_split", "indexing_jobs", ["split_id"], unique=True,
                    postgresql_where=sa.text("status IN ('unassigned', 'in_progress')"))
    op.create_index("ix_indexing_jobs_queue", "indexing_jobs", ["status", "created_at"])
    op.create_index("ix_indexing_jobs_index", "indexing_jobs", ["index_uid", "job_id"])

    op.create_table(
        "index_artifacts",
        sa.Column("artifact_id", sa.String(26), nullable=False),
        sa.Column("split_id", sa.String(26), nullable=False),
        sa.Column("index_uid", sa.String(96), nullable=False),
        sa.Column("artifact_type", sa.String(16), nullable=False),
        sa.Column("column_name", sa.String(128), nullable=False),
        sa.Column("format_version", sa.Integer(), nullable=False),
        sa.Column("uri", sa.Text(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("content_hash", sa.String(80), nullable=False),
        sa.Column("registered_by", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.ForeignKeyConstraint(["split_id"], ["splits.split_id"], ondelete="CASCADE",
                                name="fk_index_artifacts_split_id_splits"),
        sa.ForeignKeyConstraint(["index_uid"], ["indexes.index_uid"], ondelete="CASCADE",
                                name="fk_index_artifacts_index_uid_indexes"),
        sa.PrimaryKeyConstraint("artifact_id", name="pk_index_artifacts"),
        sa.UniqueConstraint("split_id", "artifact_type", "column_name", "format_version",
                            name="uq_index_artifacts_identity"),
    )
    op.create_index("ix_index_artifacts_uri", "index_artifacts", ["uri"], unique=True)

    op.create_table(
        "artifact_snapshots",
        sa.Column("split_id", sa.String(26), nullable=False),
        sa.Column("index_uid", sa.String(96), nullable=False),
        sa.Column("manifest_uri", sa.Text(), nullable=False),
        sa.Column("published", sa.Boolean(), nullable=False),
        sa.Column("artifact_ids", postgresql.JSONB(), nullable=False),
        sa.Column("published_by", sa.String(64), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.ForeignKeyConstraint(["split_id"], ["splits.split_id"], ondelete="CASCADE",
                                name="fk_artifact_snapshots_split_id_splits"),
        sa.ForeignKeyConstraint(["index_uid"], ["indexes.index_uid"], ondelete="CASCADE",
                                name="fk_artifact_snapshots_index_uid_indexes"),
        sa.PrimaryKeyConstraint("split_id", name="pk_artifact_snapshots"),
    )
    op.create_index("ix_artifact_snapshots_index", "artifact_snapshots", ["index_uid", "published"])


def downgrade() -> None:
    op.drop_table("artifact_snapshots")
    op.drop_table("index_artifacts")
    op.drop_table("indexing_jobs")
