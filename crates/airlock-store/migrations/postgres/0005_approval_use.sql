-- An approval approves one run of one call: when that run started, it is used.
ALTER TABLE approvals ADD COLUMN used_ms BIGINT;
