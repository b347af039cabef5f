-- A live session's running state, shared by every replica that serves it: the
-- actions it ran (its budget counts every replica's), and what its results showed
-- of each origin (the data-flow history, after redaction: never a secret), in the
-- order each session's replicas wrote it.
ALTER TABLE live_sessions ADD COLUMN actions BIGINT NOT NULL DEFAULT 0;
CREATE TABLE session_reads (
    session_id TEXT NOT NULL,
    n BIGINT NOT NULL,
    origin TEXT NOT NULL,
    lines TEXT NOT NULL,
    PRIMARY KEY (session_id, n)
);
-- The nonce of its page fences: one per session, whichever replica renders a result.
ALTER TABLE live_sessions ADD COLUMN fence TEXT;
-- Who opened it (its key's digest id and role), so a replica that adopts it, or lists
-- it, names the same caller as the audit record.
ALTER TABLE live_sessions ADD COLUMN owner_key TEXT;
ALTER TABLE live_sessions ADD COLUMN owner_role TEXT;
