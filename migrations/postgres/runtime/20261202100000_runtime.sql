-- The agent runtime: runs, their event streams, and which configurations may run.
-- The same tables as migrations/sqlite/runtime, in PostgreSQL's types. Every status change is one
-- conditional UPDATE on the expected status, so these tables carry no triggers and no derived state.

CREATE TABLE runs (
    id                 TEXT    PRIMARY KEY,          -- uuid v4
    status             TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'waiting_for_approval',
                                   'waiting_for_input', 'completed', 'failed', 'cancelled')),
    owner_user_id      BIGINT  NOT NULL,
    owner_admin        BOOLEAN NOT NULL DEFAULT FALSE,
    configuration      TEXT    NOT NULL,
    process            BOOLEAN NOT NULL DEFAULT FALSE,
    allowed_tools      TEXT,                         -- JSON array of names, NULL = no narrowing
    max_rounds         BIGINT  NOT NULL,
    checkpoint         TEXT,
    suspended_state    TEXT,
    claimed_by         TEXT,                         -- the executing segment's token
    lease_expires      BIGINT  NOT NULL DEFAULT 0,   -- 0 = no lease (queued, waiting, ended)
    requeue_count      BIGINT  NOT NULL DEFAULT 0,
    available_at       BIGINT  NOT NULL DEFAULT 0,
    pending_effect     TEXT CHECK (pending_effect IN ('idempotent_write', 'non_idempotent_write')),
    rounds             BIGINT  NOT NULL DEFAULT 0,
    truncated          BOOLEAN NOT NULL DEFAULT FALSE,
    termination_reason TEXT,
    answer             TEXT,
    created_at         BIGINT  NOT NULL,
    started_at         BIGINT,
    finished_at        BIGINT,
    updated_at         BIGINT  NOT NULL
);
CREATE INDEX runs_queue ON runs(status, available_at);
CREATE INDEX runs_lease ON runs(status, lease_expires);
CREATE INDEX runs_owner ON runs(owner_user_id, created_at);

-- Metadata only: never tool arguments, tool results or submitted values.
CREATE TABLE run_events (
    run_id     TEXT    NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    sequence   BIGINT  NOT NULL,                     -- 0-based, strictly increasing per run
    kind       TEXT    NOT NULL,
    round      BIGINT  NOT NULL DEFAULT 0,
    payload    TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    PRIMARY KEY (run_id, sequence)
);

-- A configuration without a row is active; deactivating one writes a row.
CREATE TABLE run_configurations (
    name       TEXT    PRIMARY KEY,
    active     BOOLEAN NOT NULL DEFAULT TRUE,
    updated_at BIGINT  NOT NULL
);
