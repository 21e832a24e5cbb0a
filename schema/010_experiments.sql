-- An experiment's raw samples (ops/experiments.c): one row per run of an arm and metric, so that
-- any statistic can be computed again from what was measured. round counts from 1 within the
-- warm-up rounds (warmup = 1) and within the measured ones (warmup = 0); seq is the run's place in
-- the whole experiment (the order the arms ran in, for drift).
CREATE TABLE experiment_samples (
	op_id  INTEGER NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
	round  INTEGER NOT NULL,
	warmup INTEGER NOT NULL CHECK (warmup IN (0, 1)),
	seq    INTEGER NOT NULL,
	arm    TEXT    NOT NULL,
	metric TEXT    NOT NULL,
	value  REAL    NOT NULL,
	PRIMARY KEY (op_id, warmup, round, arm, metric)
) STRICT;
