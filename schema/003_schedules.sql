-- Cron schedules whose action is a pool target; the scheduler (server/jobs/scheduler.c) submits each
-- due run as an ordinary job tagged with the schedule id (jobs.schedule_id).
CREATE TABLE schedules (
	id              INTEGER PRIMARY KEY,
	cron            TEXT    NOT NULL,               -- five fields or a macro, as the client gave it
	timezone        TEXT    NOT NULL DEFAULT 'UTC', -- canonical: 'UTC' or a fixed offset '+HH:MM'
	action          TEXT    NOT NULL CHECK (json_valid(action)), -- {"hugepages": {"size": ..., ...}}
	enabled         INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
	misfire_grace_s INTEGER NOT NULL DEFAULT 3600 CHECK (misfire_grace_s >= 1),
	created_ns      INTEGER NOT NULL,               -- CLOCK_REALTIME ns since the epoch
	created_by_uid  INTEGER,
	created_by_name TEXT,
	next_run_ns     INTEGER,                        -- the next due minute; NULL when disabled
	last_run_ns     INTEGER,                        -- when the scheduler last acted on it
	last_due_ns     INTEGER,                        -- the due minute it acted on
	last_status     TEXT,                           -- submitted, skipped, failed
	last_job_id     INTEGER,                        -- the job of the last run (no FK: jobs are pruned apart)
	last_op_id      INTEGER,                        -- the history operation of a skip or failure
	last_error      TEXT
) STRICT;
CREATE INDEX schedules_due ON schedules(next_run_ns) WHERE enabled = 1 AND next_run_ns IS NOT NULL;
