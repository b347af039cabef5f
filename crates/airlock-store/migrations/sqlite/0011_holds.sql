-- The operator holding a live session's page (take-over), so that an agent's call
-- through any replica is refused while one does.
ALTER TABLE live_sessions ADD COLUMN held_by TEXT;
