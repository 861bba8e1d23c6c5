-- The agent runtime: runs, their event streams, and which configurations may run.
-- Times are Unix seconds (INTEGER); JSON is stored as TEXT. Every status change is one conditional
-- UPDATE on the expected status, so these tables carry no triggers and no derived state.

CREATE TABLE runs (
    id                 TEXT    PRIMARY KEY,          -- uuid v4
    status             TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'waiting_for_approval',
                                   'waiting_for_input', 'completed', 'failed', 'cancelled')),
    owner_user_id      INTEGER NOT NULL,
    owner_admin        INTEGER NOT NULL DEFAULT 0,
    configuration      TEXT    NOT NULL,
    process            INTEGER NOT NULL DEFAULT 0,
    allowed_tools      TEXT,                         -- JSON array of names, NULL = no narrowing
    max_rounds         INTEGER NOT NULL,
    -- The transcript at the last point a retry may start from (no tool of an unfinished round in it).
    checkpoint         TEXT,
    -- The transcript and pending turn while the run waits; NULL otherwise.
    suspended_state    TEXT,
    claimed_by         TEXT,                         -- the executing segment's token
    lease_expires      INTEGER NOT NULL DEFAULT 0,   -- 0 = no lease (queued, waiting, ended)
    requeue_count      INTEGER NOT NULL DEFAULT 0,
    available_at       INTEGER NOT NULL DEFAULT 0,   -- a requeued run waits out its backoff
    -- Stamped while a write tool executes: a reaped run with a non-idempotent stamp is never retried.
    pending_effect     TEXT CHECK (pending_effect IN ('idempotent_write', 'non_idempotent_write')),
    rounds             INTEGER NOT NULL DEFAULT 0,
    truncated          INTEGER NOT NULL DEFAULT 0,
    termination_reason TEXT,
    answer             TEXT,                         -- final answer of a completed run
    created_at         INTEGER NOT NULL,
    started_at         INTEGER,
    finished_at        INTEGER,
    updated_at         INTEGER NOT NULL
);
CREATE INDEX runs_queue ON runs(status, available_at);
CREATE INDEX runs_lease ON runs(status, lease_expires);
CREATE INDEX runs_owner ON runs(owner_user_id, created_at);

-- Metadata only: never tool arguments, tool results or submitted values.
CREATE TABLE run_events (
    run_id     TEXT    NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    sequence   INTEGER NOT NULL,                     -- 0-based, strictly increasing per run
    kind       TEXT    NOT NULL,
    round      INTEGER NOT NULL DEFAULT 0,
    payload    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, sequence)
);

-- A configuration without a row is active; deactivating one writes a row.
CREATE TABLE run_configurations (
    name       TEXT    PRIMARY KEY,
    active     INTEGER NOT NULL DEFAULT 1,
    updated_at INTEGER NOT NULL
);
