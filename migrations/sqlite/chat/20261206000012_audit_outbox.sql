-- Issue 39: the audit log. One row per event of a run that waits for a person (it waits, an
-- answer, a decision, an expiry, a cancel, a dismissal, a failure), written in the transaction of
-- the state change it records. No foreign keys: a row outlives its conversation (the title is
-- kept) and the accounts it names (the names are kept). Append-only: the triggers refuse any
-- UPDATE or DELETE, whoever asks.
-- The id is the rowid without AUTOINCREMENT: rows are never deleted, so ids only grow, and an
-- answer's write is spared the update of sqlite_sequence (bench: "Audit and outbox rows").
CREATE TABLE audit_log (
    id                 INTEGER PRIMARY KEY,
    at                 INTEGER NOT NULL,
    action             TEXT    NOT NULL,
    -- Who did it; NULL for the system (the worker).
    actor_id           INTEGER,
    actor_name         TEXT,
    owner_id           INTEGER,
    owner_name         TEXT,
    conversation_id    TEXT    NOT NULL,
    conversation_title TEXT    NOT NULL,
    run_id             TEXT,
    surface            TEXT    NOT NULL,
    -- The tools' names, comma-separated, in the card's order.
    tools              TEXT,
    -- JSON: [{"tool": …, "arguments": {…}}, …] as proposed, and as run when a person changed them.
    arguments          TEXT,
    arguments_run      TEXT,
    -- What the card showed it would change (its previews, as text).
    preview            TEXT,
    answer             TEXT,
    reason             TEXT
);
CREATE INDEX audit_log_owner ON audit_log(owner_id, id);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;

-- Events for the webhooks, written in the same transaction as the state change (so never lost,
-- never sent for a change that rolled back); the delivery worker fans each out and removes it.
-- An event about an audit row names it (`audit_id`) and its JSON is made when it is fanned out,
-- off the request's write; one without (a reminder) carries its `payload`.
-- Its rows are the fan-out's to take in order and delete; an id used again after that is harmless
-- (the event's identity is `event_id`), so no AUTOINCREMENT here either.
CREATE TABLE webhook_outbox (
    id         INTEGER PRIMARY KEY,
    event_id   TEXT    NOT NULL UNIQUE,
    kind       TEXT    NOT NULL,
    payload    TEXT,
    audit_id   INTEGER,
    created_at INTEGER NOT NULL
);
