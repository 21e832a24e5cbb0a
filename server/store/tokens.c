#include "server/store/tokens.h"

#include <stdio.h>
#include <string.h>

#include "server/store/db.h"
#include "server/store/internal.h"

int token_store_insert(struct store *st, const struct token_new *n, mp_err *e)
{
	sqlite3_stmt *s;
	int rc = -1, step;
	int brc = SQLITE_OK;   /* the first failed bind */

	store_conn_lock(st, W);
	/* The name check and the insert run under the one writer lock, so no other insert comes
	 * between them; the UNIQUE constraint stays as the schema's guarantee. */
	s = stmt(st, ST_TOKEN_NAMED);
	BIND(brc, sqlite3_bind_text(s, 1, n->name, -1, SQLITE_TRANSIENT));
	if (brc != SQLITE_OK) {
		bind_fail(brc, e, "look up token name");
		goto out;
	}
	step = sqlite3_step(s);
	sqlite3_reset(s);
	if (step == SQLITE_ROW) {
		mp_fail(e, MPE_TOKEN_EXISTS, 0, "a token named '%s' exists (revoked names stay taken)", n->name);
		goto out;
	}
	if (step != SQLITE_DONE) {
		store_fail(st, W, e, "look up token name");
		goto out;
	}
	s = stmt(st, ST_TOKEN_INSERT);
	BIND(brc, sqlite3_bind_text(s, 1, n->name, -1, SQLITE_TRANSIENT));
	BIND(brc, sqlite3_bind_text(s, 2, n->lookup, -1, SQLITE_TRANSIENT));
	BIND(brc, sqlite3_bind_blob(s, 3, n->hash, TOKEN_HASH_LEN, SQLITE_TRANSIENT));
	BIND(brc, sqlite3_bind_text(s, 4, n->scope, -1, SQLITE_TRANSIENT));
	sqlite3_bind_int64(s, 5, n->created_ns);
	BIND(brc, bind_text_or_null(s, 6, n->created_by && *n->created_by ? n->created_by : NULL));
	if (n->expires_ns)
		sqlite3_bind_int64(s, 7, n->expires_ns);
	sqlite3_bind_int(s, 8, TOKEN_MAX);
	if ((brc != SQLITE_OK && bind_fail(brc, e, "insert token") < 0) || run_write(st, s, e, "insert token") < 0)
		goto out;
	if (sqlite3_changes(st->c[W].db) == 0) {
		mp_fail(e, MPE_TOKEN_LIMIT, 0, "the daemon holds %d tokens, revoked ones included", TOKEN_MAX);
		goto out;
	}
	rc = 0;
out:
	store_conn_unlock(st, W);
	return rc;
}

static int64_t col_i64(sqlite3_stmt *s, int col)
{
	return sqlite3_column_type(s, col) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, col);
}

int token_store_lookup(struct store *st, const char *lookup, struct token_row *row, mp_err *e)
{
	sqlite3_stmt *s;
	int rc, found = -1;
	int brc = SQLITE_OK;   /* the first failed bind */

	memset(row, 0, sizeof *row);
	store_conn_lock(st, R);
	s = stmt(st, ST_TOKEN_LOOKUP);
	BIND(brc, sqlite3_bind_text(s, 1, lookup, -1, SQLITE_TRANSIENT));
	if (brc != SQLITE_OK) {
		bind_fail(brc, e, "look up token");
		goto out;
	}
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		const char *scope = (const char *)sqlite3_column_text(s, 3);
		if (sqlite3_column_bytes(s, 2) != TOKEN_HASH_LEN) {
			mp_fail(e, MPE_STORE_BAD_ROW, 0, "token %lld has a hash of the wrong size",
				(long long)sqlite3_column_int64(s, 0));
			goto out;
		}
		row->id = sqlite3_column_int64(s, 0);
		snprintf(row->name, sizeof row->name, "%s", (const char *)sqlite3_column_text(s, 1));
		memcpy(row->hash, sqlite3_column_blob(s, 2), TOKEN_HASH_LEN);
		row->admin = scope && !strcmp(scope, "admin");
		row->expires_ns = col_i64(s, 4);
		row->revoked_ns = col_i64(s, 5);
		row->last_used_ns = col_i64(s, 6);
		found = 1;
	} else if (rc == SQLITE_DONE) {
		found = 0;
	} else {
		store_fail(st, R, e, "look up token");
	}
out:
	sqlite3_reset(s);
	store_conn_unlock(st, R);
	return found;
}

int token_store_touch(struct store *st, int64_t id, int64_t now_ns, mp_err *e)
{
	sqlite3_stmt *s;
	int rc;

	store_conn_lock(st, W);
	s = stmt(st, ST_TOKEN_TOUCH);
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, now_ns);
	rc = run_write(st, s, e, "record token use");
	store_conn_unlock(st, W);
	return rc;
}

static json_t *token_json(sqlite3_stmt *s)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			 "name", col_text(s, 0),
			 "id", col_text(s, 1),
			 "scope", col_text(s, 2),
			 "created_ns", col_int(s, 3),
			 "created_by", col_text(s, 4),
			 "expires_ns", col_int(s, 5),
			 "last_used_ns", col_int(s, 6),
			 "revoked_ns", col_int(s, 7));
}

json_t *token_store_list(struct store *st, mp_err *e)
{
	json_t *arr;

	store_conn_lock(st, R);
	arr = read_many(st, R, stmt(st, ST_TOKEN_LIST), token_json, e, "list tokens");
	store_conn_unlock(st, R);
	return arr;
}

int token_store_revoke(struct store *st, const char *name, int64_t now_ns, mp_err *e)
{
	sqlite3_stmt *s;
	int rc = -1;
	int brc = SQLITE_OK;   /* the first failed bind */

	store_conn_lock(st, W);
	s = stmt(st, ST_TOKEN_REVOKE);
	BIND(brc, sqlite3_bind_text(s, 1, name, -1, SQLITE_TRANSIENT));
	sqlite3_bind_int64(s, 2, now_ns);
	if (brc != SQLITE_OK)
		bind_fail(brc, e, "revoke token");
	else if (run_write(st, s, e, "revoke token") == 0) {
		if (sqlite3_changes(st->c[W].db) == 0)
			mp_fail(e, MPE_TOKEN_NOT_FOUND, 0, "no live token is named '%s'", name);
		else
			rc = 0;
	}
	store_conn_unlock(st, W);
	return rc;
}

int auth_failure_record(struct store *st, int64_t at_ns, const char *peer, const char *reason,
			const char *token_name, const char *detail, mp_err *e)
{
	sqlite3_stmt *s;
	int rc;
	int brc = SQLITE_OK;   /* the first failed bind */

	store_conn_lock(st, W);
	s = stmt(st, ST_AUTH_FAIL_ADD);
	sqlite3_bind_int64(s, 1, at_ns);
	BIND(brc, sqlite3_bind_text(s, 2, peer, -1, SQLITE_TRANSIENT));
	BIND(brc, sqlite3_bind_text(s, 3, reason, -1, SQLITE_TRANSIENT));
	BIND(brc, bind_text_or_null(s, 4, token_name));
	BIND(brc, sqlite3_bind_text(s, 5, detail, -1, SQLITE_TRANSIENT));
	rc = brc != SQLITE_OK ? bind_fail(brc, e, "record a failed authentication")
			      : run_write(st, s, e, "record a failed authentication");
	store_conn_unlock(st, W);
	return rc;
}
