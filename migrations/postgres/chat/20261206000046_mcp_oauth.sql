-- Issue 42: OAuth 2.1 for HTTP MCP servers. A sign-in's tokens per server and owner (the shared
-- one, `user_id` NULL, made by an admin; or a user's own), sealed with TOURGUIDE_TOKEN_KEY
-- (ChaCha20-Poly1305, a random nonce per row): neither this table nor a backup of it holds a
-- token in clear. A user's rows go with the user.
CREATE TABLE mcp_tokens (
    server     TEXT   NOT NULL,
    user_id    BIGINT REFERENCES users(id) ON DELETE CASCADE,
    sealed     BYTEA  NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX mcp_tokens_owner ON mcp_tokens(server, COALESCE(user_id, 0));

-- A sign-in begun and not yet come back: what its callback needs (the PKCE verifier, the
-- client), sealed, under the hash of its `state`, bound to the session that began it. Taken
-- once, by the callback of that session, within ten minutes.
CREATE TABLE mcp_oauth_states (
    state_hash   TEXT    PRIMARY KEY,
    session_hash TEXT    NOT NULL,
    user_id      BIGINT  NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    server       TEXT    NOT NULL,
    shared       BOOLEAN NOT NULL,
    sealed       BYTEA   NOT NULL,
    created_at   BIGINT  NOT NULL
);
CREATE INDEX mcp_oauth_states_created ON mcp_oauth_states(created_at);
