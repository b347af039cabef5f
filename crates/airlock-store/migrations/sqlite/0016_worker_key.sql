-- What a replica shows a session's worker to attach to it (the opener was told; a
-- connection with the worker's token alone reaches no session it did not open).
ALTER TABLE live_sessions ADD COLUMN worker_key TEXT;
