#include "server/store/history.h"

#include <stdlib.h>
#include <string.h>

#include "server/store/db.h"

/* Binds a JSON value as TEXT (NULL stays NULL). The dumped string is handed to SQLite to free. */
static int bind_json(sqlite3_stmt *s, int i, json_t *v)
{
	char *t;

	if (!v)
		return sqlite3_bind_null(s, i);
	if (!(t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)))
		return SQLITE_NOMEM;
	return sqlite3_bind_text(s, i, t, -1, free);
}

static int bind_text_or_null(sqlite3_stmt *s, int i, const char *t)
{
	return t ? sqlite3_bind_text(s, i, t, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, i);
}

static const char SQL_INSERT[] =
	"INSERT INTO operations (kind, source, actor_uid, actor_name, started_ns, finished_ns, status, errno, "
	"error, request, result, kernel_release) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";

int64_t history_insert(struct store *st, const struct op_record *op, mp_err *e)
{
	sqlite3_stmt *s = store_stmt(st, SQL_INSERT, e);

	if (!s)
		return -1;
	sqlite3_bind_text(s, 1, op->kind, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, op->source ? op->source : "api", -1, SQLITE_TRANSIENT);
	if (op->has_actor) {
		sqlite3_bind_int64(s, 3, op->actor_uid);
		if (op->actor_name && *op->actor_name)
			sqlite3_bind_text(s, 4, op->actor_name, -1, SQLITE_TRANSIENT);
	}
	sqlite3_bind_int64(s, 5, op->started_ns);
	if (op->finished_ns)
		sqlite3_bind_int64(s, 6, op->finished_ns);
	sqlite3_bind_text(s, 7, op->status, -1, SQLITE_TRANSIENT);
	if (op->err_no)
		sqlite3_bind_int(s, 8, op->err_no);
	bind_text_or_null(s, 9, op->error);
	if (bind_json(s, 10, op->request) != SQLITE_OK || bind_json(s, 11, op->result) != SQLITE_OK)
		return store_fail(st, e, "bind operation");
	bind_text_or_null(s, 12, op->kernel_release);
	if (sqlite3_step(s) != SQLITE_DONE) {
		store_fail(st, e, "insert operation");
		sqlite3_reset(s);
		return -1;
	}
	sqlite3_reset(s);
	return sqlite3_last_insert_rowid(store_db(st));
}

static const char SQL_FINISH[] =
	"UPDATE operations SET status = ?2, finished_ns = ?3, errno = ?4, error = ?5, "
	"result = coalesce(?6, result) WHERE id = ?1";

static const char SQL_UNFINISHED[] =
	"UPDATE operations SET status = 'interrupted', finished_ns = ?1, "
	"error = 'the daemon stopped, or could not record the outcome, before this operation finished' "
	"WHERE status = 'running' AND started_ns < ?2";

int history_mark_unfinished(struct store *st, int64_t daemon_start_ns, int64_t now_ns, mp_err *e)
{
	sqlite3_stmt *s;
	int n = -1;

	store_lock(st);
	if (!(s = store_stmt(st, SQL_UNFINISHED, e)))
		goto out;
	sqlite3_bind_int64(s, 1, now_ns);
	sqlite3_bind_int64(s, 2, daemon_start_ns);
	if (sqlite3_step(s) != SQLITE_DONE)
		store_fail(st, e, "mark unfinished operations");
	else
		n = sqlite3_changes(store_db(st));
	sqlite3_reset(s);
out:
	store_unlock(st);
	return n;
}

int history_finish(struct store *st, int64_t id, const char *status, int64_t finished_ns, int err_no,
		   const char *error, json_t *result, mp_err *e)
{
	sqlite3_stmt *s = store_stmt(st, SQL_FINISH, e);
	int rc;

	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_text(s, 2, status, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, finished_ns);
	if (err_no)
		sqlite3_bind_int(s, 4, err_no);
	bind_text_or_null(s, 5, error);
	if (bind_json(s, 6, result) != SQLITE_OK)
		return store_fail(st, e, "bind result");
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store_fail(st, e, "finish operation");
	if (sqlite3_changes(store_db(st)) != 1)
		return mp_fail(e, MPE_STORE_ERROR, 0, "finish operation: no operation %lld", (long long)id);
	return 0;
}

static const char SQL_KNOB_CHANGE[] =
	"INSERT INTO knob_changes (op_id, seq, knob, old, new, status, errno) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

int history_add_knob_change(struct store *st, int64_t op_id, const struct knob_change_rec *kc, mp_err *e)
{
	sqlite3_stmt *s = store_stmt(st, SQL_KNOB_CHANGE, e);
	int rc;

	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, op_id);
	sqlite3_bind_int(s, 2, kc->seq);
	sqlite3_bind_text(s, 3, kc->knob, -1, SQLITE_TRANSIENT);
	bind_text_or_null(s, 4, kc->old);
	sqlite3_bind_text(s, 5, kc->new_value, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 6, kc->status, -1, SQLITE_TRANSIENT);
	if (kc->err_no)
		sqlite3_bind_int(s, 7, kc->err_no);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? 0 : store_fail(st, e, "insert knob change");
}

/* ---- reading ---------------------------------------------------------------------------------- */

#define OP_COLS "id, kind, source, actor_uid, actor_name, started_ns, finished_ns, status, errno, error"

/* The summary of a row selected with OP_COLS first. */
static json_t *op_summary(sqlite3_stmt *s)
{
	json_t *actor = json_null();

	if (sqlite3_column_type(s, 3) != SQLITE_NULL)
		actor = json_pack("{s:I, s:o}", "uid", (json_int_t)sqlite3_column_int64(s, 3), "name", store_col_text(s, 4));
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			 "id", (json_int_t)sqlite3_column_int64(s, 0),
			 "kind", store_col_text(s, 1),
			 "source", store_col_text(s, 2),
			 "actor", actor,
			 "started_ns", store_col_int(s, 5),
			 "finished_ns", store_col_int(s, 6),
			 "status", store_col_text(s, 7),
			 "errno", store_col_int(s, 8),
			 "error", store_col_text(s, 9));
}

/* One statement for every filter combination: a NULL parameter disables its condition. */
static const char SQL_LIST[] =
	"SELECT " OP_COLS " FROM operations "
	"WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR status = ?2) "
	"AND (?3 IS NULL OR started_ns >= ?3) AND (?4 IS NULL OR started_ns < ?4) "
	"AND (?5 IS NULL OR id < ?5) ORDER BY id DESC LIMIT ?6";

int history_list(struct store *st, const struct history_filter *f, json_t **ops, int64_t *next_before_id,
		 mp_err *e)
{
	sqlite3_stmt *s;
	json_t *a = json_array();
	int64_t last = 0;
	int rc, n = 0;

	*ops = NULL;
	*next_before_id = 0;
	store_lock(st);
	if (!(s = store_stmt(st, SQL_LIST, e)))
		goto fail;
	bind_text_or_null(s, 1, f->kind);
	bind_text_or_null(s, 2, f->status);
	if (f->has_since)
		sqlite3_bind_int64(s, 3, f->since_ns);
	if (f->has_until)
		sqlite3_bind_int64(s, 4, f->until_ns);
	if (f->before_id > 0)
		sqlite3_bind_int64(s, 5, f->before_id);
	/* One row more than asked tells whether there is a next page. */
	sqlite3_bind_int(s, 6, f->limit + 1);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (n == f->limit) {
			*next_before_id = last;
			break;
		}
		last = sqlite3_column_int64(s, 0);
		json_array_append_new(a, op_summary(s));
		n++;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		store_fail(st, e, "list operations");
		sqlite3_reset(s);
		goto fail;
	}
	sqlite3_reset(s);
	store_unlock(st);
	*ops = a;
	return 0;
fail:
	store_unlock(st);
	json_decref(a);
	return -1;
}

static const char SQL_GET[] =
	"SELECT " OP_COLS ", request, result, kernel_release FROM operations WHERE id = ?1";
static const char SQL_GET_CHANGES[] =
	"SELECT seq, knob, old, new, status, errno FROM knob_changes WHERE op_id = ?1 ORDER BY seq";

json_t *history_get(struct store *st, int64_t id, mp_err *e)
{
	sqlite3_stmt *s;
	json_t *op = NULL, *changes;
	int rc;

	store_lock(st);
	if (!(s = store_stmt(st, SQL_GET, e)))
		goto out;
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE) {
		mp_fail(e, MPE_HISTORY_NOT_FOUND, 0, "no operation %lld", (long long)id);
		sqlite3_reset(s);
		goto out;
	}
	if (rc != SQLITE_ROW) {
		store_fail(st, e, "get operation");
		sqlite3_reset(s);
		goto out;
	}
	op = op_summary(s);
	json_object_set_new(op, "request", store_col_json(s, 10));
	json_object_set_new(op, "result", store_col_json(s, 11));
	json_object_set_new(op, "kernel_release", store_col_text(s, 12));
	sqlite3_reset(s);

	if (!(s = store_stmt(st, SQL_GET_CHANGES, e))) {
		json_decref(op);
		op = NULL;
		goto out;
	}
	sqlite3_bind_int64(s, 1, id);
	changes = json_array();
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		json_array_append_new(changes, json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}",
							 "seq", store_col_int(s, 0), "knob", store_col_text(s, 1),
							 "old", store_col_text(s, 2), "new", store_col_text(s, 3),
							 "status", store_col_text(s, 4), "errno", store_col_int(s, 5)));
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		store_fail(st, e, "get knob changes");
		json_decref(changes);
		json_decref(op);
		op = NULL;
		goto out;
	}
	json_object_set_new(op, "knob_changes", changes);
out:
	store_unlock(st);
	return op;
}
