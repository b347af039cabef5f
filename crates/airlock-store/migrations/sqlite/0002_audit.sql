-- The audit log: append-only rows, each its canonical JSON body and its chain hash
-- (see airlock-audit). The columns beside the body are copies of its fields, for
-- filtering; verification reads only seq, body and chain.
CREATE TABLE audit_events (
    seq      INTEGER PRIMARY KEY,
    tenant   TEXT    NOT NULL,
    time_ms  INTEGER NOT NULL,
    kind     TEXT    NOT NULL,
    session  TEXT,
    body     TEXT    NOT NULL,
    chain    BLOB    NOT NULL
);
CREATE INDEX audit_events_session ON audit_events (session);
