-- Whose per-user cap a live session counts against (a leased session's backend user,
-- or the key of the agent that opened it), so that every replica counts the caps over
-- the same rows.
ALTER TABLE live_sessions ADD COLUMN cap_user TEXT;
CREATE INDEX live_sessions_conversation ON live_sessions (tenant, user_id, conversation);
