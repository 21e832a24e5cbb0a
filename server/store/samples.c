#include "server/store/samples.h"

#include "server/store/internal.h"

static json_t *sample_row(sqlite3_stmt *s)
{
	return json_pack("{s:o, s:o, s:o}", "operation_id", col_int(s, 0), "time_ns", col_int(s, 1), "result",
			 col_result(s, 2));
}

json_t *samples_list(struct store *st, long pid, uint64_t start_time, int limit, mp_err *e)
{
	sqlite3_stmt *s;
	json_t *a;

	store_conn_lock(st, P);
	s = stmt(st, ST_SAMPLES_LIST);
	sqlite3_bind_int64(s, 1, pid);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)start_time);
	sqlite3_bind_int(s, 3, limit);
	a = read_many(st, P, s, sample_row, e, "list process samples");
	store_conn_unlock(st, P);
	return a;
}

int samples_last_start_time(struct store *st, long pid, uint64_t *start_time, mp_err *e)
{
	sqlite3_stmt *s;
	int rc, ret = 0;

	*start_time = 0;
	store_conn_lock(st, R);
	s = stmt(st, ST_SAMPLES_LAST);
	sqlite3_bind_int64(s, 1, pid);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*start_time = (uint64_t)sqlite3_column_int64(s, 0);
	else if (rc != SQLITE_DONE)
		ret = store_fail(st, R, e, "find the last sample");
	sqlite3_reset(s);
	store_conn_unlock(st, R);
	return ret;
}
