-- Which vault secrets a live session loaded, and the version of each (its sealed
-- record's nonce, never a value): another replica serves the session by loading the
-- same versions, and refuses it when one changed since.
ALTER TABLE live_sessions ADD COLUMN secrets TEXT;
