#include "server/store/jobs.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/internal.h"
#include "server/store/conditions.h"
#include "server/store/summary.h"

static int64_t job_insert_row(struct store *st, const struct job_row *r, int64_t op_id, mp_err *e)
{
	sqlite3_stmt *s = stmt(st, ST_JOB_INSERT);
	int brc = SQLITE_OK;   /* the first failed bind */

	BIND(brc, sqlite3_bind_text(s, 1, r->kind, -1, SQLITE_STATIC));
	/* Started in the same statement (a job run at once): what store_job_start would make it. */
	BIND(brc, sqlite3_bind_text(s, 2, r->started_ns ? "running" : r->status, -1, SQLITE_STATIC));
	BIND(brc, bind_text_or_null(s, 3, r->conflict_key));
	BIND(brc, sqlite3_bind_text(s, 4, r->source, -1, SQLITE_STATIC));
	if (r->schedule_id > 0)
		sqlite3_bind_int64(s, 5, r->schedule_id);
	if (r->has_actor)
		sqlite3_bind_int64(s, 6, r->actor_uid);
	BIND(brc, bind_text_or_null(s, 7, r->actor_name && *r->actor_name ? r->actor_name : NULL));
	if (op_id > 0)
		sqlite3_bind_int64(s, 8, op_id);
	sqlite3_bind_int64(s, 9, r->created_ns);
	BIND(brc, bind_json(s, 10, r->request));
	BIND(brc, bind_json(s, 11, r->progress));
	sqlite3_bind_int64(s, 12, st->instance);
	if (r->started_ns)
		sqlite3_bind_int64(s, 13, r->started_ns);
	if (brc != SQLITE_OK)
		return bind_fail(brc, e, "insert job");
	return run_insert(st, s, e, "insert job");
}

/* Under the write lock. */
static int job_start_row(struct store *st, int64_t id, int64_t started_ns, mp_err *e)
{
	sqlite3_stmt *s = stmt(st, ST_JOB_RUNNING);

	sqlite3_bind_int64(s, 1, started_ns);
	sqlite3_bind_int64(s, 2, id);
	return run_write_one(st, s, MPE_JOB_NOT_FOUND, "job", id, e, "start job");
}

int store_job_submit(struct store *st, const struct op_record *op, const struct job_row *r, int64_t *op_id,
		     int64_t *job_id, mp_err *e)
{
	return store_job_submit_with(st, op, r, NULL, op_id, job_id, NULL, e);
}

int store_job_submit_with(struct store *st, const struct op_record *op, const struct job_row *r,
			  const struct op_record *with, int64_t *op_id, int64_t *job_id, int64_t *with_id, mp_err *e)
{
	int rc = -1;

	store_conn_lock(st, W);
	if (tx_begin(st, "job_submit", e) < 0)
		goto out;
	if ((*op_id = op_insert_row(st, op, e)) < 0 || (*job_id = job_insert_row(st, r, *op_id, e)) < 0 ||
	    (with && (*with_id = op_insert_row(st, with, e)) < 0)) {
		tx_rollback(st);
		goto out;
	}
	rc = tx_commit(st, e);
out:
	store_conn_unlock(st, W);
	if (rc == 0) {
		STORE_EVENT(st, op_inserted, *op_id, op);
		STORE_EVENT(st, job_submitted, *job_id, r->kind, r->schedule_id);
		if (with)
			STORE_EVENT(st, op_inserted, *with_id, with);
	}
	return rc;
}

int store_job_start(struct store *st, int64_t id, int64_t started_ns, mp_err *e)
{
	int rc;

	store_conn_lock(st, W);
	rc = job_start_row(st, id, started_ns, e);
	store_conn_unlock(st, W);
	return rc;
}

/* result: x->result as result_text made it (borrowed; NULL: none). */
static int job_finish_row(struct store *st, const struct job_end *x, const char *result, mp_err *e)
{
	sqlite3_stmt *s = stmt(st, ST_JOB_FINISH);
	int brc = SQLITE_OK;   /* the first failed bind */

	BIND(brc, sqlite3_bind_text(s, 1, x->status, -1, SQLITE_STATIC));
	sqlite3_bind_int64(s, 2, x->finished_ns);
	BIND(brc, bind_text_or_null(s, 3, x->reason));
	if (x->err_no)
		sqlite3_bind_int(s, 4, x->err_no);
	BIND(brc, bind_text_or_null(s, 5, x->error && *x->error ? x->error : NULL));
	BIND(brc, bind_json(s, 6, x->progress));
	BIND(brc, bind_text_or_null(s, 7, result));
	sqlite3_bind_int64(s, 8, x->job_id);
	if (brc != SQLITE_OK)
		return bind_fail(brc, e, "finish job");
	return run_write_one(st, s, MPE_JOB_NOT_FOUND, "job", x->job_id, e, "finish job");
}

int store_job_finish(struct store *st, const struct job_end *x, mp_err *e)
{
	struct op_outcome out = { x->status, x->finished_ns, x->err_no, x->op_error, x->result };
	char *result;   /* owned: the result's stored text, made once for the job's row and its operation's */
	int rc = result_text(x->result, &result);

	if (rc != SQLITE_OK)
		return bind_fail(rc, e, "finish job");
	rc = -1;
	store_conn_lock(st, W);
	if (tx_begin(st, x->tx ? x->tx : "job_finish", e) < 0)
		goto out;
	/* The knob change first: its operation ends before the job's, as it did in its own commit. */
	if ((x->knobs && knob_record_rows(st, x->knobs, e) < 0) || job_finish_row(st, x, result, e) < 0 ||
	    (x->op_id > 0 && op_finish_row_text(st, x->op_id, &out, result, e) < 0)) {
		tx_rollback(st);
		goto out;
	}
	rc = tx_commit(st, e);
out:
	store_conn_unlock(st, W);
	free(result);
	if (rc == 0) {
		if (x->knobs)
			STORE_EVENT(st, op_finished, x->knobs->id, &x->knobs->out);
		STORE_EVENT(st, job_finished, x->job_id, x->status, x->finished_ns);
		if (x->op_id > 0)
			STORE_EVENT(st, op_finished, x->op_id, &out);
	}
	return rc;
}

/* A job's fields as GET /v1/jobs/{id} answers them; the json_t * are stolen (NULL: the key is
 * left out, for result and summary). */
struct job_cols {
	int64_t id;
	const char *kind, *status, *source;
	json_t *schedule_id, *actor, *operation_id;
	int64_t created_ns;
	json_t *started_ns, *finished_ns, *request, *progress, *result, *summary, *reason, *err_no, *error;
};

static json_t *job_json(const struct job_cols *c)
{
	/* o*: a NULL value leaves its key out. */
	return json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:o, s:I, s:o, s:o, s:o*, s:o, s:o*, s:o*, s:o, s:o, s:o}",
			 "id", (json_int_t)c->id, "kind", c->kind, "status", c->status, "source", c->source,
			 "schedule_id", c->schedule_id, "actor", c->actor, "operation_id", c->operation_id,
			 "created_ns", (json_int_t)c->created_ns, "started_ns", c->started_ns, "finished_ns",
			 c->finished_ns, "request", c->request, "progress", c->progress, "result", c->result,
			 "summary", c->summary, "reason", c->reason, "errno", c->err_no, "error", c->error);
}

/* A job row; full: the whole job (JOB_COLS), else a list item (JOB_LIST_COLS, the same columns up
 * to request). A list item has no request and result, which can be kilobytes each (a probe's
 * passes, a resize's conditions), and has instead the one-line summary the history list carries
 * (store/summary.c); the whole job is at /v1/jobs/{id}. */
static json_t *row_build(sqlite3_stmt *s, bool full)
{
	json_t *actor = json_null(), *request = col_json(s, 11), *text = NULL, *targets;

	if (sqlite3_column_type(s, 5) != SQLITE_NULL || sqlite3_column_type(s, 6) != SQLITE_NULL)
		actor = json_pack("{s:o, s:o}", "uid", col_int(s, 5), "name", col_text(s, 6));
	if (!full) {
		targets = col_json(s, 13);
		text = op_summary_text((const char *)sqlite3_column_text(s, 1), (const char *)sqlite3_column_text(s, 2),
				       request, targets, NULL);
		json_decref(targets);
		json_decref(request);
		request = NULL;
		if (!text) {
			json_decref(actor);
			return NULL;
		}
	}
	struct job_cols c = { sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1),
			      (const char *)sqlite3_column_text(s, 2), (const char *)sqlite3_column_text(s, 3),
			      col_int(s, 4), actor, col_int(s, 7), sqlite3_column_int64(s, 8), col_int(s, 9),
			      col_int(s, 10), request, col_json(s, 12), full ? col_result(s, 13) : NULL, text,
			      col_text(s, 14), col_int(s, 15), col_text(s, 16) };
	return job_json(&c);
}

/* An optional integer column's JSON: 0 is NULL. */
static json_t *int_or_null(int64_t v)
{
	return v ? json_integer((json_int_t)v) : json_null();
}

static json_t *text_or_null(const char *t)
{
	return t && *t ? json_string(t) : json_null();
}

json_t *jobs_db_view(const struct job_row *r, int64_t id, int64_t op_id, const struct job_end *x)
{
	json_t *actor = json_null(), *progress = x->progress ? x->progress : r->progress, *result = NULL;
	const char *name = r->actor_name && *r->actor_name ? r->actor_name : NULL;

	/* What the row holds, as the columns bound it (job_insert_row, job_finish_row): a NULL or
	 * empty text, an unset id, no errno are NULL; result in its stored form, read back as
	 * col_result reads it. */
	if (r->has_actor || name)
		actor = json_pack("{s:o, s:o}", "uid", r->has_actor ? json_integer(r->actor_uid) : json_null(), "name",
				  text_or_null(name));
	/* A shallow copy where it was shortened (cond_stored_form), whose shortened part alone the
	 * answer's form rebuilds; x->result itself is not changed. */
	if (x->result && (result = cond_stored_form(x->result)))
		cond_answer_form(result);
	struct job_cols c = { id, r->kind, x->status, r->source, int_or_null(r->schedule_id > 0 ? r->schedule_id : 0),
			      actor, int_or_null(op_id > 0 ? op_id : 0), r->created_ns, int_or_null(r->started_ns),
			      int_or_null(x->finished_ns), r->request ? json_deep_copy(r->request) : json_null(),
			      progress ? json_deep_copy(progress) : json_null(), result ? result : json_null(), NULL,
			      text_or_null(x->reason), int_or_null(x->err_no), text_or_null(x->error) };
	return job_json(&c);
}

static json_t *row_json(sqlite3_stmt *s)
{
	return row_build(s, true);
}

static json_t *row_list_item(sqlite3_stmt *s)
{
	return row_build(s, false);
}

json_t *jobs_db_get(struct store *st, int64_t id, mp_err *e)
{
	sqlite3_stmt *s;
	json_t *out;

	store_conn_lock(st, R);
	s = stmt(st, ST_JOB_GET);
	sqlite3_bind_int64(s, 1, id);
	out = read_one(st, R, s, row_json, MPE_JOB_NOT_FOUND, "job", id, e);
	store_conn_unlock(st, R);
	return out;
}

json_t *jobs_db_list(struct store *st, const char *kind, const char *status, int64_t schedule_id,
		     int64_t before_id, int limit, mp_err *e)
{
	sqlite3_stmt *s;
	json_t *arr;
	int brc = SQLITE_OK;   /* the first failed bind */

	store_conn_lock(st, P);
	s = stmt(st, ST_JOB_LIST);
	BIND(brc, bind_text_or_null(s, 1, kind));
	BIND(brc, bind_text_or_null(s, 2, status));
	if (schedule_id > 0)
		sqlite3_bind_int64(s, 3, schedule_id);
	if (before_id > 0)
		sqlite3_bind_int64(s, 4, before_id);
	sqlite3_bind_int(s, 5, limit);
	if (brc != SQLITE_OK) {
		store_conn_unlock(st, P);
		bind_fail(brc, e, "list jobs");
		return NULL;
	}
	arr = read_many(st, P, s, row_list_item, e, "list jobs");
	store_conn_unlock(st, P);
	return arr;
}

int jobs_db_active(struct store *st, int64_t *ids, int64_t *op_ids, int max, mp_err *e)
{
	sqlite3_stmt *s;
	int n = 0, rc;

	store_conn_lock(st, R);
	s = stmt(st, ST_JOB_ACTIVE);
	sqlite3_bind_int(s, 1, max);
	sqlite3_bind_int64(s, 2, st->instance);
	while (n < max && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		ids[n] = sqlite3_column_int64(s, 0);
		op_ids[n] = sqlite3_column_int64(s, 1);
		n++;
	}
	sqlite3_reset(s);
	if (n < max && rc != SQLITE_DONE)
		n = store_fail(st, R, e, "list active jobs");
	store_conn_unlock(st, R);
	return n;
}

int batches_db_insert(struct store *st, const struct batch_row *rows, int n, mp_err *e)
{
	sqlite3_stmt *s;
	int rc = -1;
	int brc = SQLITE_OK;   /* the first failed bind */

	if (n <= 0)
		return 0;
	store_conn_lock(st, W);
	if (tx_begin(st, "batches", e) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		const struct batch_row *r = &rows[i];
		s = stmt(st, ST_BATCH_INSERT);
		sqlite3_bind_int64(s, 1, r->op_id);
		sqlite3_bind_int64(s, 2, r->seq);
		BIND(brc, sqlite3_bind_text(s, 3, r->kind, -1, SQLITE_STATIC));
		sqlite3_bind_int64(s, 4, (int64_t)r->size_kb);
		if (r->node >= 0)
			sqlite3_bind_int(s, 5, r->node);
		BIND(brc, sqlite3_bind_text(s, 6, r->grow ? "grow" : "shrink", -1, SQLITE_STATIC));
		sqlite3_bind_int64(s, 7, r->started_ns);
		sqlite3_bind_int64(s, 8, (int64_t)r->before);
		sqlite3_bind_int64(s, 9, (int64_t)r->written);
		sqlite3_bind_int64(s, 10, (int64_t)r->after);
		sqlite3_bind_int64(s, 11, (int64_t)r->requested);
		sqlite3_bind_int64(s, 12, (int64_t)r->achieved);
		sqlite3_bind_int64(s, 13, r->elapsed_ns);
		sqlite3_bind_int64(s, 14, r->latency_ns);
		if ((brc != SQLITE_OK && bind_fail(brc, e, "insert batch") < 0) || run_write(st, s, e, "insert batch") < 0) {
			tx_rollback(st);
			goto out;
		}
	}
	rc = tx_commit(st, e);
out:
	store_conn_unlock(st, W);
	for (int i = 0; rc == 0 && i < n; i++)
		STORE_EVENT(st, batch, rows[i].size_kb, rows[i].node, rows[i].grow, rows[i].latency_ns);
	return rc;
}
