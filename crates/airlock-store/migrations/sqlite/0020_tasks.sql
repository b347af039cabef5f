-- Server-side tasks started over REST, readable and cancellable through any replica:
-- the replica that runs one writes its steps and its end here; another that is asked
-- to cancel it sets `cancel`, which the runner watches. A task whose replica is gone
-- is ended here as an error by whichever replica notices.
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    session TEXT NOT NULL,
    replica TEXT NOT NULL,
    steps INTEGER NOT NULL DEFAULT 0,
    max_steps INTEGER NOT NULL,
    -- The task as the API shows it once it ended (JSON); NULL while it runs.
    result TEXT,
    cancel BOOLEAN NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    ended_ms INTEGER
);
CREATE INDEX tasks_replica ON tasks (replica) WHERE result IS NULL;
