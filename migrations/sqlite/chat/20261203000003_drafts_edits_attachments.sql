-- Issue 14: the text of a reply while the model still writes it, so a page opened mid-stream
-- (in any web process) shows what has arrived so far. One row per conversation, written by the
-- worker a few times a second and removed when the reply is recorded, fails or is stopped.
-- `draft_key` names one streamed model turn; the page's live pieces carry the same key.
CREATE TABLE drafts (
    conversation_id TEXT    PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    draft_key       TEXT    NOT NULL,
    content         TEXT    NOT NULL,
    updated_at      INTEGER NOT NULL
);

-- Edit and rerun: the last transcript line when a card was last approved. An edit at or before
-- it replaces a part in which changes were applied; the page says they stay.
ALTER TABLE conversations ADD COLUMN approved_through INTEGER;

-- Attachments: the file as uploaded and the text given to the model. Until the reader sends the
-- next message an attachment is pending (message_id NULL); it goes with its conversation, and
-- with its message when an edit replaces that message.
CREATE TABLE attachments (
    id              INTEGER PRIMARY KEY,
    conversation_id TEXT    NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    message_id      INTEGER REFERENCES messages(id) ON DELETE CASCADE,
    file_name       TEXT    NOT NULL,
    kind            TEXT    NOT NULL,
    size            INTEGER NOT NULL,
    content         BLOB    NOT NULL,
    text            TEXT    NOT NULL,
    truncated       INTEGER NOT NULL,
    created_at      INTEGER NOT NULL
);
CREATE INDEX attachments_conversation ON attachments(conversation_id, message_id);
