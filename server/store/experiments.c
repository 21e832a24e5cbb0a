#include "server/store/experiments.h"

#include "server/store/db.h"
#include "server/store/internal.h"

int exp_db_add_run(struct store *st, int64_t op_id, int round, bool warmup, int seq, const char *arm,
		   const json_t *metrics, mp_err *e)
{
	const char *name;
	json_t *v;
	int rc = -1;

	store_conn_lock(st, W);
	if (tx_begin(st, "experiment_run", e) < 0)
		goto out;
	json_object_foreach((json_t *)metrics, name, v) {
		sqlite3_stmt *s = stmt(st, ST_EXP_SAMPLE_ADD);
		int brc = SQLITE_OK;   /* the first failed bind */

		if (!json_is_number(v))
			continue;
		sqlite3_bind_int64(s, 1, op_id);
		sqlite3_bind_int(s, 2, round);
		sqlite3_bind_int(s, 3, warmup);
		sqlite3_bind_int(s, 4, seq);
		BIND(brc, sqlite3_bind_text(s, 5, arm, -1, SQLITE_TRANSIENT));
		BIND(brc, sqlite3_bind_text(s, 6, name, -1, SQLITE_TRANSIENT));
		sqlite3_bind_double(s, 7, json_number_value(v));
		if (brc != SQLITE_OK) {
			bind_fail(brc, e, "record an experiment's sample");
			goto rollback;
		}
		if (run_write(st, s, e, "record an experiment's sample") < 0)
			goto rollback;
	}
	if (tx_commit(st, e) == 0) {
		rc = 0;
		goto out;
	}
rollback:
	tx_rollback(st);
out:
	store_conn_unlock(st, W);
	return rc;
}

static json_t *row(sqlite3_stmt *s)
{
	return json_pack("{s:o, s:b, s:o, s:o, s:o, s:f}", "round", col_int(s, 0), "warmup", sqlite3_column_int(s, 1),
			 "seq", col_int(s, 2), "arm", col_text(s, 3), "metric", col_text(s, 4), "value",
			 sqlite3_column_double(s, 5));
}

json_t *exp_db_samples(struct store *st, int64_t op_id, mp_err *e)
{
	sqlite3_stmt *s;
	json_t *arr;

	store_conn_lock(st, P);
	s = stmt(st, ST_EXP_SAMPLES);
	sqlite3_bind_int64(s, 1, op_id);
	arr = read_many(st, P, s, row, e, "read an experiment's samples");
	store_conn_unlock(st, P);
	return arr;
}
