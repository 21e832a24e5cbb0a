#include "server/store/drift.h"

#include "server/store/db.h"
#include "server/store/internal.h"

static json_t *drift_row(sqlite3_stmt *s)
{
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o}", "id", (json_int_t)sqlite3_column_int64(s, 0),
			 "first_seen_ns", col_int(s, 1), "last_seen_ns", col_int(s, 2), "action", col_text(s, 3),
			 "drift", col_json(s, 4), "result", col_json(s, 5));
}

int drift_list(struct store *st, const char *key, int64_t before_id, int limit, json_t **items,
	       int64_t *next_before_id, mp_err *e)
{
	sqlite3_stmt *s;
	json_t *a;
	int brc = SQLITE_OK;   /* the first failed bind */

	*items = NULL;
	*next_before_id = 0;
	store_conn_lock(st, P);
	s = stmt(st, ST_DRIFT_LIST);
	BIND(brc, bind_text_or_null(s, 1, key));
	if (before_id > 0)
		sqlite3_bind_int64(s, 2, before_id);
	/* One row more than asked tells whether there is a next page. */
	sqlite3_bind_int(s, 3, limit + 1);
	if (brc != SQLITE_OK) {
		store_conn_unlock(st, P);
		return bind_fail(brc, e, "list drift");
	}
	a = read_page_json(st, P, s, drift_row, limit, next_before_id, e, "list drift");
	store_conn_unlock(st, P);
	if (!a)
		return -1;
	*items = a;
	return 0;
}
