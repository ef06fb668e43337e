"""query registry: asynchronous plans and running queries, shared by every query-api replica

Revision ID: 2026_11_27_0013
Revises: 2026_11_27_0012
Create Date: 2026-11-27

Behind the proxy a poll, a cancel or a DELETE of a plan may reach any replica of query-api, not the one that took
the plan or runs the query. Plans are recorded here with their status and, once finished, the body or problem the
API answers, so any replica reads them; running queries are recorded with a cancel flag their owner polls
(`strata_query.shared_registry`).
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "2026_11_27_0013"
down_revision = "2026_11_27_0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "query_plans",
        sa.Column("plan_id", sa.String(26), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=True),
        sa.Column("owner", sa.String(300), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("plan", postgresql.JSONB(), nullable=True),
        sa.Column("problem", postgresql.JSONB(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.CheckConstraint("status IN ('submitted', 'completed', 'failed', 'cancelled')",
                           name="ck_query_plans_query_plan_status"),
        sa.PrimaryKeyConstraint("plan_id", name="pk_query_plans"),
    )
    op.create_index("ix_query_plans_updated_at", "query_plans", ["updated_at"])
    op.create_table(
        "running_queries",
        sa.Column("query_id", sa.String(26), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=True),
        sa.Column("owner", sa.String(300), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("query_id", name="pk_running_queries"),
    )
    op.create_index("ix_running_queries_seen_at", "running_queries", ["seen_at"])


def downgrade() -> None:
    op.drop_index("ix_running_queries_seen_at", table_name="running_queries")
    op.drop_table("running_queries")
    op.drop_index("ix_query_plans_updated_at", table_name="query_plans")
    op.drop_table("query_plans")
