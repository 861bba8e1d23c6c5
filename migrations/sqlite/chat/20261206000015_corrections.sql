-- Issue 39, corrections: what a decision carries beyond yes or no, stored with it so whichever
-- worker delivers it delivers the same. A sentence for the model with a denial; the arguments a
-- person edited before approving (a JSON object, call id → arguments); the standing approval
-- that decided it instead of a person.
ALTER TABLE conversations ADD COLUMN approval_message TEXT;
ALTER TABLE conversations ADD COLUMN approval_edits TEXT;
ALTER TABLE conversations ADD COLUMN approval_policy BIGINT;
ALTER TABLE run_decisions ADD COLUMN message TEXT;
ALTER TABLE run_decisions ADD COLUMN edits TEXT;

-- "Always allow": a user's standing approval of a tool, in one conversation or (conversation_id
-- NULL) in all of theirs. Never consulted for a user whose changes wait for a second person.
CREATE TABLE approval_policies (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    tool            TEXT    NOT NULL,
    conversation_id TEXT    REFERENCES conversations(id) ON DELETE CASCADE,
    created_at      INTEGER NOT NULL
);
CREATE UNIQUE INDEX approval_policies_scope ON approval_policies(user_id, tool, COALESCE(conversation_id, ''));

-- The tools an admin lets users always allow for themselves (everywhere); the rest only per
-- conversation.
CREATE TABLE approval_policy_permits (
    tool         TEXT    PRIMARY KEY,
    permitted_by INTEGER,
    created_at   INTEGER NOT NULL
);
