-- A tenant's Web Bot Auth signing keys (`airlock identity`): the private key sealed
-- by the vault under the master key (rewritten when it rotates), the public key in
-- the clear for the key directory. One key per tenant is active (`retired_ms` NULL);
-- a rotated-out key stays listed until the signatures it made have expired.
CREATE TABLE identity_keys (
    tenant TEXT NOT NULL,
    kid TEXT NOT NULL,
    public_key BLOB NOT NULL,
    nonce BLOB NOT NULL,
    ciphertext BLOB NOT NULL,
    created_ms INTEGER NOT NULL,
    retired_ms INTEGER,
    PRIMARY KEY (tenant, kid)
);
CREATE UNIQUE INDEX identity_keys_active ON identity_keys (tenant) WHERE retired_ms IS NULL;
