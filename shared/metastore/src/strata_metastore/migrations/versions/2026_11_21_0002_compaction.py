"""compaction jobs, claimed inputs, window planning state, fencing token sequence, split lineage

Revision ID: 2026_11_21_0002
Revises: 2026_11_21_0001
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "2026_11_21_0002"
down_revision = "2026_11_21_0001"
branch_labels = None
depends_on = None

JOB_STATUSES = ("unassigned", "in_progress", "success", "excluded", "cancelled")


def upgrade() -> None:
    op.execute("CREATE SEQUENCE compaction_fencing_token_seq")
    op.add_column("splits", sa.Column("parent_split_ids", postgresql.ARRAY(sa.String(26)), nullable=False,
                                      server_default="{}"))
    job_status = postgresql.ENUM(*JOB_STATUSES, name="job_status", create_type=False)
    job_status.create(op.get_bind())
    op.create_table(
        "compaction_jobs",
        sa.Column("job_id", sa.String(26), nullable=False),
        sa.Column("index_uid", sa.String(96), nullable=False),
        sa.Column("source_id", sa.String(128), nullable=False),
        sa.Column("partition_id", sa.String(128), nullable=False),
        sa.Column("doc_mapping_uid", sa.String(32), nullable=False),
        sa.Column("sort_schema", sa.Text(), nullable=False),
        sa.Column("window_duration_secs", sa.Integer(), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("level", sa.Integer(), nullable=False),
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
        sa.Column("input_split_ids", postgresql.ARRAY(sa.String(26)), nullable=False),
        sa.Column("input_rows", sa.BigInteger(), nullable=False),
        sa.Column("input_bytes", sa.BigInteger(), nullable=False),
        sa.Column("output_split_ids", postgresql.ARRAY(sa.String(26)), nullable=False),
        sa.Column("output_bytes", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("first_assigned_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("assigned_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("job_id", name="pk_compaction_jobs"),
        sa.ForeignKeyConstraint(["index_uid"], ["indexes.index_uid"], ondelete="CASCADE",
                                name="fk_compaction_jobs_index_uid_indexes"),
    )
    op.create_index("ix_compaction_jobs_queue", "compaction_jobs", ["status", "level", "failures", "lease_expires_at"])
    op.create_index("ix_compaction_jobs_index_window", "compaction_jobs", ["index_uid", "window_start"])
    op.create_table(
        "compaction_job_inputs",
        sa.Column("job_id", sa.String(26), nullable=False),
        sa.Column("split_id", sa.String(26), nullable=False),
        sa.Column("live", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("job_id", "split_id", name="pk_compaction_job_inputs"),
        sa.ForeignKeyConstraint(["job_id"], ["compaction_jobs.job_id"], ondelete="CASCADE",
                                name="fk_compaction_job_inputs_job_id_compaction_jobs"),
        sa.ForeignKeyConstraint(["split_id"], ["splits.split_id"], ondelete="CASCADE",
                                name="fk_compaction_job_inputs_split_id_splits"),
    )
    op.create_index("uq_compaction_job_inputs_live_split", "compaction_job_inputs", ["split_id"], unique=True,
                    postgresql_where=sa.text("live"))
    op.create_table(
        "compaction_windows",
        sa.Column("index_uid", sa.String(96), nullable=False),
        sa.Column("window_duration_secs", sa.Integer(), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("dirty", sa.Boolean(), nullable=False),
        sa.Column("final_planned", sa.Boolean(), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("planned_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_compacted_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("index_uid", "window_duration_secs", "window_start", name="pk_compaction_windows"),
        sa.ForeignKeyConstraint(["index_uid"], ["indexes.index_uid"], ondelete="CASCADE",
                                name="fk_compaction_windows_index_uid_indexes"),
    )
    op.create_index("ix_compaction_windows_dirty", "compaction_windows", ["index_uid"],
                    postgresql_where=sa.text("dirty"))


def downgrade() -> None:
    op.drop_index("ix_compaction_windows_dirty", table_name="compaction_windows")
    op.drop_table("compaction_windows")
    op.drop_index("uq_compaction_job_inputs_live_split", table_name="compaction_job_inputs")
    op.drop_table("compaction_job_inputs")
    op.drop_index("ix_compaction_jobs_index_window", table_name="compaction_jobs")
    op.drop_index("ix_compaction_jobs_queue", table_name="compaction_jobs")
    op.drop_table("compaction_jobs")
    op.execute("DROP TYPE job_status")
    op.drop_column("splits", "parent_split_ids")
    op.execute("DROP SEQUENCE compaction_fencing_token_seq")
