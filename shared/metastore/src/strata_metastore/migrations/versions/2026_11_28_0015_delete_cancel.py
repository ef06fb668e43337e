"""delete cancel: a covered split's coverage can end as cancelled

Revision ID: 2026_11_28_0015
Revises: 2026_11_27_0014
Create Date: 2026-11-28

A delete cancelled before any of its rewrites published stops hiding rows: each of its `delete_splits` rows ends
as `cancelled` (kept, so the delete still shows what it covered) and is no longer in force.
"""

from alembic import op

revision = "2026_11_28_0015"
down_revision = "2026_11_27_0014"
branch_labels = None
depends_on = None

# 0014 spelled the name out and the naming convention prefixed it again; the new one is the model's name.
_OLD_NAME = "ck_delete_splits_ck_delete_splits_delete_split_state"
_NAME = "ck_delete_splits_delete_split_state"


def upgrade() -> None:
    op.drop_constraint(op.f(_OLD_NAME), "delete_splits", type_="check")
    op.create_check_constraint(op.f(_NAME), "delete_splits",
                               "state IN ('pending', 'rewriting', 'rewritten', 'merged', 'cancelled')")


def downgrade() -> None:
    op.execute("DELETE FROM delete_splits WHERE state = 'cancelled'")
    op.drop_constraint(op.f(_NAME), "delete_splits", type_="check")
    op.create_check_constraint(op.f(_OLD_NAME), "delete_splits",
                               "state IN ('pending', 'rewriting', 'rewritten', 'merged')")
