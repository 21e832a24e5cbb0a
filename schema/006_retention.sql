-- Retention (server/store/retain.c) deletes old operations: jobs.op_id is ON DELETE SET NULL, and
-- without an index every deleted operation would scan the whole jobs table.
CREATE INDEX jobs_op ON jobs(op_id) WHERE op_id IS NOT NULL;
