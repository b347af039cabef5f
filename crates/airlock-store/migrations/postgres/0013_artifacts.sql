-- What sessions leave for operators (the screenshots of audit recordings), kept in
-- the store other replicas share rather than on one machine's disk. Named as the
-- audit event that records each names it; removed after the retention period.
CREATE TABLE artifacts (
    name        TEXT   PRIMARY KEY,
    tenant      TEXT   NOT NULL,
    created_ms  BIGINT NOT NULL,
    data        BYTEA  NOT NULL
);
CREATE INDEX artifacts_created ON artifacts (created_ms);
