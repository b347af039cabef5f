-- The replica (its `hosts` id) whose call waits on a pending approval: when that
-- replica is gone, nothing will run the call, so the approval is closed as expired
-- on the record and deciding it says so.
ALTER TABLE approvals ADD COLUMN waiter TEXT;
