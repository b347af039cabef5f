-- Tenants and their API keys. A key is stored as its SHA-256 (keys carry 256 random
-- bits, so a fast hash is enough); the key itself is printed once and never kept.
CREATE TABLE tenants (
    name        TEXT    PRIMARY KEY,
    created_ms  BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id          TEXT    PRIMARY KEY,
    tenant      TEXT    NOT NULL REFERENCES tenants (name),
    role        TEXT    NOT NULL, -- observe | act | operate | admin
    name        TEXT,
    key_hash    BYTEA    NOT NULL UNIQUE,
    created_ms  BIGINT NOT NULL,
    revoked_ms  BIGINT,
    used_ms     BIGINT
);
CREATE INDEX api_keys_tenant ON api_keys (tenant);

-- Browser sessions a gateway opened and has not closed yet, with what it must remove
-- if it dies first: at start-up, rows of a gateway that is gone are ended on the
-- record and their leftovers removed.
CREATE TABLE live_sessions (
    id            TEXT    PRIMARY KEY,
    tenant        TEXT    NOT NULL,
    user_id       TEXT,
    conversation  TEXT,
    gateway_pid   BIGINT NOT NULL,
    opened_ms     BIGINT NOT NULL
);
