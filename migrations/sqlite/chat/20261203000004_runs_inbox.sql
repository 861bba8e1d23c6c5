-- Issue 15: the runs inbox. Every run a conversation started, so a run the chat moved on from (an
-- ordinary chat keeps its waiting run when a new message comes) is still found by its conversation.
CREATE TABLE conversation_runs (
    run_id          TEXT    PRIMARY KEY,
    conversation_id TEXT    NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    created_at      INTEGER NOT NULL
);
CREATE INDEX conversation_runs_conversation ON conversation_runs(conversation_id);
INSERT INTO conversation_runs (run_id, conversation_id, created_at)
    SELECT run_id, id, updated_at FROM conversations WHERE run_id IS NOT NULL;

-- A decision or answer given in the inbox for a run its conversation moved on from, until the
-- worker delivers it. One per run: the primary key makes a second one lose. One the runtime
-- refused keeps its code, so the inbox can say why, and a new decision may replace it.
CREATE TABLE run_decisions (
    run_id          TEXT    PRIMARY KEY,
    conversation_id TEXT    NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    kind            TEXT    NOT NULL CHECK (kind IN ('approve', 'deny', 'input')),
    digest          TEXT    NOT NULL,
    deny_reason     TEXT    CHECK (deny_reason IS NULL OR deny_reason IN ('variant', 'skip')),
    reply           TEXT,
    error_code      TEXT,
    created_at      INTEGER NOT NULL
);
CREATE INDEX run_decisions_conversation ON run_decisions(conversation_id);
