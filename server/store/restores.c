#include "server/store/restores.h"

#include "server/clock.h"
#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/internal.h"

int64_t restores_db_add(struct store *st, int64_t op_id, const char *what, const char *target, const char *value,
			mp_err *e)
{
	sqlite3_stmt *s;
	int64_t id;
	int brc = SQLITE_OK;   /* the first failed bind */

	store_conn_lock(st, W);
	s = stmt(st, ST_RESTORE_ADD);
	if (op_id > 0)
		sqlite3_bind_int64(s, 1, op_id);
	BIND(brc, sqlite3_bind_text(s, 2, what, -1, SQLITE_TRANSIENT));
	BIND(brc, sqlite3_bind_text(s, 3, target, -1, SQLITE_TRANSIENT));
	BIND(brc, sqlite3_bind_text(s, 4, value, -1, SQLITE_TRANSIENT));
	sqlite3_bind_int64(s, 5, clk_wall_ns());
	id = brc != SQLITE_OK ? bind_fail(brc, e, "record a pending restore")
			      : run_insert(st, s, e, "record a pending restore");
	store_conn_unlock(st, W);
	return id;
}

static int delete_row(struct store *st, int64_t id, mp_err *e)
{
	sqlite3_stmt *s = stmt(st, ST_RESTORE_DONE);

	sqlite3_bind_int64(s, 1, id);
	return run_write(st, s, e, "delete a pending restore");
}

int restores_db_done(struct store *st, int64_t id, mp_err *e)
{
	int rc;

	store_conn_lock(st, W);
	rc = delete_row(st, id, e);
	store_conn_unlock(st, W);
	return rc;
}

static json_t *row(sqlite3_stmt *s)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o}", "id", col_int(s, 0), "op_id", col_int(s, 1), "what",
			 col_text(s, 2), "target", col_text(s, 3), "value", col_text(s, 4));
}

json_t *restores_db_pending(struct store *st, mp_err *e)
{
	json_t *arr;

	store_conn_lock(st, W);
	arr = read_many(st, W, stmt(st, ST_RESTORE_PENDING), row, e, "read pending restores");
	store_conn_unlock(st, W);
	return arr;
}

int64_t restores_db_record(struct store *st, const struct op_record *op, const int64_t *ids, size_t n, mp_err *e)
{
	int64_t id = -1;

	store_conn_lock(st, W);
	if (tx_begin(st, "restore_at_start", e) < 0)
		goto out;
	if ((id = op_insert_row(st, op, e)) < 0)
		goto rollback;
	for (size_t i = 0; i < n; i++)
		if (delete_row(st, ids[i], e) < 0)
			goto rollback;
	if (tx_commit(st, e) == 0)
		goto out;
rollback:
	tx_rollback(st);
	id = -1;
out:
	store_conn_unlock(st, W);
	/* Counted and logged like every operation (it was the one insert the events missed). */
	if (id > 0)
		STORE_EVENT(st, op_inserted, id, op);
	return id;
}
