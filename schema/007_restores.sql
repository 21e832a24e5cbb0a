-- What an operation changed that it must put back (a probe's THP setting, numa_balancing, a pool
-- size): written before the change is made, deleted once the value is restored. Rows left by a
-- daemon that died are restored at the next start (a probe.restore operation records it).
CREATE TABLE restores (
	id         INTEGER PRIMARY KEY,
	op_id      INTEGER REFERENCES operations(id) ON DELETE SET NULL,  -- the operation that changed it
	what       TEXT    NOT NULL CHECK (what IN ('knob', 'pool')),
	target     TEXT    NOT NULL,            -- knob name, or pool "<size_kb>" / "<size_kb>:<node>"
	value      TEXT    NOT NULL,            -- the text to write back
	created_ns INTEGER NOT NULL
) STRICT;
