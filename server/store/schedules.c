#include "server/store/schedules.h"

#include <stdlib.h>
#include <string.h>

#include "server/store/db.h"

#define COLS "id, cron, timezone, action, enabled, misfire_grace_s, created_ns, created_by_uid, " \
	     "created_by_name, next_run_ns, last_run_ns, last_due_ns, last_status, last_job_id, "   \
	     "last_op_id, last_error"

static const char SQL_INSERT[] =
	"INSERT INTO schedules (cron, timezone, action, enabled, misfire_grace_s, created_ns, created_by_uid, "
	"created_by_name, next_run_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
static const char SQL_GET[] = "SELECT " COLS " FROM schedules WHERE id = ?1";
static const char SQL_LIST[] = "SELECT " COLS " FROM schedules ORDER BY id";
static const char SQL_DELETE[] = "DELETE FROM schedules WHERE id = ?1";
static const char SQL_DUE[] =
	"SELECT id, cron, timezone, action, misfire_grace_s, next_run_ns FROM schedules "
	"WHERE enabled = 1 AND next_run_ns IS NOT NULL AND next_run_ns <= ?1 ORDER BY next_run_ns, id";
static const char SQL_NEXT[] =
	"SELECT min(next_run_ns) FROM schedules WHERE enabled = 1 AND next_run_ns IS NOT NULL";
static const char SQL_RAN[] =
	"UPDATE schedules SET last_run_ns = ?2, last_due_ns = ?3, last_status = ?4, last_job_id = ?5, "
	"last_op_id = ?6, last_error = ?7, next_run_ns = ?8 WHERE id = ?1";

int64_t sched_store_insert(struct store *st, const struct schedule_new *n, mp_err *e)
{
	sqlite3_stmt *s;
	char *action = json_dumps(n->action, JSON_COMPACT);
	int64_t id = -1;

	if (!action)
		return mp_nomem(e);
	store_lock(st);
	if (!(s = store_stmt(st, SQL_INSERT, e)))
		goto out;
	sqlite3_bind_text(s, 1, n->cron, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, n->timezone, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 3, action, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(s, 4, n->enabled);
	sqlite3_bind_int64(s, 5, n->misfire_grace_s);
	sqlite3_bind_int64(s, 6, n->created_ns);
	if (n->has_uid)
		sqlite3_bind_int64(s, 7, n->uid);
	if (n->name && *n->name)
		sqlite3_bind_text(s, 8, n->name, -1, SQLITE_TRANSIENT);
	if (n->next_run_ns)
		sqlite3_bind_int64(s, 9, n->next_run_ns);
	if (sqlite3_step(s) != SQLITE_DONE)
		store_fail(st, e, "insert schedule");
	else
		id = sqlite3_last_insert_rowid(store_db(st));
	sqlite3_reset(s);
out:
	store_unlock(st);
	free(action);
	return id;
}

/* The current row of an SQL_GET/SQL_LIST statement as the API shows it. */
static json_t *row_json(sqlite3_stmt *s)
{
	const char *action = (const char *)sqlite3_column_text(s, 3);
	json_t *act = action ? json_loads(action, JSON_DECODE_ANY, NULL) : NULL;
	json_t *by = json_object();

	if (sqlite3_column_type(s, 7) != SQLITE_NULL)
		json_object_set_new(by, "uid", json_integer(sqlite3_column_int64(s, 7)));
	else
		json_object_set_new(by, "uid", json_null());
	json_object_set_new(by, "name", store_col_text(s, 8));
	return json_pack("{s:I, s:s, s:s, s:o, s:b, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			 "id", (json_int_t)sqlite3_column_int64(s, 0),
			 "cron", (const char *)sqlite3_column_text(s, 1),
			 "timezone", (const char *)sqlite3_column_text(s, 2),
			 "action", act ? act : json_null(),
			 "enabled", sqlite3_column_int(s, 4),
			 "misfire_grace_s", (json_int_t)sqlite3_column_int64(s, 5),
			 "created_ns", (json_int_t)sqlite3_column_int64(s, 6),
			 "created_by", by,
			 "next_run_ns", store_col_int(s, 9),
			 "last_run_ns", store_col_int(s, 10),
			 "last_due_ns", store_col_int(s, 11),
			 "last_status", store_col_text(s, 12),
			 "last_job_id", store_col_int(s, 13),
			 "last_op_id", store_col_int(s, 14),
			 "last_error", store_col_text(s, 15));
}

json_t *sched_store_get(struct store *st, int64_t id, mp_err *e)
{
	sqlite3_stmt *s;
	json_t *out = NULL;
	int rc;

	store_lock(st);
	if (!(s = store_stmt(st, SQL_GET, e)))
		goto out;
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		out = row_json(s);
	else if (rc == SQLITE_DONE)
		mp_fail(e, MPE_SCHEDULE_NOT_FOUND, 0, "no schedule %lld", (long long)id);
	else
		store_fail(st, e, "read schedule");
	sqlite3_reset(s);
out:
	store_unlock(st);
	return out;
}

json_t *sched_store_list(struct store *st, mp_err *e)
{
	sqlite3_stmt *s;
	json_t *arr = json_array();
	int rc;

	store_lock(st);
	if (!(s = store_stmt(st, SQL_LIST, e)))
		goto fail;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		json_array_append_new(arr, row_json(s));
	if (rc != SQLITE_DONE) {
		store_fail(st, e, "list schedules");
		sqlite3_reset(s);
		goto fail;
	}
	sqlite3_reset(s);
	store_unlock(st);
	return arr;
fail:
	store_unlock(st);
	json_decref(arr);
	return NULL;
}

int sched_store_delete(struct store *st, int64_t id, mp_err *e)
{
	sqlite3_stmt *s;
	int rc = -1;

	store_lock(st);
	if (!(s = store_stmt(st, SQL_DELETE, e)))
		goto out;
	sqlite3_bind_int64(s, 1, id);
	if (sqlite3_step(s) != SQLITE_DONE)
		store_fail(st, e, "delete schedule");
	else if (sqlite3_changes(store_db(st)) == 0)
		mp_fail(e, MPE_SCHEDULE_NOT_FOUND, 0, "no schedule %lld", (long long)id);
	else
		rc = 0;
	sqlite3_reset(s);
out:
	store_unlock(st);
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
	store_lock(st);
	if (!(s = store_stmt(st, SQL_DUE, e)))
		goto fail;
	sqlite3_bind_int64(s, 1, now_ns);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (cnt == cap) {
			struct sched_due *nd = realloc(d, (cap = cap ? cap * 2 : 8) * sizeof *d);
			if (!nd) {
				mp_nomem(e);
				sqlite3_reset(s);
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
			sqlite3_reset(s);
			goto fail;
		}
		cnt++;
	}
	if (rc != SQLITE_DONE) {
		store_fail(st, e, "read due schedules");
		sqlite3_reset(s);
		goto fail;
	}
	sqlite3_reset(s);
	store_unlock(st);
	*out = d;
	*n = cnt;
	return 0;
fail:
	store_unlock(st);
	sched_due_free(d, cnt);
	return -1;
}

int64_t sched_store_next_wake(struct store *st, mp_err *e)
{
	sqlite3_stmt *s;
	int64_t v = -1;

	store_lock(st);
	if (!(s = store_stmt(st, SQL_NEXT, e)))
		goto out;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_type(s, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, 0);
	else
		store_fail(st, e, "read next schedule");
	sqlite3_reset(s);
out:
	store_unlock(st);
	return v;
}

int sched_store_ran(struct store *st, int64_t id, const struct sched_ran *r, mp_err *e)
{
	sqlite3_stmt *s = store_stmt(st, SQL_RAN, e);
	int rc;

	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, r->run_ns);
	sqlite3_bind_int64(s, 3, r->due_ns);
	sqlite3_bind_text(s, 4, r->status, -1, SQLITE_TRANSIENT);
	if (r->job_id)
		sqlite3_bind_int64(s, 5, r->job_id);
	if (r->op_id)
		sqlite3_bind_int64(s, 6, r->op_id);
	if (r->error)
		sqlite3_bind_text(s, 7, r->error, -1, SQLITE_TRANSIENT);
	if (r->next_run_ns)
		sqlite3_bind_int64(s, 8, r->next_run_ns);
	rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_fail(st, e, "record schedule run");
	sqlite3_reset(s);
	return rc;
}
