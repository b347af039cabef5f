-- The credential a registered worker made for itself at its start: replicas say it
-- in their hello to it (the deployment's token, which every worker holds, admits no
-- one to a registered worker).
ALTER TABLE hosts ADD COLUMN worker_token TEXT;
