-- Sign-in that tells nothing. A user name's key (NFKC and Unicode case folding, server::names::key)
-- keeps `Bob`, `bob` and `ｂｏｂ` one name; SQL has no Unicode normalisation, so the server fills
-- the key of the accounts that were there before at start (Store::fill_name_keys). Two old
-- accounts with one key keep theirs empty (NULLs do not collide) and still sign in by their exact name.
ALTER TABLE users ADD COLUMN name_key TEXT;
CREATE UNIQUE INDEX users_name_key ON users(name_key);

-- A browser that signed in as a user: its cookie's token (hashed, like a session's) lets its
-- sign-ins past the per-name limit anyone could exhaust, under a limit of their own.
CREATE TABLE devices (
    token_hash TEXT    PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX devices_user ON devices(user_id);
