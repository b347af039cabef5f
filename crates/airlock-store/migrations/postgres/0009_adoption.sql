-- What another replica needs to serve a live session it did not open: the worker it
-- runs on and its id there, its idle TTL, recording mode and host narrowing, whether
-- it holds secrets (then only its own replica may serve it), and when any replica
-- last used it (idle expiry counts every replica's calls).
ALTER TABLE live_sessions ADD COLUMN worker TEXT;
ALTER TABLE live_sessions ADD COLUMN worker_session TEXT;
ALTER TABLE live_sessions ADD COLUMN idle_ttl_ms BIGINT;
ALTER TABLE live_sessions ADD COLUMN record TEXT;
ALTER TABLE live_sessions ADD COLUMN allow_hosts TEXT;
ALTER TABLE live_sessions ADD COLUMN holds_secrets BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE live_sessions ADD COLUMN used_ms BIGINT;
