#include "server/store/stats.h"

#include <stdlib.h>

#include "server/store/db.h"

int stats_latency(struct store *st, const struct stats_filter *f, struct mmstats *out, mp_err *e)
{
	/* Walks the covering index batches_stats in latency order: the samples arrive sorted, so
	 * there is no sort and no table lookup even over millions of rows. */
	static const char sql[] =
		"SELECT latency_ns FROM batches INDEXED BY batches_stats WHERE kind = ?1 AND direction = ?2 "
		"AND (?3 IS NULL OR size_kb = ?3) AND (?4 IS NULL OR node = ?4) "
		"AND (?5 IS NULL OR started_ns >= ?5) AND (?6 IS NULL OR started_ns < ?6) ORDER BY latency_ns";
	sqlite3_stmt *s;
	double *v = NULL;
	size_t n = 0, cap = 0;
	int rc, ret = -1;

	store_lock(st);
	if (!(s = store_stmt(st, sql, e)))
		goto out;
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
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			double *nv = realloc(v, ncap * sizeof *v);
			if (!nv) {
				mp_fail(e, 500, "stats.oom", 0, "out of memory");
				goto out;
			}
			v = nv;
			cap = ncap;
		}
		v[n++] = (double)sqlite3_column_int64(s, 0);
	}
	if (rc != SQLITE_DONE) {
		store_fail(st, e, "latency statistics");
		goto out;
	}
	mmstats_sorted(v, n, out);
	ret = 0;
out:
	if (s)
		sqlite3_reset(s);
	store_unlock(st);
	free(v);
	return ret;
}
