-- Where an agent session lives whichever replica a request reaches: a stateful MCP
-- session (its Mcp-Session-Id) or a stateless client's session URL, named by the
-- SHA-256 of that name (a database reader learns no session id). Whose it is, the
-- nonce of its page fence, and (MCP) the client's initialize parameters.
CREATE TABLE agent_homes (
    home        TEXT   PRIMARY KEY,
    tenant      TEXT   NOT NULL,
    owner       TEXT   NOT NULL,
    nonce       TEXT   NOT NULL,
    state       TEXT,
    created_ms  INTEGER NOT NULL,
    used_ms     INTEGER NOT NULL
);
CREATE INDEX agent_homes_used ON agent_homes (used_ms);
-- The home whose browser session a live session is.
ALTER TABLE live_sessions ADD COLUMN home TEXT;
CREATE INDEX live_sessions_home ON live_sessions (home);
