#include "server/store/schedules.h"

#include <stdlib.h>
#include <string.h>

#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/internal.h"

int64_t sched_store_insert(struct store *st, const struct schedule_new *n, mp_err *e)
{
	sqlite3_stmt *s;
	int64_t id = -1;
	int brc = SQLITE_OK;   /* the first failed bind */

	store_conn_lock(st, W);
	s = stmt(st, ST_SCHED_INSERT);
	BIND(brc, sqlite3_bind_text(s, 1, n->cron, -1, SQLITE_TRANSIENT));
	BIND(brc, sqlite3_bind_text(s, 2, n->timezone, -1, SQLITE_TRANSIENT));
	BIND(brc, bind_json(s, 3, n->action));
	sqlite3_bind_int(s, 4, n->enabled);
	sqlite3_bind_int64(s, 5, n->misfire_grace_s);
	sqlite3_bind_int64(s, 6, n->created_ns);
	if (n->has_uid)
		sqlite3_bind_int64(s, 7, n->uid);
	if (n->name && *n->name)
		BIND(brc, sqlite3_bind_text(s, 8, n->name, -1, SQLITE_TRANSIENT));
	if (n->next_run_ns)
		sqlite3_bind_int64(s, 9, n->next_run_ns);
	sqlite3_bind_int64(s, 10, n->max_schedules);
	if ((brc != SQLITE_OK && bind_fail(brc, e, "insert schedule") < 0) || run_write(st, s, e, "insert schedule") < 0)
		goto out;
	if (sqlite3_changes(st->c[W].db) == 0)
		mp_fail(e, MPE_SCHEDULE_LIMIT, 0, "the daemon already holds %lld schedules, as many as max-schedules "
			"allows; delete one first", (long long)n->max_schedules);
	else
		id = sqlite3_last_insert_rowid(st->c[W].db);
out:
	store_conn_unlock(st, W);
	return id;
}

/* The current row of an SCHED_GET/SCHED_LIST statement as the API shows it. */
static json_t *row_json(sqlite3_stmt *s)
{
	const char *action = (const char *)sqlite3_column_text(s, 3);
	json_t *act = action ? json_loads(action, JSON_DECODE_ANY, NULL) : NULL;
	json_t *by = json_object();

	if (sqlite3_column_type(s, 7) != SQLITE_NULL)
		json_object_set_new(by, "uid", json_integer(sqlite3_column_int64(s, 7)));
	else
		json_object_set_new(by, "uid", json_null());
	json_object_set_new(by, "name", col_text(s, 8));
	return json_pack("{s:I, s:s, s:s, s:o, s:b, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			 "id", (json_int_t)sqlite3_column_int64(s, 0),
			 "cron", (const char *)sqlite3_column_text(s, 1),
			 "timezone", (const char *)sqlite3_column_text(s, 2),
			 "action", act ? act : json_null(),
			 "enabled", sqlite3_column_int(s, 4),
			 "misfire_grace_s", (json_int_t)sqlite3_column_int64(s, 5),
			 "created_ns", (json_int_t)sqlite3_column_int64(s, 6),
			 "created_by", by,
			 "next_run_ns", col_int(s, 9),
			 "last_run_ns", col_int(s, 10),
			 "last_due_ns", col_int(s, 11),
			 "last_status", col_text(s, 12),
			 "last_job_id", col_int(s, 13),
			 "last_operation_id", col_int(s, 14),
			 "last_error", col_text(s, 15));
}

json_t *sched_store_get(struct store *st, int64_t id, mp_err *e)
{
	sqlite3_stmt *s;
	json_t *out;

	store_conn_lock(st, R);
	s = stmt(st, ST_SCHED_GET);
	sqlite3_bind_int64(s, 1, id);
	out = read_one(st, R, s, row_json, MPE_SCHEDULE_NOT_FOUND, "schedule", id, e);
	store_conn_unlock(st, R);
	return out;
}

struct each {                    /* a caller's row function and its argument */
	sched_row_fn fn;
	void *arg;
};

/* One SCHED_LIST row handed to the caller: pointers into the statement's row. */
static int list_row(sqlite3_stmt *s, void *arg)
{
	const struct each *each = arg;
	struct sched_row r;

	r.id = sqlite3_column_int64(s, 0);
	r.cron = (const char *)sqlite3_column_text(s, 1);
	r.timezone = (const char *)sqlite3_column_text(s, 2);
	r.action = (const char *)sqlite3_column_text(s, 3);
	r.enabled = sqlite3_column_int(s, 4) != 0;
	r.misfire_grace_s = sqlite3_column_int64(s, 5);
	r.created_ns = sqlite3_column_int64(s, 6);
	r.has_created_by_uid = col_opt_int(s, 7, &r.created_by_uid);
	r.created_by_name = (const char *)sqlite3_column_text(s, 8);
	r.has_next_run = col_opt_int(s, 9, &r.next_run_ns);
	r.has_last_run = col_opt_int(s, 10, &r.last_run_ns);
	r.has_last_due = col_opt_int(s, 11, &r.last_due_ns);
	r.last_status = (const char *)sqlite3_column_text(s, 12);
	r.has_last_job = col_opt_int(s, 13, &r.last_job_id);
	r.has_last_op = col_opt_int(s, 14, &r.last_op_id);
	r.last_error = (const char *)sqlite3_column_text(s, 15);
	return each->fn(&r, each->arg);
}

int sched_store_list_each(struct store *st, int64_t after_id, int limit, sched_row_fn fn, void *arg,
			  int64_t *next_after_id, mp_err *e)
{
	struct each each = { fn, arg };
	sqlite3_stmt *s;
	int rc;

	store_conn_lock(st, P);
	s = stmt(st, ST_SCHED_LIST);
	sqlite3_bind_int64(s, 1, after_id);
	sqlite3_bind_int(s, 2, limit + 1);   /* one more than the page says whether there is a next */
	rc = read_page(st, P, s, limit, list_row, &each, next_after_id, e, "list schedules");
	store_conn_unlock(st, P);
	return rc;
}

int sched_store_delete(struct store *st, int64_t id, mp_err *e)
{
	sqlite3_stmt *s;
	int rc;

	store_conn_lock(st, W);
	s = stmt(st, ST_SCHED_DELETE);
	sqlite3_bind_int64(s, 1, id);
	rc = run_write_one(st, s, MPE_SCHEDULE_NOT_FOUND, "schedule", id, e, "delete schedule");
	store_conn_unlock(st, W);
	if (rc == 0)
		STORE_EVENT(st, schedule_deleted, id);
	return rc;
}

void sched_due_free(struct sched_due *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(d[i].cron);
		free(d[i].timezone);
		json_decref(d[i].action);
	}
	free(d);
}

int sched_store_due(struct store *st, int64_t now_ns, struct sched_due **out, size_t *n, mp_err *e)
{
	sqlite3_stmt *s;
	struct sched_due *d = NULL;
	size_t cnt = 0, cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	store_conn_lock(st, R);
	s = stmt(st, ST_SCHED_DUE);
	sqlite3_bind_int64(s, 1, now_ns);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (cnt == cap) {
			struct sched_due *nd = realloc(d, (cap = cap ? cap * 2 : 8) * sizeof *d);
			if (!nd) {
				mp_nomem(e);
				goto fail;
			}
			d = nd;
		}
		d[cnt] = (struct sched_due){
			.id = sqlite3_column_int64(s, 0),
			.cron = strdup((const char *)sqlite3_column_text(s, 1)),
			.timezone = strdup((const char *)sqlite3_column_text(s, 2)),
			.action = json_loads((const char *)sqlite3_column_text(s, 3), 0, NULL),
			.misfire_grace_s = sqlite3_column_int64(s, 4),
			.next_run_ns = sqlite3_column_int64(s, 5),
		};
		if (!d[cnt].cron || !d[cnt].timezone || !d[cnt].action) {
			cnt++;
			mp_fail(e, MPE_STORE_BAD_ROW, 0, "schedule %lld: unreadable row", (long long)d[cnt - 1].id);
			goto fail;
		}
		cnt++;
	}
	if (rc != SQLITE_DONE) {
		store_fail(st, R, e, "read due schedules");
		goto fail;
	}
	sqlite3_reset(s);
	store_conn_unlock(st, R);
	*out = d;
	*n = cnt;
	return 0;
fail:
	sqlite3_reset(s);
	store_conn_unlock(st, R);
	sched_due_free(d, cnt);
	return -1;
}

int64_t sched_store_next_wake(struct store *st, mp_err *e)
{
	sqlite3_stmt *s;
	int64_t v = -1;

	store_conn_lock(st, R);
	s = stmt(st, ST_SCHED_NEXT);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_type(s, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, 0);
	else
		store_fail(st, R, e, "read next schedule");
	sqlite3_reset(s);
	store_conn_unlock(st, R);
	return v;
}

int sched_store_ran(struct store *st, int64_t id, const struct sched_ran *r, mp_err *e)
{
	sqlite3_stmt *s;
	int64_t skip_op = 0, fail_op = 0;
	int rc = -1, brc = SQLITE_OK;   /* brc: the first failed bind */

	store_conn_lock(st, W);
	if (tx_begin(st, "schedule_run", e) < 0)
		goto out;
	if ((r->skipped_op && (skip_op = op_insert_row(st, r->skipped_op, e)) < 0) ||
	    (r->failed_op && (fail_op = op_insert_row(st, r->failed_op, e)) < 0))
		goto rollback;
	s = stmt(st, ST_SCHED_RAN);
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, r->run_ns);
	sqlite3_bind_int64(s, 3, r->due_ns);
	BIND(brc, sqlite3_bind_text(s, 4, r->status, -1, SQLITE_TRANSIENT));
	if (r->job_id)
		sqlite3_bind_int64(s, 5, r->job_id);
	if (fail_op || skip_op)
		sqlite3_bind_int64(s, 6, fail_op ? fail_op : skip_op);
	if (r->error)
		BIND(brc, sqlite3_bind_text(s, 7, r->error, -1, SQLITE_TRANSIENT));
	if (r->next_run_ns)
		sqlite3_bind_int64(s, 8, r->next_run_ns);
	if ((brc != SQLITE_OK && bind_fail(brc, e, "record schedule run") < 0) ||
	    run_write(st, s, e, "record schedule run") < 0)
		goto rollback;
	rc = tx_commit(st, e);
	goto out;
rollback:
	tx_rollback(st);
out:
	store_conn_unlock(st, W);
	if (rc == 0) {
		if (r->skipped_op)
			STORE_EVENT(st, op_inserted, skip_op, r->skipped_op);
		if (r->failed_op)
			STORE_EVENT(st, op_inserted, fail_op, r->failed_op);
		STORE_EVENT(st, schedule_ran, r->status, r->skipped_op != NULL);
	}
	return rc;
}
