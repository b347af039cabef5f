-- Stored logins kept alive (`airlock-login`): each names the vault secret it keeps
-- logged in, how to tell it is alive and how to renew it (`spec`, JSON, placeholders
-- only), and its state. A check is claimed by one replica at a time (`holder` until
-- `held_until_ms`, so a replica that died mid-check lets go).
CREATE TABLE site_logins (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    spec TEXT NOT NULL,
    enabled BOOLEAN NOT NULL DEFAULT TRUE,
    state TEXT NOT NULL,
    why TEXT NOT NULL DEFAULT '',
    checked_ms BIGINT,
    due_ms BIGINT NOT NULL,
    holder TEXT,
    held_until_ms BIGINT,
    updated_ms BIGINT NOT NULL,
    PRIMARY KEY (tenant, name)
);
CREATE INDEX site_logins_due ON site_logins (due_ms) WHERE enabled;
-- One-time links through which a person gives what only they have (a code typed
-- into the renewal's waiting page, or a password into the vault). Only the SHA-256 of
-- the token is kept; a use is one conditional update.
CREATE TABLE login_links (
    token_hash BYTEA PRIMARY KEY,
    tenant TEXT NOT NULL,
    login TEXT NOT NULL,
    kind TEXT NOT NULL,
    session TEXT,
    replica TEXT,
    created_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL,
    used_ms BIGINT
);
