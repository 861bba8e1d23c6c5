-- Issue 62: a client registered with an MCP server's authorization server (dynamic client
-- registration), per server and callback address, sealed with TOURGUIDE_TOKEN_KEY like the
-- tokens (it may hold a client secret): Connect reuses it instead of registering a new client
-- at every click. Reused only with the authorization server it was registered with.
CREATE TABLE mcp_oauth_clients (
    server       TEXT    NOT NULL,
    redirect_uri TEXT    NOT NULL,
    sealed       BLOB   NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (server, redirect_uri)
);
