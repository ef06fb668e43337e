"""delete unchanged: a covered split whose rewrite found no matching row keeps its file

Revision ID: 2026_11_28_0016
Revises: 2026_11_28_0015
Create Date: 2026-11-28

Split statistics cannot rule out many splits that hold no row a delete matches. Their rewrite writes nothing: the
delete's coverage of such a split ends as `unchanged` (no rows removed, no new split) and the split stays published.
"""

from alembic import op

revision = "2026_11_28_0016"
down_revision = "2026_11_28_0015"
branch_labels = None
depends_on = None

_NAME = "ck_delete_splits_delete_split_state"


def upgrade() -> None:
    op.drop_constraint(op.f(_NAME), "delete_splits", type_="check")
    op.create_check_constraint(op.f(_NAME), "delete_splits",
                               "state IN ('pending', 'rewriting', 'rewritten', 'merged', 'cancelled', 'unchanged')")


def downgrade() -> None:
    # The split kept its rows and no delete hides any there: the coverage is done, as a rewrite with none removed.
    op.execute("UPDATE delete_splits SET state = 'rewritten' WHERE state = 'unchanged'")
    op.drop_constraint(op.f(_NAME), "delete_splits", type_="check")
    op.create_check_constraint(op.f(_NAME), "delete_splits",
                               "state IN ('pending', 'rewriting', 'rewritten', 'merged', 'cancelled')")
