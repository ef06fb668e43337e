"""commit log: every change of committed state captured per transaction, for the log kept in object storage

Revision ID: 2026_11_29_0017
Revises: 2026_11_28_0016
Create Date: 2026-11-29

What decides what a query sees (the tables in `LOGGED_TABLES`) is also written to object storage, one object per
transaction, so the bucket alone can rebuild the metastore (docs/architecture.md, "The commit log"). Statement-
level triggers capture each statement's rows (whole new rows for inserts and updates, the primary key of deleted
ones) into `commit_log_changes`, tagged with the transaction. Before it commits, the writer numbers its
transaction's captures as one `commit_log` entry (`strata_metastore.commit_log`), in the same transaction;
after the commit it writes that entry to the bucket.

The captures are written once: a `commit_log` row names its transaction (`xid`) and the entry's changes are that
transaction's `commit_log_changes` rows, read when the entry is shipped, and deleted with it once a checkpoint
holds it. (An entry restored by a rebuild names no transaction: its changes are the bucket's object.)

A deferred constraint trigger refuses to commit a transaction whose captures no entry numbers: a change of committed
state that bypasses the log fails loudly at COMMIT instead of being silently missing from the bucket. Bulk loads
that must not be logged (the rebuild replaying the log, benchmarks filling the table) set `strata.capture = off`
for their transaction.
"""

from alembic import op

revision = "2026_11_29_0017"
down_revision = "2026_11_28_0016"
branch_labels = None
depends_on = None

# table -> its primary key columns: a deleted row is logged by its key alone.
LOGGED_TABLES = {
    "indexes": ("index_uid",),
    "splits": ("split_id",),
    "split_column_stats": ("split_id", "column_name"),
    "index_artifacts": ("artifact_id",),
    "artifact_snapshots": ("split_id",),
    "deletes": ("delete_id",),
    "delete_splits": ("delete_id", "split_id"),
}
EVENTS = {"INSERT": "REFERENCING NEW TABLE AS new_rows",
          "UPDATE": "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
          "DELETE": "REFERENCING OLD TABLE AS old_rows"}


def upgrade() -> None:
    op.execute("""
        CREATE TABLE commit_log_changes (
            id bigserial CONSTRAINT pk_commit_log_changes PRIMARY KEY,
            xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
            table_name text NOT NULL,
            op text NOT NULL CHECK (op IN ('upsert', 'delete')),
            rows json NOT NULL
        )""")
    op.execute("CREATE INDEX ix_commit_log_changes_xid ON commit_log_changes (xid)")
    op.execute("CREATE SEQUENCE commit_log_seq")
    # The outbox: an entry is committed with its transaction and stays until a checkpoint holds it, so one whose
    # writer died before writing it to the bucket is written there by the next ship pass.
    op.execute("""
        CREATE TABLE commit_log (
            seq bigint CONSTRAINT pk_commit_log PRIMARY KEY,
            xid xid8 CONSTRAINT uq_commit_log_xid UNIQUE,
            committed_at timestamptz NOT NULL DEFAULT now()
        )""")
    # The checkpoint the rows of `commit_log` start after: a checkpoint in the bucket holds every logged table as
    # of entry `seq` except the entries `missing` (numbered below `seq`, not committed when it was taken), and
    # the entries it holds leave `commit_log` in the transaction that records it here.
    op.execute("""
        CREATE TABLE commit_log_checkpoints (
            seq bigint CONSTRAINT pk_commit_log_checkpoints PRIMARY KEY,
            missing bigint[] NOT NULL DEFAULT '{}',
            written_at timestamptz NOT NULL DEFAULT now()
        )""")
    # TG_ARGV holds the primary key's columns. An UPDATE logs its new rows whole: replaying an entry sets each row
    # to what the transaction left, whatever the entries before it did. `json`, not `jsonb`: the rows are only
    # ever read back as text, and building text is what costs least (docs/benchmarks.md, "Commit log").
    op.execute("""
        CREATE FUNCTION strata_capture_changes() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF current_setting('strata.capture', true) = 'off' THEN
                RETURN NULL;
            END IF;
            IF TG_OP = 'DELETE' THEN
                INSERT INTO commit_log_changes (table_name, op, rows)
                SELECT TG_TABLE_NAME, 'delete',
                       json_agg((SELECT json_object_agg(k, v) FROM json_each(row_to_json(o)) AS e(k, v)
                                  WHERE k = ANY (TG_ARGV)))
                  FROM old_rows AS o HAVING count(*) > 0;
            ELSE
                INSERT INTO commit_log_changes (table_name, op, rows)
                SELECT TG_TABLE_NAME, 'upsert', json_agg(n) FROM new_rows AS n HAVING count(*) > 0;
            END IF;
            RETURN NULL;
        END $$""")
    op.execute("""
        CREATE FUNCTION strata_require_commit_log() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM commit_log WHERE xid = NEW.xid) THEN
                RAISE EXCEPTION 'a change of % was committed without its commit log entry', NEW.table_name
                    USING HINT = 'commit through a session of strata_metastore.engine.session_factory '
                                 '(it writes the entry), or SET LOCAL strata.capture = off for a bulk load '
                                 'that must not be logged';
            END IF;
            RETURN NULL;
        END $$""")
    op.execute("CREATE CONSTRAINT TRIGGER commit_log_changes_drained AFTER INSERT ON commit_log_changes "
               "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION strata_require_commit_log()")
    for table, key in LOGGED_TABLES.items():
        arguments = ", ".join(f"'{column}'" for column in key)
        for event, referencing in EVENTS.items():
            op.execute(f"CREATE TRIGGER {table}_commit_log_{event.lower()} AFTER {event} ON {table} {referencing} "
                       f"FOR EACH STATEMENT EXECUTE FUNCTION strata_capture_changes({arguments})")


def downgrade() -> None:
    for table in LOGGED_TABLES:
        for event in EVENTS:
            op.execute(f"DROP TRIGGER {table}_commit_log_{event.lower()} ON {table}")
    op.execute("DROP TABLE commit_log_changes")
    op.execute("DROP FUNCTION strata_require_commit_log()")
    op.execute("DROP FUNCTION strata_capture_changes()")
    op.execute("DROP TABLE commit_log_checkpoints")
    op.execute("DROP TABLE commit_log")
    op.execute("DROP SEQUENCE commit_log_seq")
