-- Long operations run as jobs; a job is also an operation in history (op_id).
CREATE TABLE jobs (
	id           INTEGER PRIMARY KEY,
	kind         TEXT    NOT NULL,              -- 'hugepages.resize', ...
	status       TEXT    NOT NULL,              -- queued, running, ok, partial, failed, cancelled, interrupted
	conflict_key TEXT,                          -- at most one queued/running job per key (checked by the runner)
	source       TEXT    NOT NULL DEFAULT 'api', -- 'api' or 'scheduler'
	schedule_id  INTEGER,                       -- the schedule that started it, NULL otherwise
	actor_uid    INTEGER,
	actor_name   TEXT,
	op_id        INTEGER REFERENCES operations(id) ON DELETE SET NULL,
	created_ns   INTEGER NOT NULL,              -- CLOCK_REALTIME ns since the epoch
	started_ns   INTEGER,
	finished_ns  INTEGER,
	request      TEXT CHECK (request IS NULL OR json_valid(request)),
	progress     TEXT CHECK (progress IS NULL OR json_valid(progress)),
	result       TEXT CHECK (result IS NULL OR json_valid(result)),
	reason       TEXT,                          -- why it stopped short: no_progress, deadline, restart
	errno        INTEGER,
	error        TEXT
) STRICT;
CREATE INDEX jobs_active ON jobs(status) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_schedule ON jobs(schedule_id, id) WHERE schedule_id IS NOT NULL;
CREATE INDEX jobs_kind ON jobs(kind, id);

-- One row per write of a pool resize (the hpagealloc method): what was asked, what the read-back
-- showed, how long the write took. kind repeats the operation's kind so that the latency
-- statistics read one covering index in latency order, without a join, over millions of rows.
CREATE TABLE batches (
	op_id      INTEGER NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,                -- order of the writes within the operation
	kind       TEXT    NOT NULL,                -- operations.kind
	size_kb    INTEGER NOT NULL,
	node       INTEGER,                         -- NULL for a write of the global nr_hugepages
	direction  TEXT    NOT NULL CHECK (direction IN ('grow', 'shrink')),
	started_ns INTEGER NOT NULL,                -- CLOCK_REALTIME when the write began
	before     INTEGER NOT NULL,                -- count read before the write
	written    INTEGER NOT NULL,                -- the value written
	after      INTEGER NOT NULL,                -- count read back after the write
	requested  INTEGER NOT NULL,                -- pages asked for in this batch (|written - before|)
	achieved   INTEGER NOT NULL,                -- pages gained (grow) or freed (shrink), >= 0
	elapsed_ns INTEGER NOT NULL,                -- CLOCK_MONOTONIC, write + read-back
	latency_ns INTEGER NOT NULL,                -- elapsed_ns / achieved; elapsed_ns when achieved = 0 (mmtests)
	PRIMARY KEY (op_id, seq)
) STRICT;
CREATE INDEX batches_stats ON batches(kind, direction, latency_ns, size_kb, node, started_ns);
