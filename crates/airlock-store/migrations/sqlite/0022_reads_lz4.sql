-- Postgres only (how it compresses a session's reads); kept so both stores share
-- one list of versions.
SELECT 1;
