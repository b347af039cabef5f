-- Every process serving from this store (control-plane replicas now; browser workers
-- later), each refreshing its heartbeat. One silent past the bound is gone, and the
-- sessions it had open are ended on the record by whichever replica sees it first.
CREATE TABLE hosts (
    id            TEXT    PRIMARY KEY,
    role          TEXT    NOT NULL,
    address       TEXT,
    capacity      INTEGER NOT NULL DEFAULT 0,
    sessions      INTEGER NOT NULL DEFAULT 0,
    free_mb       INTEGER NOT NULL DEFAULT 0,
    version       TEXT    NOT NULL,
    hostname      TEXT    NOT NULL,
    pid           INTEGER NOT NULL,
    started_ms    INTEGER NOT NULL,
    heartbeat_ms  INTEGER NOT NULL,
    draining      BOOLEAN NOT NULL DEFAULT FALSE
);

-- The replica (a hosts id) that opened a live session; NULL on rows written before.
ALTER TABLE live_sessions ADD COLUMN replica TEXT;
