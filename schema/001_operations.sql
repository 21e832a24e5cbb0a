-- Every change made through mempolicyd is an operation; knob writes keep old -> new per knob.
CREATE TABLE operations (
	id             INTEGER PRIMARY KEY,
	kind           TEXT    NOT NULL,              -- 'knobs.set', 'hugepages.resize', ...
	source         TEXT    NOT NULL DEFAULT 'api', -- 'api' or 'scheduler'
	actor_uid      INTEGER,                       -- NULL for the daemon itself
	actor_name     TEXT,
	started_ns     INTEGER NOT NULL,              -- CLOCK_REALTIME, ns since the epoch
	finished_ns    INTEGER,
	status         TEXT    NOT NULL,              -- ok, failed, rolled_back, partial, running, ...
	errno          INTEGER,
	error          TEXT,
	request        TEXT CHECK (request IS NULL OR json_valid(request)),
	result         TEXT CHECK (result IS NULL OR json_valid(result)),
	kernel_release TEXT
) STRICT;
CREATE INDEX operations_kind_started ON operations(kind, started_ns);
CREATE INDEX operations_started ON operations(started_ns);

CREATE TABLE knob_changes (
	op_id  INTEGER NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
	seq    INTEGER NOT NULL,                      -- order of the writes within the operation
	knob   TEXT    NOT NULL,
	old    TEXT,
	new    TEXT    NOT NULL,
	status TEXT    NOT NULL,                      -- written, failed, restored, restore_failed, skipped
	errno  INTEGER,
	PRIMARY KEY (op_id, seq)
) STRICT;
