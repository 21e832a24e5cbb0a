/* The one scan behind GET /metrics: at start, the counters are set from what the database already
 * holds, so that a scrape never reads a table (see server/metrics.h). Runs on the writer before
 * anything else writes: an operation or job a previous daemon left queued or running is counted
 * "interrupted" here, which is what start-up recovery is about to mark it, and the recovery's own
 * writes are then not counted again (metrics_*_finished ignores ids this daemon did not insert).
 * The counts go to the store's events (events.h): the store knows nothing of server/metrics. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "server/store/internal.h"
#include "server/store/metrics_seed.h"

#define FINAL "CASE WHEN status IN ('queued', 'running') THEN 'interrupted' ELSE status END"

typedef void (*seed_row)(const struct store_events *ev, sqlite3_stmt *s);

static void op_row(const struct store_events *ev, sqlite3_stmt *s)
{
	if (ev->seed_op)
		ev->seed_op((const char *)sqlite3_column_text(s, 0), (const char *)sqlite3_column_text(s, 1),
			    (uint64_t)sqlite3_column_int64(s, 2));
}

static void job_row(const struct store_events *ev, sqlite3_stmt *s)
{
	if (ev->seed_job)
		ev->seed_job((const char *)sqlite3_column_text(s, 0), (const char *)sqlite3_column_text(s, 1),
			     (uint64_t)sqlite3_column_int64(s, 2));
}

/* The scheduler's runs as history holds them: each submitted run is a job with its schedule id;
 * a skip or a failure is a "schedule.run" operation. */
static void sched_row(const struct store_events *ev, sqlite3_stmt *s)
{
	const char *status = (const char *)sqlite3_column_text(s, 0);
	uint64_t n = (uint64_t)sqlite3_column_int64(s, 1);

	if (ev->seed_schedule)
		ev->seed_schedule(status, strcmp(status, "skipped") ? n : 0, strcmp(status, "skipped") ? 0 : n);
}

static void sched_ok_row(const struct store_events *ev, sqlite3_stmt *s)
{
	if (ev->seed_schedule_ok)
		ev->seed_schedule_ok(sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1));
}

static void batch_row(const struct store_events *ev, sqlite3_stmt *s)
{
	if (ev->seed_batches)
		ev->seed_batches((uint64_t)sqlite3_column_int64(s, 0),
				 sqlite3_column_type(s, 1) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 1),
				 !strcmp((const char *)sqlite3_column_text(s, 2), "grow"), sqlite3_column_int(s, 3),
				 (uint64_t)sqlite3_column_int64(s, 4), sqlite3_column_double(s, 5));
}

static int each(struct store *st, const char *sql, seed_row fn, mp_err *e)
{
	sqlite3_stmt *s = NULL;
	int rc;

	hold(st, W);
	if (sqlite3_prepare_v2(st->c[W].db, sql, -1, &s, NULL) != SQLITE_OK)
		return store_fail(st, W, e, "prepare the metrics seed");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		fn(st->ev, s);
	if (rc != SQLITE_DONE) {
		store_fail(st, W, e, "read the metrics seed");
		sqlite3_finalize(s);
		return -1;
	}
	sqlite3_finalize(s);
	return 0;
}

int store_metrics_seed(struct store *st, mp_err *e)
{
	/* The bucket of a latency, as metrics.c would choose it: the first bound it does not exceed. */
	char bucket[1024];
	char sql[1536];
	size_t off = 0;
	int rc = -1;

	if (!st->ev)
		return 0;   /* nobody counts */
	off += (size_t)snprintf(bucket + off, sizeof bucket - off, "CASE");
	for (int b = 0; b < st->ev->nbuckets && off < sizeof bucket; b++)
		off += (size_t)snprintf(bucket + off, sizeof bucket - off, " WHEN latency_ns <= %.0f THEN %d",
					st->ev->bucket_s[b] * 1e9, b);
	if (off >= sizeof bucket)
		return mp_fail(e, MPE_INTERNAL_ERROR, 0, "the metrics seed's bucket list does not fit");
	snprintf(bucket + off, sizeof bucket - off, " ELSE %d END", st->ev->nbuckets);
	snprintf(sql, sizeof sql, "SELECT size_kb, node, direction, %s AS b, count(*), sum(latency_ns) / 1e9 "
		 "FROM batches GROUP BY size_kb, node, direction, b", bucket);

	store_conn_lock(st, W);
	if (each(st, "SELECT kind, " FINAL ", count(*) FROM operations GROUP BY 1, 2", op_row, e) < 0 ||
	    each(st, "SELECT kind, " FINAL ", count(*) FROM jobs GROUP BY 1, 2", job_row, e) < 0 ||
	    each(st, "SELECT 'submitted', count(*) FROM jobs WHERE schedule_id IS NOT NULL "
		     "UNION ALL SELECT status, count(*) FROM operations WHERE kind = 'schedule.run' GROUP BY 1",
		 sched_row, e) < 0 ||
	    each(st, "SELECT schedule_id, max(finished_ns) FROM jobs WHERE status = 'ok' AND finished_ns IS NOT NULL "
		     "AND schedule_id IN (SELECT id FROM schedules) GROUP BY 1", sched_ok_row, e) < 0 ||
	    each(st, sql, batch_row, e) < 0)
		goto out;
	rc = 0;
out:
	store_conn_unlock(st, W);
	return rc;
}

int64_t store_file_bytes(struct store *st)
{
	/* The file name is set at open and never changes: no lock, so a scrape never waits behind a
	 * writer or a statistics scan. */
	const char *db = sqlite3_db_filename(st->c[R].db, "main");   /* the same file as the writer's */
	char wal[4096];
	struct stat sb;
	int64_t n = 0;

	if (!db || !*db || stat(db, &sb) < 0)
		return -1;
	n = sb.st_size;
	snprintf(wal, sizeof wal, "%s-wal", db);
	if (stat(wal, &sb) == 0)
		n += sb.st_size;
	return n;
}
