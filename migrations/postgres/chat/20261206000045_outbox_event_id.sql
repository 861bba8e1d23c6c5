-- An outbox row's `event_id` no longer has a unique index of its own: the id is a fresh UUID for
-- every event, and the one place a repeat would matter, a webhook's deliveries, is unique on
-- (webhook, event) already. The index was one more B-tree written by every answer and decision
-- (bench: "Audit and outbox rows on answers").
ALTER TABLE webhook_outbox DROP CONSTRAINT IF EXISTS webhook_outbox_event_id_key;
