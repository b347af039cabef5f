-- Every process serving from this store (control-plane replicas now; browser workers
-- later), each refreshing its heartbeat. One silent past the bound is gone, and the
-- sessions it had open are ended on the record by whichever replica sees it first.
CREATE TABLE hosts (
    id            TEXT    PRIMARY KEY,
    role          TEXT    NOT NULL,
    address       TEXT,
    capacity      BIGINT NOT NULL DEFAULT 0,
    sessions      BIGINT NOT NULL DEFAULT 0,
    free_mb       BIGINT NOT NULL DEFAULT 0,
    version       TEXT    NOT NULL,
    hostname      TEXT    NOT NULL,
    pid           BIGINT NOT NULL,
    started_ms    BIGINT NOT NULL,
    heartbeat_ms  BIGINT NOT NULL,
    draining      BOOLEAN NOT NULL DEFAULT FALSE
);

-- The replica (a hosts id) that opened a live session; NULL on rows written before.
ALTER TABLE live_sessions ADD COLUMN replica TEXT;
