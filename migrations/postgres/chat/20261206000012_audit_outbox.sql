-- Issue 39: the audit log. One row per event of a run that waits for a person (it waits, an
-- answer, a decision, an expiry, a cancel, a dismissal, a failure), written in the transaction of
-- the state change it records. No foreign keys: a row outlives its conversation (the title is
-- kept) and the accounts it names (the names are kept). Append-only: the trigger refuses any
-- UPDATE or DELETE, whoever asks.
CREATE TABLE audit_log (
    id                 BIGSERIAL PRIMARY KEY,
    at                 BIGINT  NOT NULL,
    action             TEXT    NOT NULL,
    -- Who did it; NULL for the system (the worker).
    actor_id           BIGINT,
    actor_name         TEXT,
    owner_id           BIGINT,
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

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END;
$$;
CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- Events for the webhooks, written in the same transaction as the state change (so never lost,
-- never sent for a change that rolled back); the delivery worker fans each out and removes it.
-- An event about an audit row names it (`audit_id`) and its JSON is made when it is fanned out,
-- off the request's write; one without (a reminder) carries its `payload`.
CREATE TABLE webhook_outbox (
    id         BIGSERIAL PRIMARY KEY,
    event_id   TEXT    NOT NULL UNIQUE,
    kind       TEXT    NOT NULL,
    payload    TEXT,
    audit_id   BIGINT ,
    created_at BIGINT  NOT NULL
);
