-- ADR-018: a conversation parks on a run that waits for an approval or an answer, and records the
-- decision or answer for the worker to deliver.

ALTER TABLE conversations ADD COLUMN run_id TEXT;
ALTER TABLE conversations ADD COLUMN approval_decision TEXT
    CHECK (approval_decision IS NULL OR approval_decision IN ('approve', 'deny', 'input'));
ALTER TABLE conversations ADD COLUMN approval_turn_digest TEXT;
ALTER TABLE conversations ADD COLUMN pending_input TEXT;
ALTER TABLE conversations ADD COLUMN approval_deny_reason TEXT
    CHECK (approval_deny_reason IS NULL OR approval_deny_reason IN ('variant', 'skip'));
-- The guided skill the conversation was started with; a conversation with a skill is a process run.
ALTER TABLE conversations ADD COLUMN skill TEXT;
-- The content page the conversation is about, if any.
ALTER TABLE conversations ADD COLUMN page_id BIGINT;
-- Finding the conversation of a run the runtime queued again.
CREATE INDEX conversations_run ON conversations(run_id);

-- Marks the transcript line that carries an answer or a decision, so an undelivered one can be
-- taken out again when the question or card is handed back.
ALTER TABLE messages ADD COLUMN notice TEXT;
