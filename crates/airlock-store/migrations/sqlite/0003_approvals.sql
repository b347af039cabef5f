-- Calls held for a human: what was asked (redacted), the rule that held it, and the
-- decision. A call is bound to its record by `binding` (a hash of session, caller,
-- arguments and resolved target); a record is decided once.
CREATE TABLE approvals (
    id          TEXT    PRIMARY KEY,
    tenant      TEXT    NOT NULL,
    caller      TEXT    NOT NULL,
    session     TEXT,
    tool        TEXT    NOT NULL,
    args        TEXT    NOT NULL, -- JSON, redacted
    target      TEXT,             -- JSON {role, name, frame_url}, redacted
    page_url    TEXT,
    rule        TEXT    NOT NULL,
    risk        TEXT    NOT NULL,
    binding     BLOB    NOT NULL,
    status      TEXT    NOT NULL, -- pending | approved | denied | expired
    created_ms  INTEGER NOT NULL,
    expires_ms  INTEGER NOT NULL,
    decided_ms  INTEGER,
    decided_by  TEXT,
    note        TEXT
);
CREATE INDEX approvals_status ON approvals (tenant, status);
