-- Secrets are stored encrypted; only names, origins and which fields are present
-- are readable without the master key.
CREATE TABLE secrets (
    tenant      TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    origins     TEXT    NOT NULL, -- JSON array of origins
    fields      TEXT    NOT NULL, -- JSON array of field names present
    nonce       BYTEA    NOT NULL,
    ciphertext  BYTEA    NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (tenant, name)
);

-- Vault bookkeeping (the master-key check record).
CREATE TABLE vault_meta (
    key   TEXT PRIMARY KEY,
    value BYTEA NOT NULL
);

-- Grant tokens: only their SHA-256 is kept.
CREATE TABLE grants (
    id          TEXT    PRIMARY KEY,
    tenant      TEXT    NOT NULL,
    token_hash  BYTEA    NOT NULL UNIQUE,
    domains     TEXT    NOT NULL, -- JSON array
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    reusable    BOOLEAN NOT NULL,
    used_at     BIGINT,
    revoked_at  BIGINT
);
