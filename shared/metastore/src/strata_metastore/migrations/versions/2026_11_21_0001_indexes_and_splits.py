"""indexes, splits and typed per-column split statistics

Revision ID: 2026_11_21_0001
Revises:
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "2026_11_21_0001"
down_revision = None
branch_labels = None
depends_on = None

SPLIT_STATES = ("staged", "published", "marked_for_deletion", "deleted")
VALUE_TYPES = ("string", "i64", "u64", "f64", "null")


def upgrade() -> None:
    op.create_table(
        "indexes",
        sa.Column("index_uid", sa.String(96), primary_key=True),
        sa.Column("index_id", sa.String(64), nullable=False),
        sa.Column("incarnation", sa.String(26), nullable=False),
        sa.Column("config", postgresql.JSONB(), nullable=False),
        sa.Column("doc_mapping_uid", sa.String(32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("index_uid", name="pk_indexes"),
    )
    op.create_index("uq_indexes_live_index_id", "indexes", ["index_id"], unique=True,
                    postgresql_where=sa.text("deleted_at IS NULL"))

    split_state = postgresql.ENUM(*SPLIT_STATES, name="split_state", create_type=False)
    split_state.create(op.get_bind())
    op.create_table(
        "splits",
        sa.Column("split_id", sa.String(26), nullable=False),
        sa.Column("index_uid", sa.String(96), nullable=False),
        sa.Column("source_id", sa.String(128), nullable=False),
        sa.Column("partition_id", sa.String(128), nullable=False),
        sa.Column("doc_mapping_uid", sa.String(32), nullable=False),
        sa.Column("sort_schema", sa.Text(), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("window_duration_secs", sa.Integer(), nullable=False),
        sa.Column("time_range_start", sa.BigInteger(), nullable=True),
        sa.Column("time_range_end", sa.BigInteger(), nullable=True),
        sa.Column("num_rows", sa.BigInteger(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("uri", sa.Text(), nullable=False),
        sa.Column("row_groups", postgresql.JSONB(), nullable=False),
        sa.Column("num_merge_ops", sa.Integer(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("root_split_ids", postgresql.ARRAY(sa.String(26)), nullable=False),
        sa.Column("state", split_state, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("marked_for_deletion_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("split_id", name="pk_splits"),
        sa.ForeignKeyConstraint(["index_uid"], ["indexes.index_uid"], ondelete="CASCADE",
                                name="fk_splits_index_uid_indexes"),
        sa.UniqueConstraint("uri", name="uq_splits_uri"),
        sa.CheckConstraint("window_duration_secs IN (60,120,180,240,300,360,600,720,900,1200,1800,3600)",
                           name="ck_splits_tw2_window_duration"),
        sa.CheckConstraint("window_start % window_duration_secs = 0", name="ck_splits_window_aligned"),
        sa.CheckConstraint(
            "time_range_start IS NULL OR (time_range_start >= window_start "
            "AND time_range_end < window_start + window_duration_secs)",
            name="ck_splits_tw1_one_window",
        ),
    )
    op.create_index("ix_splits_index_state_window", "splits", ["index_uid", "state", "window_start", "split_id"])
    op.create_index("ix_splits_index_window", "splits", ["index_uid", "window_start", "split_id"])
    op.create_index("ix_splits_time_range", "splits",
                    [sa.text("int8range(time_range_start, time_range_end, '[]')")], postgresql_using="gist")

    value_type = postgresql.ENUM(*VALUE_TYPES, name="column_value_type", create_type=False)
    value_type.create(op.get_bind())
    op.create_table(
        "split_column_stats",
        sa.Column("split_id", sa.String(26), nullable=False),
        sa.Column("column_name", sa.String(128), nullable=False),
        sa.Column("value_type", value_type, nullable=False),
        sa.Column("min_string", sa.Text(), nullable=True),
        sa.Column("max_string", sa.Text(), nullable=True),
        sa.Column("min_i64", sa.BigInteger(), nullable=True),
        sa.Column("max_i64", sa.BigInteger(), nullable=True),
        sa.Column("min_u64", sa.Numeric(20, 0), nullable=True),
        sa.Column("max_u64", sa.Numeric(20, 0), nullable=True),
        sa.Column("min_f64", sa.Double(), nullable=True),
        sa.Column("max_f64", sa.Double(), nullable=True),
        sa.Column("null_count", sa.BigInteger(), nullable=False),
        sa.Column("regex", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("split_id", "column_name", name="pk_split_column_stats"),
        sa.ForeignKeyConstraint(["split_id"], ["splits.split_id"], ondelete="CASCADE",
                                name="fk_split_column_stats_split_id_splits"),
    )


def downgrade() -> None:
    op.drop_table("split_column_stats")
    op.execute("DROP TYPE column_value_type")
    op.drop_index("ix_splits_time_range", table_name="splits")
    op.drop_index("ix_splits_index_window", table_name="splits")
    op.drop_index("ix_splits_index_state_window", table_name="splits")
    op.drop_table("splits")
    op.execute("DROP TYPE split_state")
    op.drop_index("uq_indexes_live_index_id", table_name="indexes")
    op.drop_table("indexes")
