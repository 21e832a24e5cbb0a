-- Which daemon start wrote a row: a random id per start (server/store/db.c). Work left "running" or
-- "queued" by another instance is unfinished, whatever the wall clock says: comparing started_ns
-- with the new daemon's start left a crashed daemon's operations running for ever once the clock
-- had been stepped back. NULL: written before this column existed (an older daemon's).
ALTER TABLE operations ADD COLUMN instance INTEGER;
ALTER TABLE jobs ADD COLUMN instance INTEGER;
CREATE INDEX operations_running ON operations(id) WHERE status = 'running';
