#include "server/store/jobs.h"

#include <stdlib.h>
#include <string.h>

#include "server/store/db.h"

static int bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
	return v ? sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, i);
}

/* Binds a JSON value as compact text; NULL binds SQL NULL. */
static int bind_json(sqlite3_stmt *s, int i, const json_t *v)
{
	char *txt;
	int rc;

	if (!v)
		return sqlite3_bind_null(s, i);
	if (!(txt = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)))
		return SQLITE_NOMEM;
	rc = sqlite3_bind_text(s, i, txt, -1, SQLITE_TRANSIENT);
	free(txt);
	return rc;
}

static int step_done(struct store *st, sqlite3_stmt *s, mp_err *e, const char *what)
{
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store_fail(st, e, what);
	return 0;
}

int64_t jobs_db_insert(struct store *st, const struct job_row *r, mp_err *e)
{
	static const char sql[] =
		"INSERT INTO jobs (kind, status, conflict_key, source, schedule_id, actor_uid, actor_name, op_id, "
		"created_ns, request, progress) VALUES (?,?,?,?,?,?,?,?,?,?,?)";
	sqlite3_stmt *s = store_stmt(st, sql, e);

	if (!s)
		return -1;
	sqlite3_bind_text(s, 1, r->kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, r->status, -1, SQLITE_STATIC);
	bind_text_or_null(s, 3, r->conflict_key);
	sqlite3_bind_text(s, 4, r->source, -1, SQLITE_STATIC);
	if (r->schedule_id > 0)
		sqlite3_bind_int64(s, 5, r->schedule_id);
	if (r->has_actor) {
		sqlite3_bind_int64(s, 6, r->actor_uid);
		bind_text_or_null(s, 7, r->actor_name && *r->actor_name ? r->actor_name : NULL);
	}
	if (r->op_id > 0)
		sqlite3_bind_int64(s, 8, r->op_id);
	sqlite3_bind_int64(s, 9, r->created_ns);
	bind_json(s, 10, r->request);
	bind_json(s, 11, r->progress);
	if (step_done(st, s, e, "insert job") < 0)
		return -1;
	return sqlite3_last_insert_rowid(store_db(st));
}

int jobs_db_set_running(struct store *st, int64_t id, int64_t started_ns, mp_err *e)
{
	static const char sql[] = "UPDATE jobs SET status = 'running', started_ns = ? WHERE id = ?";
	sqlite3_stmt *s = store_stmt(st, sql, e);

	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, started_ns);
	sqlite3_bind_int64(s, 2, id);
	return step_done(st, s, e, "start job");
}

int jobs_db_finish(struct store *st, int64_t id, const char *status, int64_t finished_ns, const char *reason,
		   int err_no, const char *error, json_t *progress, json_t *result, mp_err *e)
{
	static const char sql[] =
		"UPDATE jobs SET status = ?, finished_ns = ?, reason = ?, errno = ?, error = ?, "
		"progress = coalesce(?, progress), result = ? WHERE id = ?";
	sqlite3_stmt *s = store_stmt(st, sql, e);

	if (!s)
		return -1;
	sqlite3_bind_text(s, 1, status, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, finished_ns);
	bind_text_or_null(s, 3, reason);
	if (err_no)
		sqlite3_bind_int(s, 4, err_no);
	bind_text_or_null(s, 5, error && *error ? error : NULL);
	bind_json(s, 6, progress);
	bind_json(s, 7, result);
	sqlite3_bind_int64(s, 8, id);
	return step_done(st, s, e, "finish job");
}

#define JOB_COLS "id, kind, status, source, schedule_id, actor_uid, actor_name, op_id, created_ns, started_ns, " \
	"finished_ns, request, progress, result, reason, errno, error"

static json_t *row_json(sqlite3_stmt *s)
{
	json_t *actor = json_null();

	if (sqlite3_column_type(s, 5) != SQLITE_NULL)
		actor = json_pack("{s:I, s:o}", "uid", (json_int_t)sqlite3_column_int64(s, 5), "name",
				  store_col_text(s, 6));
	return json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			 "id", (json_int_t)sqlite3_column_int64(s, 0),
			 "kind", (const char *)sqlite3_column_text(s, 1),
			 "status", (const char *)sqlite3_column_text(s, 2),
			 "source", (const char *)sqlite3_column_text(s, 3),
			 "schedule_id", store_col_int(s, 4),
			 "actor", actor,
			 "op_id", store_col_int(s, 7),
			 "created_ns", (json_int_t)sqlite3_column_int64(s, 8),
			 "started_ns", store_col_int(s, 9),
			 "finished_ns", store_col_int(s, 10),
			 "request", store_col_json(s, 11),
			 "progress", store_col_json(s, 12),
			 "result", store_col_json(s, 13),
			 "reason", store_col_text(s, 14),
			 "errno", store_col_int(s, 15),
			 "error", store_col_text(s, 16));
}

json_t *jobs_db_get(struct store *st, int64_t id, mp_err *e)
{
	static const char sql[] = "SELECT " JOB_COLS " FROM jobs WHERE id = ?";
	sqlite3_stmt *s = store_stmt(st, sql, e);
	json_t *out = NULL;
	int rc;

	if (!s)
		return NULL;
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		out = row_json(s);
	else if (rc == SQLITE_DONE)
		mp_fail(e, MPE_JOB_NOT_FOUND, 0, "no job %lld", (long long)id);
	else
		store_fail(st, e, "read job");
	sqlite3_reset(s);
	if (rc == SQLITE_ROW && !out)
		mp_nomem(e);
	return out;
}

json_t *jobs_db_list(struct store *st, const char *kind, const char *status, int64_t schedule_id,
		     int64_t before_id, int limit, mp_err *e)
{
	static const char sql[] =
		"SELECT " JOB_COLS " FROM jobs WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR status = ?2) "
		"AND (?3 IS NULL OR schedule_id = ?3) AND (?4 IS NULL OR id < ?4) ORDER BY id DESC LIMIT ?5";
	sqlite3_stmt *s = store_stmt(st, sql, e);
	json_t *arr = json_array();
	int rc;

	if (!s || !arr) {
		json_decref(arr);
		return NULL;
	}
	bind_text_or_null(s, 1, kind);
	bind_text_or_null(s, 2, status);
	if (schedule_id > 0)
		sqlite3_bind_int64(s, 3, schedule_id);
	if (before_id > 0)
		sqlite3_bind_int64(s, 4, before_id);
	sqlite3_bind_int(s, 5, limit);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		json_array_append_new(arr, row_json(s));
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		json_decref(arr);
		store_fail(st, e, "list jobs");
		return NULL;
	}
	return arr;
}

int jobs_db_active(struct store *st, int64_t *ids, int64_t *op_ids, int max, mp_err *e)
{
	static const char sql[] =
		"SELECT id, coalesce(op_id, 0) FROM jobs WHERE status IN ('queued', 'running') ORDER BY id LIMIT ?";
	sqlite3_stmt *s = store_stmt(st, sql, e);
	int n = 0, rc;

	if (!s)
		return -1;
	sqlite3_bind_int(s, 1, max);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW && n < max) {
		ids[n] = sqlite3_column_int64(s, 0);
		op_ids[n] = sqlite3_column_int64(s, 1);
		n++;
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return store_fail(st, e, "list active jobs");
	return n;
}

int batches_db_insert(struct store *st, const struct batch_row *rows, int n, mp_err *e)
{
	static const char sql[] =
		"INSERT INTO batches (op_id, seq, kind, size_kb, node, direction, started_ns, before, written, after, "
		"requested, achieved, elapsed_ns, latency_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
	sqlite3_stmt *s;

	if (n <= 0)
		return 0;
	if (store_begin(st, e) < 0)
		return -1;
	if (!(s = store_stmt(st, sql, e)))
		goto fail;
	for (int i = 0; i < n; i++) {
		const struct batch_row *r = &rows[i];
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
		sqlite3_bind_int64(s, 1, r->op_id);
		sqlite3_bind_int64(s, 2, r->seq);
		sqlite3_bind_text(s, 3, r->kind, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 4, (int64_t)r->size_kb);
		if (r->node >= 0)
			sqlite3_bind_int(s, 5, r->node);
		sqlite3_bind_text(s, 6, r->grow ? "grow" : "shrink", -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 7, r->started_ns);
		sqlite3_bind_int64(s, 8, (int64_t)r->before);
		sqlite3_bind_int64(s, 9, (int64_t)r->written);
		sqlite3_bind_int64(s, 10, (int64_t)r->after);
		sqlite3_bind_int64(s, 11, (int64_t)r->requested);
		sqlite3_bind_int64(s, 12, (int64_t)r->achieved);
		sqlite3_bind_int64(s, 13, r->elapsed_ns);
		sqlite3_bind_int64(s, 14, r->latency_ns);
		if (step_done(st, s, e, "insert batch") < 0)
			goto fail;
	}
	return store_commit(st, e);
fail:
	store_rollback(st);
	return -1;
}
