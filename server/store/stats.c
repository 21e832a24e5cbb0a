#include "server/store/stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "common/stats.h"
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

/* Pacing. The scan runs at SCHED_IDLE (api/slow.c), yet on this kind of machine (2 virtual CPUs)
 * a busy core still slows the writers on the other one: a SCHED_IDLE busy loop alone added 4 ms
 * to their p99 (bench/README.md, row 6). So while writers commit, the scan gives way: every
 * PACE_ROWS rows (about a millisecond of walking) it looks whether any commit happened since the
 * last look, and if one did it sleeps PACE_SLEEP times as long as it walked. With no writer it
 * never sleeps, so the statistics' own time is unchanged on a quiet daemon. */
#define PACE_ROWS  8192
#define PACE_SLEEP 3

unsigned stats_pauses;

struct pace {
	unsigned commits;             /* st->commits at the last look */
	struct timespec since;        /* when the walk resumed */
};

static void pace_begin(const struct store *st, struct pace *p)
{
	p->commits = __atomic_load_n(&st->commits, __ATOMIC_RELAXED);
	clock_gettime(CLOCK_MONOTONIC, &p->since);
}

static void pace(const struct store *st, struct pace *p, size_t row)
{
	struct timespec now, nap;
	unsigned c;
	int64_t ran;

	if (row % PACE_ROWS)
		return;
	c = __atomic_load_n(&st->commits, __ATOMIC_RELAXED);
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (c != p->commits) {
		ran = (now.tv_sec - p->since.tv_sec) * 1000000000LL + (now.tv_nsec - p->since.tv_nsec);
		ran = ran > 50000000 ? 50000000 : ran;   /* a walk descheduled for long is not owed more */
		ran *= PACE_SLEEP;
		nap.tv_sec = ran / 1000000000LL;
		nap.tv_nsec = ran % 1000000000LL;
		nanosleep(&nap, NULL);
		__atomic_add_fetch(&stats_pauses, 1, __ATOMIC_RELAXED);
		clock_gettime(CLOCK_MONOTONIC, &now);
		c = __atomic_load_n(&st->commits, __ATOMIC_RELAXED);
	}
	p->commits = c;
	p->since = now;
}

/* Up to this many samples are kept in memory (8 MiB) and walked once, as they come in latency
 * order; a population larger than that is counted in SQL and walked again without a buffer. */
size_t stats_buf_samples = (size_t)1 << 20;

/* The walk in latency order into a buffer: 1 when it held every sample (*out filled), 0 when
 * there are more than stats_buf_samples (nothing filled), -1 on error. */
static int walk_buffered(struct store *st, sqlite3_stmt *s, struct mmstats *out, mp_err *e)
{
	double *v = NULL;
	size_t n = 0, cap = 0;
	struct pace p;
	int rc;

	pace_begin(st, &p);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		pace(st, &p, n + 1);
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			double *nv;
			if (cap >= stats_buf_samples) {
				free(v);
				return 0;
			}
			if (!(nv = realloc(v, (ncap = ncap > stats_buf_samples ? stats_buf_samples : ncap) * sizeof *v))) {
				free(v);
				return mp_nomem(e);
			}
			v = nv;
			cap = ncap;
		}
		v[n++] = (double)sqlite3_column_int64(s, 0);
	}
	if (rc != SQLITE_DONE) {
		free(v);
		return store_fail(st, P, e, "latency statistics");
	}
	mmstats_sorted(v, n, out);
	free(v);
	return 1;
}

/* More samples than the buffer: n and the mean from SQL, then a walk that keeps nothing. */
static int walk_counted(struct store *st, int m, const struct stats_filter *f, struct mmstats *out, mp_err *e)
{
	sqlite3_stmt *s = stmt(st, ST_STATS_COUNT_0 + m);
	struct mmstats_walk w;
	struct pace p;
	int64_t n;
	double sum;
	int rc;

	bind_filter(s, f);
	if (sqlite3_step(s) != SQLITE_ROW)
		return store_fail(st, P, e, "latency statistics");
	n = sqlite3_column_int64(s, 0);
	sum = sqlite3_column_double(s, 1);
	mmstats_walk_begin(&w, (size_t)n, n ? sum / (double)n : 0, out);
	s = stmt(st, ST_STATS_WALK_0 + m);
	bind_filter(s, f);
	pace_begin(st, &p);
	while (w.i < w.n && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		mmstats_walk_add(&w, (double)sqlite3_column_int64(s, 0));
		pace(st, &p, w.i);
	}
	if (w.i != w.n)
		return store_fail(st, P, e, "latency statistics");
	mmstats_walk_end(&w);
	return 0;
}

int stats_latency(struct store *st, const struct stats_filter *f, struct mmstats *out, mp_err *e)
{
	int m = (f->size_kb ? F_SIZE : 0) | (f->node >= 0 ? F_NODE : 0) | (f->since_ns ? F_SINCE : 0) |
		(f->until_ns ? F_UNTIL : 0);
	sqlite3_stmt *s;
	int rc = -1;

	store_conn_lock(st, P);
	__atomic_add_fetch(&st->scans, 1, __ATOMIC_RELAXED);
	/* One snapshot for every statement, so that a count is the walk's. */
	if (sqlite3_exec(st->c[P].db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		store_fail(st, P, e, "latency statistics");
		goto out;
	}
	s = stmt(st, ST_STATS_WALK_0 + m);
	bind_filter(s, f);
	rc = walk_buffered(st, s, out, e);
	sqlite3_reset(s);
	if (rc == 0)
		rc = walk_counted(st, m, f, out, e);
	sqlite3_reset(st->stmts[ST_STATS_COUNT_0 + m]);
	sqlite3_reset(st->stmts[ST_STATS_WALK_0 + m]);
	sqlite3_exec(st->c[P].db, "COMMIT", NULL, NULL, NULL);
	rc = rc < 0 ? -1 : 0;
out:
	__atomic_sub_fetch(&st->scans, 1, __ATOMIC_RELAXED);
	store_conn_unlock(st, P);
	return rc;
}

int stats_op_latency(struct store *st, int64_t op_id, struct mmstats *out, double p95_ci[2], mp_err *e)
{
	double *v = NULL;            /* owned: the samples, grown as read */
	size_t n = 0, cap = 0;
	sqlite3_stmt *s;
	int rc;

	store_conn_lock(st, P);
	s = stmt(st, ST_BATCH_LAT_OP);
	sqlite3_bind_int64(s, 1, op_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (n == cap) {
			double *nv = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof *v);
			if (!nv) {
				rc = SQLITE_NOMEM;
				break;
			}
			v = nv;
		}
		v[n++] = (double)sqlite3_column_int64(s, 0);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		if (rc == SQLITE_NOMEM)
			mp_nomem(e);
		else
			store_fail(st, P, e, "batch latencies");
		store_conn_unlock(st, P);
		free(v);
		return -1;
	}
	store_conn_unlock(st, P);
	mmstats_sorted(v, n, out);
	if (p95_ci) {
		double p95;
		p95_ci[0] = p95_ci[1] = NAN;
		if (n && stats_p95_ci(v, n, &p95, &p95_ci[0], &p95_ci[1]) < 0 && errno == ENOMEM) {
			free(v);
			return mp_nomem(e);
		}
	}
	free(v);
	return 0;
}
