-- Issue 14: the text of a reply while the model still writes it, so a page opened mid-stream
-- (in any web process) shows what has arrived so far. One row per conversation, written by the
-- worker a few times a second and removed when the reply is recorded, fails or is stopped.
-- `draft_key` names one streamed model turn; the page's live pieces carry the same key.
CREATE TABLE drafts (
    conversation_id TEXT    PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    draft_key       TEXT    NOT NULL,
    content         TEXT    NOT NULL,
    updated_at      BIGINT  NOT NULL
);

-- Edit and rerun: the last transcript line when a card was last approved. An edit at or before
-- it replaces a part in which changes were applied; the page says they stay.
ALTER TABLE conversations ADD COLUMN approved_through BIGINT;
