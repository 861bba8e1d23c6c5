-- An outbox row's `event_id` no longer has a unique index of its own: the id is a fresh UUID for
-- every event, and the one place a repeat would matter, a webhook's deliveries, is unique on
-- (webhook, event) already. The index was one more B-tree written by every answer and decision
-- (bench: "Audit and outbox rows on answers"). SQLite drops a column constraint only by copying
-- the table; rows waiting for their fan-out are kept as they are.
CREATE TABLE webhook_outbox_new (
    id         INTEGER PRIMARY KEY,
    event_id   TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    payload    TEXT,
    audit_id   INTEGER,
    created_at INTEGER NOT NULL
);
INSERT INTO webhook_outbox_new (id, event_id, kind, payload, audit_id, created_at)
    SELECT id, event_id, kind, payload, audit_id, created_at FROM webhook_outbox;
DROP TABLE webhook_outbox;
ALTER TABLE webhook_outbox_new RENAME TO webhook_outbox;
