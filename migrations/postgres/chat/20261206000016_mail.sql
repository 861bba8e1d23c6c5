-- Issue 39: e-mail. A user's address and whether they want mail of the runs that wait for them;
-- and each event's mail to each user who should hear of it, fanned out from `webhook_outbox` in
-- the same transaction as the webhooks' deliveries and sent by the same worker, with the same
-- lease and retries. The message is made when it is sent, in the user's language then.
ALTER TABLE users ADD COLUMN email TEXT;
ALTER TABLE users ADD COLUMN email_notify BOOLEAN NOT NULL DEFAULT FALSE;

CREATE TABLE mail_deliveries (
    id              BIGSERIAL PRIMARY KEY,
    -- The outbox event's id: with the user, the Message-ID, so a mail sent again is the same mail.
    event_id        TEXT    NOT NULL,
    user_id         BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    kind            TEXT    NOT NULL,
    -- The event's JSON object as the outbox had it.
    payload         TEXT    NOT NULL,
    state           TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_until     BIGINT,
    leased_by       TEXT,
    last_error      TEXT,
    created_at      BIGINT NOT NULL,
    delivered_at    BIGINT
);
CREATE UNIQUE INDEX mail_deliveries_once ON mail_deliveries(event_id, user_id);
CREATE INDEX mail_deliveries_due ON mail_deliveries(state, next_attempt_at);
