/* Retention (see retain.h for the rule). A pass first reads, on the reader, the id below which
 * each table's rows may go — so the deciding scans (an OFFSET over a million index entries) never
 * hold the writer — then deletes in named transactions of at most RETAIN_CHUNK rows per table,
 * oldest first, taking and releasing the writer lock for each.
 *
 * Age is judged in id order: everything recorded before the first operation that started inside
 * the window goes (ids are commit order; a wall clock stepped back or forward in between neither
 * pins old rows nor drops newer ones out of order). An operation's batches go before it, chunk by
 * chunk, so a resize with thousands of batches never becomes one long cascading delete. */
#include "server/store/retain.h"

#include "server/store/db.h"
#include "server/store/internal.h"

/* One int64 from a reader statement whose ?1 is arg (when arg >= 0); def when there is no row or
 * the value is NULL. */
static int64_t read_id(struct store *st, enum stmt_id id, int64_t arg, int64_t def)
{
	sqlite3_stmt *s = stmt(st, id);
	int64_t v = def;

	if (arg >= 0)
		sqlite3_bind_int64(s, 1, arg);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	return v;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* The bounds: rows with ids below them may go (0: none). */
struct bounds {
	int64_t op, batch, job;
};

static void read_bounds(struct store *st, const struct retention *r, int64_t now_ns, struct bounds *b)
{
	*b = (struct bounds){ 0 };
	store_conn_lock(st, R);
	sqlite3_exec(st->c[R].db, "BEGIN", NULL, NULL, NULL);   /* one snapshot for all of them */
	if (r->max_age_ns > 0 && now_ns > r->max_age_ns) {
		b->op = read_id(st, ST_RET_OP_YOUNG, now_ns - r->max_age_ns, -1);
		if (b->op < 0)
			b->op = read_id(st, ST_RET_OP_END, -1, 0);   /* nothing young: every one is old */
		b->job = read_id(st, ST_RET_JOB_YOUNG, now_ns - r->max_age_ns, -1);
		if (b->job < 0)
			b->job = read_id(st, ST_RET_JOB_END, -1, 0);
	}
	/* The max_n-th newest row is the oldest kept: the bound is its id (exclusive). */
	if (r->max_operations > 0)
		b->op = max64(b->op, read_id(st, ST_RET_OP_NTH, r->max_operations - 1, 0));
	if (r->max_batches > 0)
		b->batch = read_id(st, ST_RET_BATCH_NTH, r->max_batches - 1, 0);
	if (r->max_jobs > 0)
		b->job = max64(b->job, read_id(st, ST_RET_JOB_NTH, r->max_jobs - 1, 0));
	sqlite3_exec(st->c[R].db, "COMMIT", NULL, NULL, NULL);
	store_conn_unlock(st, R);
}

static int delete_chunk(struct store *st, enum stmt_id id, int64_t bound, int64_t *removed, mp_err *e)
{
	sqlite3_stmt *s;

	if (bound <= 0)
		return 0;
	s = stmt(st, id);
	sqlite3_bind_int64(s, 1, bound);
	sqlite3_bind_int(s, 2, RETAIN_CHUNK);
	if (run_write(st, s, e, "retention") < 0)
		return -1;
	*removed += sqlite3_changes(st->c[W].db);
	return sqlite3_changes(st->c[W].db);
}

/* n rows scaled by the share want/used of the pages, at least 1 when there are rows (a count of 0
 * would switch the cap off). */
static int64_t share(int64_t n, int64_t want, int64_t used)
{
	int64_t k = (int64_t)((double)n * (double)want / (double)used);

	return n > 0 && k < 1 ? 1 : k;
}

int store_size_caps(struct store *st, int64_t max_bytes, int64_t *ops, int64_t *jobs, int64_t *used, mp_err *e)
{
	sqlite3_stmt *s;
	int64_t pages = 0, page_size = 0, nops = 0, njobs = 0;
	int rc;

	*ops = *jobs = -1;
	store_conn_lock(st, R);
	s = stmt(st, ST_RET_SIZE);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		pages = sqlite3_column_int64(s, 0);
		page_size = sqlite3_column_int64(s, 1);
		nops = sqlite3_column_int64(s, 2);
		njobs = sqlite3_column_int64(s, 3);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_ROW) {
		store_fail(st, R, e, "database size");
		store_conn_unlock(st, R);
		return -1;
	}
	store_conn_unlock(st, R);
	*used = pages * page_size;
	if (max_bytes <= 0 || *used <= max_bytes)
		return 0;
	*ops = share(nops, max_bytes - max_bytes / 10, *used);
	*jobs = share(njobs, max_bytes - max_bytes / 10, *used);
	return 0;
}

int store_prune(struct store *st, const struct retention *r, int64_t now_ns, int max_tx, struct retain_counts *n,
		mp_err *e)
{
	struct bounds b;

	read_bounds(st, r, now_ns, &b);
	if (b.op <= 0 && b.batch <= 0 && b.job <= 0)
		return 0;   /* nothing is old enough: no transaction, nothing written */
	for (int t = 0; t < max_tx; t++) {
		int nb, no = 0, nj, rc;

		store_conn_lock(st, W);
		if (tx_begin(st, "retain", e) < 0) {
			store_conn_unlock(st, W);
			return -1;
		}
		if ((nb = delete_chunk(st, ST_RET_BATCH_DEL, max64(b.op, b.batch), &n->batches, e)) < 0 ||
		    (nb < RETAIN_CHUNK && (no = delete_chunk(st, ST_RET_OP_DEL, b.op, &n->operations, e)) < 0) ||
		    (nj = delete_chunk(st, ST_RET_JOB_DEL, b.job, &n->jobs, e)) < 0) {
			tx_rollback(st);
			store_conn_unlock(st, W);
			return -1;
		}
		rc = tx_commit(st, e);
		store_conn_unlock(st, W);
		if (rc < 0)
			return -1;
		if (nb == 0 && no == 0 && nj == 0)
			return 0;
	}
	return 1;
}
