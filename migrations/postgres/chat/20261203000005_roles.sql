-- Issue 16: roles and four-eyes approval. An admin manages accounts and reviews other users'
-- changes; an editor works in their own conversations and approves their own changes only with
-- may_approve_own. Every account from before roles could do all of that, and keeps it.
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'editor' CHECK (role IN ('admin', 'editor'));
ALTER TABLE users ADD COLUMN may_approve_own BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE users SET role = 'admin', may_approve_own = TRUE;
-- Who decided a recorded decision: the owner, or a reviewer in the runs inbox.
ALTER TABLE conversations ADD COLUMN approval_decided_by BIGINT;
