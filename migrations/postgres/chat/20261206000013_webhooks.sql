-- Issue 39: webhooks. Where events go (an admin's configuration), and each event's delivery to
-- each webhook, fanned out from `webhook_outbox` (20261206000012) by the delivery worker.
CREATE TABLE webhooks (
    id         BIGSERIAL PRIMARY KEY,
    url        TEXT    NOT NULL,
    -- The kinds it is sent, comma-separated: run.waiting,run.decided,run.expired,run.failed,run.reminder
    events     TEXT    NOT NULL,
    -- `whsec_` and the base64 of the signing key, as Standard Webhooks' libraries read it.
    secret     TEXT    NOT NULL,
    created_at BIGINT NOT NULL,
    active     BOOLEAN NOT NULL DEFAULT TRUE
);

-- One row per event and webhook; `body` is the exact JSON sent, so a retry or a resend sends the
-- same bytes under the same `webhook-id` (event_id), and the receiver can drop the repeat.
CREATE TABLE webhook_deliveries (
    id              BIGSERIAL PRIMARY KEY,
    event_id        TEXT    NOT NULL,
    webhook_id      BIGINT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    kind            TEXT    NOT NULL,
    body            TEXT    NOT NULL,
    state           TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    -- While a worker sends it: until when it is that worker's, and which worker.
    lease_until     BIGINT,
    leased_by       TEXT,
    last_status     BIGINT,
    last_error      TEXT,
    created_at      BIGINT NOT NULL,
    delivered_at    BIGINT,
    -- A resend (the admin's "Send again") names the delivery it repeats; the fan-out's own rows
    -- are one per event and webhook.
    resent_from     BIGINT
);
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries(event_id, webhook_id) WHERE resent_from IS NULL;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(state, next_attempt_at);

-- A run that was reminded of once (run.reminder), written with its outbox row.
CREATE TABLE reminded_runs (
    run_id      TEXT    PRIMARY KEY,
    reminded_at BIGINT NOT NULL
);
