-- Each tenant's own policy, versioned: a change is a new row (version, the SHA-256 of
-- its canonical JSON, who set it); the newest applies to sessions opened after it,
-- and a session keeps the version it opened under (live_sessions.policy_version), on
-- whichever replica serves it.
CREATE TABLE tenant_policies (
    tenant TEXT NOT NULL,
    version BIGINT NOT NULL,
    hash TEXT NOT NULL,
    body TEXT NOT NULL,
    set_by TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    PRIMARY KEY (tenant, version)
);
ALTER TABLE live_sessions ADD COLUMN policy_version BIGINT;
