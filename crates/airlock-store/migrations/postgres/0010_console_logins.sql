-- Operators signed in to the console, so that any replica knows them: the SHA-256 of
-- the cookie (never the cookie), who signed in, and until when.
CREATE TABLE console_logins (
    token_hash  BYTEA    PRIMARY KEY,
    id          TEXT    NOT NULL,
    tenant      TEXT    NOT NULL,
    role        TEXT    NOT NULL,
    key_digest  TEXT,
    created_ms  BIGINT NOT NULL,
    expires_ms  BIGINT NOT NULL
);
CREATE INDEX console_logins_id ON console_logins (id);
