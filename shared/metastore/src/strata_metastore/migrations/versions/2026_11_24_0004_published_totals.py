"""published_totals: exact file and byte counts of each (index, partition)'s published splits

Revision ID: 2026_11_24_0004
Revises: 2026_11_21_0003
Create Date: 2026-11-24

A query plan reports, as its first stage's "before", what the index holds without any pruning. Counting a
million split rows per plan is too slow, and a cached count drifts from the candidates a plan reads (an ingest
adds files the cache has not counted, so a stage would report more files after it than before). The counts are
kept by a trigger on `splits`, in the same transaction as every change of a split's state, so a plan that reads
them and its candidates in one snapshot sees numbers that agree. The trigger, not the repositories, keeps them:
every path that publishes, replaces or deletes splits is covered, including ones added later.
"""

import sqlalchemy as sa
from alembic import op

revision = "2026_11_24_0004"
down_revision = "2026_11_21_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "published_totals",
        sa.Column("index_uid", sa.String(96), nullable=False),
        sa.Column("partition_id", sa.String(128), nullable=False),
        sa.Column("files", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["index_uid"], ["indexes.index_uid"], ondelete="CASCADE",
                                name="fk_published_totals_index_uid_indexes"),
        sa.PrimaryKeyConstraint("index_uid", "partition_id", name="pk_published_totals"),
    )
    op.execute("""
        CREATE FUNCTION strata_count_published() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.state = 'published' THEN
                UPDATE published_totals SET files = files - 1, bytes = bytes - OLD.size_bytes
                 WHERE index_uid = OLD.index_uid AND partition_id = OLD.partition_id;
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.state = 'published' THEN
                INSERT INTO published_totals AS t (index_uid, partition_id, files, bytes)
                VALUES (NEW.index_uid, NEW.partition_id, 1, NEW.size_bytes)
                ON CONFLICT (index_uid, partition_id)
                DO UPDATE SET files = t.files + 1, bytes = t.bytes + EXCLUDED.bytes;
            END IF;
            RETURN NULL;
        END $$
    """)
    # Statement-level work would be cheaper for large batches, but row-level keeps the function obvious and a
    # registration batch of 1,000 splits costs about a millisecond more (docs/benchmarks.md, registration).
    op.execute("""
        CREATE TRIGGER splits_count_published
        AFTER INSERT OR DELETE OR UPDATE OF state, size_bytes, partition_id, index_uid ON splits
        FOR EACH ROW EXECUTE FUNCTION strata_count_published()
    """)
    op.execute("""
        INSERT INTO published_totals (index_uid, partition_id, files, bytes)
        SELECT index_uid, partition_id, count(*), coalesce(sum(size_bytes), 0)
          FROM splits WHERE state = 'published' GROUP BY index_uid, partition_id
    """)


def downgrade() -> None:
    op.execute("DROP TRIGGER splits_count_published ON splits")
    op.execute("DROP FUNCTION strata_count_published()")
    op.drop_table("published_totals")
