#include "server/store/history.h"

#include <stdlib.h>
#include <string.h>

#include "server/store/db.h"
#include "server/store/internal.h"
#include "server/store/summary.h"

int64_t op_insert_row(struct store *st, const struct op_record *op, mp_err *e)
{
	sqlite3_stmt *s = stmt(st, ST_OP_INSERT);
	int brc = SQLITE_OK;   /* the first failed bind */

	BIND(brc, sqlite3_bind_text(s, 1, op->kind, -1, SQLITE_TRANSIENT));
	BIND(brc, sqlite3_bind_text(s, 2, op->source ? op->source : "api", -1, SQLITE_TRANSIENT));
	/* A token's change has a name ("token:NAME") and no uid. */
	if (op->has_actor)
		sqlite3_bind_int64(s, 3, op->actor_uid);
	if (op->actor_name && *op->actor_name)
		BIND(brc, sqlite3_bind_text(s, 4, op->actor_name, -1, SQLITE_TRANSIENT));
	sqlite3_bind_int64(s, 5, op->started_ns);
	if (op->finished_ns)
		sqlite3_bind_int64(s, 6, op->finished_ns);
	BIND(brc, sqlite3_bind_text(s, 7, op->status, -1, SQLITE_TRANSIENT));
	if (op->err_no)
		sqlite3_bind_int(s, 8, op->err_no);
	BIND(brc, bind_text_or_null(s, 9, op->error));
	BIND(brc, bind_json(s, 10, op->request));
	BIND(brc, bind_result(s, 11, op->result));
	BIND(brc, bind_text_or_null(s, 12, op->kernel_release));
	sqlite3_bind_int64(s, 13, st->instance);
	if (brc != SQLITE_OK)
		return bind_fail(brc, e, "insert operation");
	return run_insert(st, s, e, "insert operation");
}

int op_finish_row(struct store *st, int64_t id, const struct op_outcome *out, mp_err *e)
{
	char *text;
	int rc = result_text(out->result, &text);

	if (rc != SQLITE_OK)
		return bind_fail(rc, e, "finish operation");
	rc = op_finish_row_text(st, id, out, text, e);
	free(text);
	return rc;
}

int op_finish_row_text(struct store *st, int64_t id, const struct op_outcome *out, const char *text, mp_err *e)
{
	sqlite3_stmt *s = stmt(st, ST_OP_FINISH);
	int brc = SQLITE_OK;   /* the first failed bind */

	sqlite3_bind_int64(s, 1, id);
	BIND(brc, sqlite3_bind_text(s, 2, out->status, -1, SQLITE_TRANSIENT));
	sqlite3_bind_int64(s, 3, out->finished_ns);
	if (out->err_no)
		sqlite3_bind_int(s, 4, out->err_no);
	BIND(brc, bind_text_or_null(s, 5, out->error));
	BIND(brc, bind_text_or_null(s, 6, text));
	if (brc != SQLITE_OK)
		return bind_fail(brc, e, "finish operation");
	/* An operation that is not there is our bug (or a hand-edited database), not the client's. */
	return run_write_one(st, s, MPE_STORE_ERROR, "operation", id, e, "finish operation");
}

int64_t history_insert(struct store *st, const struct op_record *op, mp_err *e)
{
	int64_t id;

	store_conn_lock(st, W);
	id = op_insert_row(st, op, e);
	store_conn_unlock(st, W);
	if (id > 0)
		STORE_EVENT(st, op_inserted, id, op);
	return id;
}

int history_finish(struct store *st, int64_t id, const struct op_outcome *out, mp_err *e)
{
	int rc;

	store_conn_lock(st, W);
	rc = op_finish_row(st, id, out, e);
	store_conn_unlock(st, W);
	if (rc == 0)
		STORE_EVENT(st, op_finished, id, out);
	return rc;
}

int history_mark_unfinished(struct store *st, int64_t now_ns, mp_err *e)
{
	sqlite3_stmt *s;
	int n = -1;

	store_conn_lock(st, W);
	s = stmt(st, ST_OP_UNFINISHED);
	sqlite3_bind_int64(s, 1, now_ns);
	sqlite3_bind_int64(s, 2, st->instance);
	if (run_write(st, s, e, "mark unfinished operations") == 0)
		n = sqlite3_changes(sqlite3_db_handle(s));
	store_conn_unlock(st, W);
	return n;
}

static int knob_change_row(struct store *st, int64_t op_id, const struct knob_change_rec *kc, mp_err *e)
{
	sqlite3_stmt *s = stmt(st, ST_KNOB_CHANGE);
	int brc = SQLITE_OK;   /* the first failed bind */

	sqlite3_bind_int64(s, 1, op_id);
	sqlite3_bind_int(s, 2, kc->seq);
	BIND(brc, sqlite3_bind_text(s, 3, kc->knob, -1, SQLITE_TRANSIENT));
	BIND(brc, bind_text_or_null(s, 4, kc->old));
	BIND(brc, sqlite3_bind_text(s, 5, kc->new_value, -1, SQLITE_TRANSIENT));
	BIND(brc, sqlite3_bind_text(s, 6, kc->status, -1, SQLITE_TRANSIENT));
	if (kc->err_no)
		sqlite3_bind_int(s, 7, kc->err_no);
	if (brc != SQLITE_OK)
		return bind_fail(brc, e, "insert knob change");
	return run_write(st, s, e, "insert knob change");
}

int knob_record_rows(struct store *st, const struct knob_record *r, mp_err *e)
{
	for (size_t i = 0; i < r->n; i++)
		if (knob_change_row(st, r->id, &r->kc[i], e) < 0)
			return -1;
	return op_finish_row(st, r->id, &r->out, e);
}

/* Transaction "knob_record": op inserted first when given (*id filled), then the changes and the
 * outcome of *id. */
static int record_knobs(struct store *st, const struct op_record *op, int64_t *id, const struct knob_change_rec *kc,
			size_t n, const struct op_outcome *out, mp_err *e)
{
	int rc = -1;

	store_conn_lock(st, W);
	if (tx_begin(st, "knob_record", e) < 0)
		goto out;
	if (op && (*id = op_insert_row(st, op, e)) < 0)
		goto rollback;
	if (knob_record_rows(st, &(struct knob_record){ *id, kc, n, *out }, e) < 0)
		goto rollback;
	rc = tx_commit(st, e);
	goto out;
rollback:
	tx_rollback(st);
out:
	store_conn_unlock(st, W);
	if (rc == 0 && op)
		STORE_EVENT(st, op_inserted, *id, op);
	if (rc == 0)
		STORE_EVENT(st, op_finished, *id, out);
	return rc;
}

int history_record_knobs(struct store *st, int64_t id, const struct knob_change_rec *kc, size_t n,
			 const struct op_outcome *out, mp_err *e)
{
	return record_knobs(st, NULL, &id, kc, n, out, e);
}

int history_insert_knobs(struct store *st, const struct op_record *op, const struct knob_change_rec *kc, size_t n,
			 const struct op_outcome *out, int64_t *id, mp_err *e)
{
	return record_knobs(st, op, id, kc, n, out, e);
}

/* ---- reading (the reader connection) ---------------------------------------------------------- */

/* The summary of a row selected with OP_COLS first. */
static json_t *op_summary(sqlite3_stmt *s)
{
	json_t *actor = json_null();

	if (sqlite3_column_type(s, 3) != SQLITE_NULL || sqlite3_column_type(s, 4) != SQLITE_NULL)
		actor = json_pack("{s:o, s:o}", "uid", col_int(s, 3), "name", col_text(s, 4));
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			 "id", (json_int_t)sqlite3_column_int64(s, 0),
			 "kind", col_text(s, 1),
			 "source", col_text(s, 2),
			 "actor", actor,
			 "started_ns", col_int(s, 5),
			 "finished_ns", col_int(s, 6),
			 "status", col_text(s, 7),
			 "errno", col_int(s, 8),
			 "error", col_text(s, 9));
}

/* The summary's inputs (OP_SUMMARY_COLS) start at column first: request, targets, changes. */
static int add_summary(json_t *op, sqlite3_stmt *s, int first)
{
	json_t *request = col_json(s, first), *targets = col_json(s, first + 1);
	json_t *text = op_summary_text(json_string_value(json_object_get(op, "kind")),
				       json_string_value(json_object_get(op, "status")), request, targets,
				       (const char *)sqlite3_column_text(s, first + 2));
	int rc = text ? json_object_set_new(op, "summary", text) : -1;

	json_decref(request);
	json_decref(targets);
	return rc;
}

static const char *text_or_null(sqlite3_stmt *s, int col)
{
	return (const char *)sqlite3_column_text(s, col);
}

struct each {                    /* a caller's row function and its argument */
	op_row_fn fn;
	void *arg;
};

/* One OP_LIST row handed to the caller: pointers into the statement's row. A row whose summary
 * needs the request or targets parses them here (not knobs.set: its text is a column). */
static int list_row(sqlite3_stmt *s, void *arg)
{
	const struct each *each = arg;
	char summary[OP_SUMMARY_BUF];
	json_t *request = NULL, *targets = NULL;
	struct op_row r;

	r.id = sqlite3_column_int64(s, 0);
	r.kind = text_or_null(s, 1);
	r.source = text_or_null(s, 2);
	r.has_uid = col_opt_int(s, 3, &r.uid);
	r.actor_name = text_or_null(s, 4);
	r.has_started = col_opt_int(s, 5, &r.started_ns);
	r.has_finished = col_opt_int(s, 6, &r.finished_ns);
	r.status = text_or_null(s, 7);
	r.has_errno = col_opt_int(s, 8, &r.err_no);
	r.error = text_or_null(s, 9);
	if (sqlite3_column_type(s, OP_NCOLS) != SQLITE_NULL)
		request = col_json(s, OP_NCOLS);
	if (sqlite3_column_type(s, OP_NCOLS + 1) != SQLITE_NULL)
		targets = col_json(s, OP_NCOLS + 1);
	r.summary = op_summary_line(r.kind, r.status, request, targets, text_or_null(s, OP_NCOLS + 2), summary);
	json_decref(request);
	json_decref(targets);
	return each->fn(&r, each->arg);
}

int history_list_each(struct store *st, const struct history_filter *f, op_row_fn fn, void *arg,
		      int64_t *next_before_id, mp_err *e)
{
	struct each each = { fn, arg };
	sqlite3_stmt *s;
	int brc = SQLITE_OK;   /* the first failed bind */
	int rc;

	*next_before_id = 0;
	store_conn_lock(st, P);
	s = stmt(st, ST_OP_LIST);
	BIND(brc, bind_text_or_null(s, 1, f->kind));
	BIND(brc, bind_text_or_null(s, 2, f->status));
	if (f->has_since)
		sqlite3_bind_int64(s, 3, f->since_ns);
	if (f->has_until)
		sqlite3_bind_int64(s, 4, f->until_ns);
	if (f->before_id > 0)
		sqlite3_bind_int64(s, 5, f->before_id);
	/* One row more than asked tells whether there is a next page. */
	sqlite3_bind_int(s, 6, f->limit + 1);
	rc = brc != SQLITE_OK ? bind_fail(brc, e, "list operations")
			      : read_page(st, P, s, f->limit, list_row, &each, next_before_id, e, "list operations");
	store_conn_unlock(st, P);
	return rc;
}

static json_t *op_full(sqlite3_stmt *s)
{
	json_t *op = op_summary(s);

	if (op) {
		json_object_set_new(op, "request", col_json(s, OP_NCOLS));
		json_object_set_new(op, "result", col_result(s, OP_NCOLS + 1));
		json_object_set_new(op, "kernel_release", col_text(s, OP_NCOLS + 2));
		if (add_summary(op, s, OP_NCOLS + 3) < 0) {
			json_decref(op);
			return NULL;
		}
	}
	return op;
}

static json_t *change_row(sqlite3_stmt *s)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "seq", col_int(s, 0), "knob", col_text(s, 1),
			 "old", col_text(s, 2), "new", col_text(s, 3), "status", col_text(s, 4), "errno",
			 col_int(s, 5));
}

json_t *history_get(struct store *st, int64_t id, mp_err *e)
{
	sqlite3_stmt *s;
	json_t *op, *changes = NULL;

	store_conn_lock(st, R);
	/* One read transaction, so that the operation and its changes are one snapshot. */
	sqlite3_exec(st->c[R].db, "BEGIN", NULL, NULL, NULL);
	s = stmt(st, ST_OP_GET);
	sqlite3_bind_int64(s, 1, id);
	if ((op = read_one(st, R, s, op_full, MPE_HISTORY_NOT_FOUND, "operation", id, e))) {
		s = stmt(st, ST_OP_GET_CHANGES);
		sqlite3_bind_int64(s, 1, id);
		if (!(changes = read_many(st, R, s, change_row, e, "get knob changes"))) {
			json_decref(op);
			op = NULL;
		} else {
			json_object_set_new(op, "knob_changes", changes);
		}
	}
	sqlite3_exec(st->c[R].db, "COMMIT", NULL, NULL, NULL);
	store_conn_unlock(st, R);
	return op;
}
