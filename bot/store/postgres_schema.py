"""The PostgreSQL store's schema, its migrations and its SQL, apart from the code that runs it.

Same tables and meanings as the SQLite store (``bot.store.sqlite``), plus what several
replicas on one database need: ``claimed_by`` (which replica runs a delivery), a table
of live replicas, and a unique index that makes "one running delivery per subject" a
rule of the database rather than of one process.
"""

from __future__ import annotations

# Applied in order, each in its own transaction under MIGRATION_LOCK; schema_version
# counts how many have been applied. Append new migrations, never edit applied ones.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE deliveries (
        seq BIGSERIAL PRIMARY KEY,
        delivery_id TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        event TEXT NOT NULL,
        payload BYTEA NOT NULL,
        subject TEXT NOT NULL,
        received_at DOUBLE PRECISION NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
        next_attempt_at DOUBLE PRECISION NOT NULL,
        last_error TEXT,
        finished_at DOUBLE PRECISION,
        claimed_by TEXT
    );
    CREATE INDEX deliveries_queue ON deliveries (received_at, seq) WHERE status = 'queued';
    CREATE INDEX deliveries_by_subject ON deliveries (subject, status);
    CREATE INDEX deliveries_by_age ON deliveries (received_at, seq);
    CREATE INDEX deliveries_finished ON deliveries (finished_at) WHERE finished_at IS NOT NULL;
    CREATE INDEX deliveries_running ON deliveries (claimed_by) WHERE status = 'running';
    -- Two replicas that each claimed a delivery of one subject in the same instant: the
    -- second commit fails here instead of both running.
    CREATE UNIQUE INDEX deliveries_one_running_per_subject ON deliveries (subject)
        WHERE status = 'running';
    CREATE TABLE handler_runs (
        delivery_id TEXT NOT NULL REFERENCES deliveries (delivery_id) ON DELETE CASCADE,
        handler TEXT NOT NULL,
        PRIMARY KEY (delivery_id, handler)
    );
    CREATE TABLE state (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (kind, key)
    );
    CREATE INDEX state_by_age ON state (kind, updated_at);
    CREATE TABLE replicas (
        replica_id TEXT PRIMARY KEY,
        lock_key BIGINT NOT NULL UNIQUE,
        started_at DOUBLE PRECISION NOT NULL
    );
    """,
)

# Keys of the transaction-level advisory locks (any constant bigint, one per purpose).
MIGRATION_LOCK = 0x466F6C6C6F7700  # "Follow" and a zero: migrations, one replica at a time
# Named session locks (``PostgresStore.try_lock``) hash their name into this space.
NAMED_LOCK_SPACE = "followup-bot:"

NOTIFY_CHANNEL = "followup_bot_inbox"

DELIVERY_COLUMNS = (
    "delivery_id, source, event, payload, subject, received_at, attempts,"
    " status, next_attempt_at, last_error"
)

# The oldest due delivery whose subject is idle, locked for this transaction; one that
# another replica is claiming right now is skipped (SKIP LOCKED), and so is every later
# delivery of its subject (the "older due" test), so a subject's deliveries still run
# in arrival order whichever replica takes them.
CLAIM_SQL = f"""
    WITH candidate AS (
        SELECT d.seq FROM deliveries AS d
        WHERE d.status = 'queued'
          AND d.next_attempt_at <= $1
          AND d.subject <> ALL($2::text[])
          AND NOT EXISTS (
              SELECT 1 FROM deliveries AS r WHERE r.subject = d.subject AND r.status = 'running'
          )
          AND NOT EXISTS (
              SELECT 1 FROM deliveries AS o
              WHERE o.subject = d.subject AND o.status = 'queued' AND o.next_attempt_at <= $1
                AND (o.received_at, o.seq) < (d.received_at, d.seq)
          )
        ORDER BY d.received_at, d.seq
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    )
    UPDATE deliveries SET status = 'running', attempts = attempts + 1, claimed_by = $3
    FROM candidate WHERE deliveries.seq = candidate.seq
    RETURNING {", ".join("deliveries." + c.strip() for c in DELIVERY_COLUMNS.split(","))},
        ARRAY(
            SELECT h.handler FROM handler_runs AS h WHERE h.delivery_id = deliveries.delivery_id
        ) AS handlers_done
"""

# An attempt's end, on a row the settling transaction has locked and checked is not
# another live replica's (``PostgresStore._settle``).
SETTLE_SQL = """
    UPDATE deliveries SET status = $2, next_attempt_at = COALESCE($3, next_attempt_at),
        last_error = $4, finished_at = $5, claimed_by = NULL
    WHERE delivery_id = $1
"""

ENQUEUE_SQL = f"""
    INSERT INTO deliveries ({DELIVERY_COLUMNS}, finished_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, $10)
    ON CONFLICT (delivery_id) DO NOTHING
"""

REQUEUE_ROW_SQL = """
    UPDATE deliveries SET status = 'queued', attempts = 0, next_attempt_at = $2,
        finished_at = NULL, claimed_by = NULL
    WHERE delivery_id = $1 AND status IN ('failed', $3)
"""
