-- Why a rule held a call, in a person's words (what would flow from where to where,
-- a model's safety check), shown on the approval card; redacted like every field.
ALTER TABLE approvals ADD COLUMN detail TEXT;
-- A live session's origin sets (JSON), so a replica serving it judges the same.
ALTER TABLE live_sessions ADD COLUMN origins TEXT;
