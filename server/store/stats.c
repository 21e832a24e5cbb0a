#include "server/store/stats.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "server/store/db.h"

/* One statement per combination of filters, so that SQLite sees plain equalities and ranges
 * (no "?n IS NULL OR ..." evaluated on every row) and picks the best covering index: with a size,
 * batches_stats_size walks that size's rows in latency order; without one, batches_stats walks the
 * kind's. Either way the samples arrive sorted, with no sort and no table lookup, which keeps the
 * statistics over a million batches within about a hundred milliseconds. */
#define F_SIZE  1
#define F_NODE  2
#define F_SINCE 4
#define F_UNTIL 8
static char sql_variants[16][512];
static pthread_once_t sql_once = PTHREAD_ONCE_INIT;

static void build_sql(void)
{
	for (int m = 0; m < 16; m++)
		snprintf(sql_variants[m], sizeof sql_variants[m],
			 "SELECT latency_ns FROM batches WHERE kind = ?1 AND direction = ?2%s%s%s%s ORDER BY latency_ns",
			 m & F_SIZE ? " AND size_kb = ?3" : "", m & F_NODE ? " AND node = ?4" : "",
			 m & F_SINCE ? " AND started_ns >= ?5" : "", m & F_UNTIL ? " AND started_ns < ?6" : "");
}

int stats_latency(struct store *st, const struct stats_filter *f, struct mmstats *out, mp_err *e)
{
	int m = (f->size_kb ? F_SIZE : 0) | (f->node >= 0 ? F_NODE : 0) | (f->since_ns ? F_SINCE : 0) |
		(f->until_ns ? F_UNTIL : 0);
	sqlite3_stmt *s;
	double *v = NULL;
	size_t n = 0, cap = 0;
	int rc, ret = -1;

	pthread_once(&sql_once, build_sql);
	store_lock(st);
	/* The cache key is the variant's buffer, stable for the life of the process. */
	if (!(s = store_stmt(st, sql_variants[m], e)))
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
				mp_nomem(e);
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
