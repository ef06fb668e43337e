"""published_totals and plan_generations kept by statement-level triggers

Revision ID: 2026_11_25_0008
Revises: 2026_11_25_0007
Create Date: 2026-11-25

Both counters were kept by FOR EACH ROW triggers, each call updating one hot row per index (or per index and
partition): a statement writing N splits of one index updated the same row N times, and left N dead versions of
it. Loading 1,000,000 splits with COPY went from about 174 s to about 596 s once both existed; with the triggers
below the COPY took 34 s, against 873 s for the row triggers in a run of the same benchmark half an hour earlier
(docs/benchmarks.md, query (1)).
The same counts are now kept once per statement, from the statement's transition tables (every row
it inserted, or every row before and after it updated or deleted): one aggregated write per (index, partition)
for the totals, and one raise per affected index for the generation, in the same transaction as before.

What is counted is unchanged: the totals are the published splits' files, bytes, row groups and row-group bytes
(a statement's effect is what its new rows add minus what its old rows held, so an update that changes none of
them writes nothing), and the generation moves for every statement touching a split that is or was published,
and for every change of an artifact snapshot. It now moves by one per statement (a kept plan only compares it for
equality), and an update moving a published split to another index raises both indexes, where the row trigger
raised only the destination.

PostgreSQL allows transition tables only on triggers with a single event and no column list, hence three
triggers per table, one function per counter serving all three (`TG_OP` says which tables exist).
"""

from alembic import op

revision = "2026_11_25_0008"
down_revision = "2026_11_25_0007"
branch_labels = None
depends_on = None

EVENTS = {"INSERT": "REFERENCING NEW TABLE AS new_rows",
          "UPDATE": "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
          "DELETE": "REFERENCING OLD TABLE AS old_rows"}


def _statement_triggers(prefix: str, table: str, function: str) -> None:
    for event, referencing in EVENTS.items():
        op.execute(f"CREATE TRIGGER {prefix}_{event.lower()} AFTER {event} ON {table} {referencing} "
                   f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()")


def _drop_statement_triggers(prefix: str, table: str) -> None:
    for event in EVENTS:
        op.execute(f"DROP TRIGGER {prefix}_{event.lower()} ON {table}")


def upgrade() -> None:
    op.execute("DROP TRIGGER splits_count_published ON splits")
    op.execute("DROP TRIGGER splits_bump_plan_generation ON splits")
    op.execute("DROP TRIGGER artifact_snapshots_bump_plan_generation ON artifact_snapshots")
    # Deletes only ever update, as the row trigger did: a delete may be the cascade of its index's, whose
    # counters go in the same statement, and an insert would then violate their foreign key. Otherwise, a group
    # that gains a published split is upserted (the first split of a partition creates its row; ordered, so
    # concurrent statements lock the rows of several groups in one order); a group that only loses ones has its
    # row already, and the row trigger only updated it.
    op.execute("""
        CREATE OR REPLACE FUNCTION strata_count_published() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                INSERT INTO published_totals AS t (index_uid, partition_id, files, bytes, row_groups, row_group_bytes)
                SELECT index_uid, partition_id, count(*), sum(size_bytes), sum(jsonb_array_length(row_groups)),
                       sum(strata_row_group_bytes(row_groups, size_bytes))
                  FROM new_rows WHERE state = 'published'
                 GROUP BY index_uid, partition_id ORDER BY index_uid, partition_id
                ON CONFLICT (index_uid, partition_id)
                DO UPDATE SET files = t.files + EXCLUDED.files, bytes = t.bytes + EXCLUDED.bytes,
                              row_groups = t.row_groups + EXCLUDED.row_groups,
                              row_group_bytes = t.row_group_bytes + EXCLUDED.row_group_bytes;
            ELSIF TG_OP = 'DELETE' THEN
                UPDATE published_totals AS t
                   SET files = t.files - d.files, bytes = t.bytes - d.bytes, row_groups = t.row_groups - d.row_groups,
                       row_group_bytes = t.row_group_bytes - d.row_group_bytes
                  FROM (SELECT index_uid, partition_id, count(*) AS files, sum(size_bytes) AS bytes,
                               sum(jsonb_array_length(row_groups)) AS row_groups,
                               sum(strata_row_group_bytes(row_groups, size_bytes)) AS row_group_bytes
                          FROM old_rows WHERE state = 'published' GROUP BY index_uid, partition_id) AS d
                 WHERE t.index_uid = d.index_uid AND t.partition_id = d.partition_id;
            ELSE
                WITH changes AS (
                    SELECT index_uid, partition_id, 1 AS files, size_bytes AS bytes,
                           jsonb_array_length(row_groups) AS row_groups,
                           strata_row_group_bytes(row_groups, size_bytes) AS row_group_bytes, true AS gained
                      FROM new_rows WHERE state = 'published'
                    UNION ALL
                    SELECT index_uid, partition_id, -1, -size_bytes, -jsonb_array_length(row_groups),
                           -strata_row_group_bytes(row_groups, size_bytes), false
                      FROM old_rows WHERE state = 'published'
                ), d AS (
                    SELECT index_uid, partition_id, sum(files) AS files, sum(bytes) AS bytes,
                           sum(row_groups) AS row_groups, sum(row_group_bytes) AS row_group_bytes,
                           bool_or(gained) AS gained
                      FROM changes GROUP BY index_uid, partition_id
                    HAVING sum(files) <> 0 OR sum(bytes) <> 0 OR sum(row_groups) <> 0 OR sum(row_group_bytes) <> 0
                ), lost AS (
                    UPDATE published_totals AS t
                       SET files = t.files + d.files, bytes = t.bytes + d.bytes,
                           row_groups = t.row_groups + d.row_groups,
                           row_group_bytes = t.row_group_bytes + d.row_group_bytes
                      FROM d WHERE NOT d.gained AND t.index_uid = d.index_uid AND t.partition_id = d.partition_id
                )
                INSERT INTO published_totals AS t (index_uid, partition_id, files, bytes, row_groups, row_group_bytes)
                SELECT index_uid, partition_id, files, bytes, row_groups, row_group_bytes
                  FROM d WHERE d.gained ORDER BY index_uid, partition_id
                ON CONFLICT (index_uid, partition_id)
                DO UPDATE SET files = t.files + EXCLUDED.files, bytes = t.bytes + EXCLUDED.bytes,
                              row_groups = t.row_groups + EXCLUDED.row_groups,
                              row_group_bytes = t.row_group_bytes + EXCLUDED.row_group_bytes;
            END IF;
            RETURN NULL;
        END $$
    """)
    # Which indexes a statement touched: on `splits` those of its rows that are or were published, on
    # `artifact_snapshots` those of all its rows. An update counts both sides, so a row moved between indexes
    # raises both. Deletes only update, for the reason given for the totals.
    op.execute("""
        CREATE OR REPLACE FUNCTION strata_bump_plan_generation() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            touched text[];
        BEGIN
            -- Each statement is planned when first run, so a table's rows are only read by its own branch
            -- (snapshots have no `state`), and a transition table only where the event has it.
            IF TG_TABLE_NAME = 'splits' THEN
                IF TG_OP <> 'DELETE' THEN
                    SELECT array_agg(DISTINCT index_uid) INTO touched FROM new_rows WHERE state = 'published';
                END IF;
                IF TG_OP <> 'INSERT' THEN
                    SELECT touched || array_agg(DISTINCT index_uid) INTO touched
                      FROM old_rows WHERE state = 'published';
                END IF;
            ELSE
                IF TG_OP <> 'DELETE' THEN
                    SELECT array_agg(DISTINCT index_uid) INTO touched FROM new_rows;
                END IF;
                IF TG_OP <> 'INSERT' THEN
                    SELECT touched || array_agg(DISTINCT index_uid) INTO touched FROM old_rows;
                END IF;
            END IF;
            -- Sorted: concurrent statements lock the rows of several indexes in one order.
            SELECT array_agg(DISTINCT u ORDER BY u) INTO touched FROM unnest(touched) AS u;
            IF touched IS NULL THEN
                RETURN NULL;
            END IF;
            IF TG_OP = 'DELETE' THEN
                UPDATE plan_generations SET generation = generation + 1 WHERE index_uid = ANY(touched);
            ELSE
                INSERT INTO plan_generations AS g (index_uid, generation) SELECT unnest(touched), 1
                ON CONFLICT (index_uid) DO UPDATE SET generation = g.generation + 1;
            END IF;
            RETURN NULL;
        END $$
    """)
    _statement_triggers("splits_count_published", "splits", "strata_count_published")
    _statement_triggers("splits_bump_plan_generation", "splits", "strata_bump_plan_generation")
    _statement_triggers("artifact_snapshots_bump_plan_generation", "artifact_snapshots",
                        "strata_bump_plan_generation")


def downgrade() -> None:
    _drop_statement_triggers("artifact_snapshots_bump_plan_generation", "artifact_snapshots")
    _drop_statement_triggers("splits_bump_plan_generation", "splits")
    _drop_statement_triggers("splits_count_published", "splits")
    # The row-level functions and triggers of 0006 and 0007, as they were.
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
    op.execute("""
        CREATE TRIGGER splits_count_published
        AFTER INSERT OR DELETE OR UPDATE OF state, size_bytes, row_groups, partition_id, index_uid ON splits
        FOR EACH ROW EXECUTE FUNCTION strata_count_published()
    """)
    op.execute("""
        CREATE OR REPLACE FUNCTION strata_bump_plan_generation() RETURNS trigger LANGUAGE plpgsql AS $$
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
