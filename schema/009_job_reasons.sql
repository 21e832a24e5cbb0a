-- Job reasons are one registry (server/jobs/reasons.h): a job cancelled while queued said the
-- sentence "cancelled before it started", now the registered name not_started.
UPDATE jobs SET reason = 'not_started' WHERE reason = 'cancelled before it started';
