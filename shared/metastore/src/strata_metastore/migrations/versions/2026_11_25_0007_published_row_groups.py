"""published_totals also counts row groups and row-group bytes

Revision ID: 2026_11_25_0007
Revises: 2026_11_25_0006
Create Date: 2026-11-25

A plan's stages are a funnel: each stage's "before" is the previous stage's "after". The first stage (time range)
starts from the whole index, which the counters give; they held files and file bytes only, while every later stage
counts row groups and the bytes of the row groups (what a scan reads). The first stage therefore reported the row
groups of its candidate windows as the index's, and its file bytes "after" did not match the next stage's
row-group bytes "before". Counting row groups and row-group bytes here, by the same trigger, gives the funnel one
unit from start to end.

`strata_row_group_bytes` is the one definition of a split's row-group bytes in SQL (the planner's candidates
statement uses it too): the sum of its row groups' byte lengths, or the file's size when the split records none
(as `SplitSummary.row_group_bytes` in Python).
"""

import sqlalchemy as sa
from alembic import op

revision = "2026_11_25_0007"
down_revision = "2026_11_25_0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("published_totals", sa.Column("row_groups", sa.BigInteger(), nullable=False, server_default="0"))
    op.add_column("published_totals",
                  sa.Column("row_group_bytes", sa.BigInteger(), nullable=False, server_default="0"))
    # Inlined by the planner (one SELECT of an expression, no FROM at its top).
    op.execute("""
        CREATE FUNCTION strata_row_group_bytes(row_groups jsonb, size_bytes bigint) RETURNS bigint
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
            SELECT CASE WHEN jsonb_array_length(row_groups) > 0
                        THEN (SELECT sum(CAST(rg ->> 'byte_length' AS bigint))
                              FROM jsonb_array_elements(row_groups) AS rg)
                        ELSE size_bytes END
        $$
    """)
    op.execute("""
        CREATE OR REPLACE FUNCTION strata_count_published() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.state = 'published' THEN
                UPDATE published_totals
                   SET files = files - 1, bytes = bytes - OLD.size_bytes,
                       row_groups = row_groups - jsonb_array_length(OLD.row_groups),
                       row_group_bytes = row_group_bytes - strata_row_group_bytes(OLD.row_groups, OLD.size_bytes)
                 WHERE index_uid = OLD.index_uid AND partition_id = OLD.partition_id;
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.state = 'published' THEN
                INSERT INTO published_totals AS t (index_uid, partition_id, files, bytes, row_groups, row_group_bytes)
                VALUES (NEW.index_uid, NEW.partition_id, 1, NEW.size_bytes, jsonb_array_length(NEW.row_groups),
                        strata_row_group_bytes(NEW.row_groups, NEW.size_bytes))
                ON CONFLICT (index_uid, partition_id)
                DO UPDATE SET files = t.files + 1, bytes = t.bytes + EXCLUDED.bytes,
                              row_groups = t.row_groups + EXCLUDED.row_groups,
                              row_group_bytes = t.row_group_bytes + EXCLUDED.row_group_bytes;
            END IF;
            RETURN NULL;
        END $$
    """)
    op.execute("DROP TRIGGER splits_count_published ON splits")
    op.execute("""
        CREATE TRIGGER splits_count_published
        AFTER INSERT OR DELETE OR UPDATE OF state, size_bytes, row_groups, partition_id, index_uid ON splits
        FOR EACH ROW EXECUTE FUNCTION strata_count_published()
    """)
    op.execute("""
        UPDATE published_totals AS t SET row_groups = s.row_groups, row_group_bytes = s.row_group_bytes
          FROM (SELECT index_uid, partition_id, coalesce(sum(jsonb_array_length(row_groups)), 0) AS row_groups,
                       coalesce(sum(strata_row_group_bytes(row_groups, size_bytes)), 0) AS row_group_bytes
                  FROM splits WHERE state = 'published' GROUP BY index_uid, partition_id) AS s
         WHERE t.index_uid = s.index_uid AND t.partition_id = s.partition_id
    """)


def downgrade() -> None:
    op.execute("DROP TRIGGER splits_count_published ON splits")
    op.execute("""
        CREATE OR REPLACE FUNCTION strata_count_published() RETURNS trigger LANGUAGE plpgsql AS $$
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
    op.execute("""
        CREATE TRIGGER splits_count_published
        AFTER INSERT OR DELETE OR UPDATE OF state, size_bytes, partition_id, index_uid ON splits
        FOR EACH ROW EXECUTE FUNCTION strata_count_published()
    """)
    op.execute("DROP FUNCTION strata_row_group_bytes(jsonb, bigint)")
    op.drop_column("published_totals", "row_group_bytes")
    op.drop_column("published_totals", "row_groups")
