#include "server/store/stats.h"

#include "server/store/db.h"
#include "server/store/internal.h"

#define F_SIZE  1
#define F_NODE  2
#define F_SINCE 4
#define F_UNTIL 8
_Static_assert(ST_STATS_COUNT_15 == ST_STATS_COUNT_0 + 15 && ST_STATS_WALK_15 == ST_STATS_WALK_0 + 15,
	       "the statistics variants are consecutive in the statement table");

static void bind_filter(sqlite3_stmt *s, const struct stats_filter *f)
{
	sqlite3_bind_text(s, 1, f->kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, f->grow ? "grow" : "shrink", -1, SQLITE_STATIC);
	if (f->size_kb)
		sqlite3_bind_int64(s, 3, (int64_t)f->size_kb);
	if (f->node >= 0)
		sqlite3_bind_int(s, 4, f->node);
	if (f->since_ns)
		sqlite3_bind_int64(s, 5, f->since_ns);
	if (f->until_ns)
		sqlite3_bind_int64(s, 6, f->until_ns);
}

int stats_latency(struct store *st, const struct stats_filter *f, struct mmstats *out, mp_err *e)
{
	int m = (f->size_kb ? F_SIZE : 0) | (f->node >= 0 ? F_NODE : 0) | (f->since_ns ? F_SINCE : 0) |
		(f->until_ns ? F_UNTIL : 0);
	struct mmstats_walk w;
	sqlite3_stmt *s;
	int64_t n;
	double sum;
	int rc, ret = -1;

	store_conn_lock(st, R);
	/* One snapshot for both statements, so that the count is the walk's. */
	if (sqlite3_exec(st->c[R].db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		store_fail(st, R, e, "latency statistics");
		goto out;
	}
	s = stmt(st, ST_STATS_COUNT_0 + m);
	bind_filter(s, f);
	if ((rc = sqlite3_step(s)) != SQLITE_ROW) {
		store_fail(st, R, e, "latency statistics");
		goto end;
	}
	n = sqlite3_column_int64(s, 0);
	sum = sqlite3_column_double(s, 1);
	sqlite3_reset(s);
	mmstats_walk_begin(&w, (size_t)n, n ? sum / (double)n : 0, out);
	if (n) {
		s = stmt(st, ST_STATS_WALK_0 + m);
		bind_filter(s, f);
		while (w.i < w.n && (rc = sqlite3_step(s)) == SQLITE_ROW)
			mmstats_walk_add(&w, (double)sqlite3_column_int64(s, 0));
		sqlite3_reset(s);
		if (w.i != w.n) {
			store_fail(st, R, e, "latency statistics");
			goto end;
		}
		mmstats_walk_end(&w);
	}
	ret = 0;
end:
	sqlite3_exec(st->c[R].db, "COMMIT", NULL, NULL, NULL);
out:
	store_conn_unlock(st, R);
	return ret;
}
