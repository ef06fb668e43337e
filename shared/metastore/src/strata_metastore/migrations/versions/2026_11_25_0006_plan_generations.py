"""plan_generations: a counter per index raised by every change of what a query plan reads

Revision ID: 2026_11_25_0006
Revises: 2026_11_25_0005
Create Date: 2026-11-25

query-api keeps the plans of repeated queries (dashboards re-run the same SQL every few seconds). A kept plan is
reused only while its index's generation, read in the same snapshot as the plan, has not moved: any split that
is or was published changing (published, replaced by a merge, marked for deletion, deleted) and any artifact
snapshot of the index changing raise it, in the same transaction as the change. As for `published_totals`,
triggers keep it, so every path that changes splits or artifacts, including ones added later, is covered. The
index's settings are covered by `indexes.version`, raised on every update.
"""

import sqlalchemy as sa
from alembic import op

revision = "2026_11_25_0006"
down_revision = "2026_11_25_0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "plan_generations",
        sa.Column("index_uid", sa.String(96), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["index_uid"], ["indexes.index_uid"], ondelete="CASCADE",
                                name="fk_plan_generations_index_uid_indexes"),
        sa.PrimaryKeyConstraint("index_uid", name="pk_plan_generations"),
    )
    # A deleted row only ever updates: its index may be going away in the same statement (ON DELETE CASCADE),
    # and an insert would then violate the foreign key. A row published before has its counter already.
    op.execute("""
        CREATE FUNCTION strata_bump_plan_generation() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            -- Nested: PL/pgSQL would look up `state` on an artifact snapshot's row in a single condition.
            IF TG_TABLE_NAME = 'splits' THEN
                IF NOT ((TG_OP <> 'INSERT' AND OLD.state = 'published')
                        OR (TG_OP <> 'DELETE' AND NEW.state = 'published')) THEN
                    RETURN NULL;
                END IF;
            END IF;
            IF TG_OP = 'DELETE' THEN
                UPDATE plan_generations SET generation = generation + 1 WHERE index_uid = OLD.index_uid;
            ELSE
                INSERT INTO plan_generations AS g (index_uid, generation) VALUES (NEW.index_uid, 1)
                ON CONFLICT (index_uid) DO UPDATE SET generation = g.generation + 1;
            END IF;
            RETURN NULL;
        END $$
    """)
    op.execute("""
        CREATE TRIGGER splits_bump_plan_generation AFTER INSERT OR DELETE OR UPDATE ON splits
        FOR EACH ROW EXECUTE FUNCTION strata_bump_plan_generation()
    """)
    op.execute("""
        CREATE TRIGGER artifact_snapshots_bump_plan_generation AFTER INSERT OR DELETE OR UPDATE ON artifact_snapshots
        FOR EACH ROW EXECUTE FUNCTION strata_bump_plan_generation()
    """)
    op.execute("INSERT INTO plan_generations (index_uid, generation) SELECT index_uid, 1 FROM indexes")


def downgrade() -> None:
    op.execute("DROP TRIGGER artifact_snapshots_bump_plan_generation ON artifact_snapshots")
    op.execute("DROP TRIGGER splits_bump_plan_generation ON splits")
    op.execute("DROP FUNCTION strata_bump_plan_generation()")
    op.drop_table("plan_generations")
