#include "server/store/db.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/log.h"

extern const char *const mpd_schema_migrations[];
extern const size_t mpd_schema_count;

#define STMT_CACHE 64

struct store {
	sqlite3 *db;                      /* owned */
	pthread_mutex_t lock;
	struct {
		const char *sql;          /* borrowed string literal, the cache key */
		sqlite3_stmt *stmt;       /* owned */
	} cache[STMT_CACHE];
};

int64_t store_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int store_fail(struct store *st, mp_err *e, const char *what)
{
	/* What a caller can act on: a full disk or a database in use elsewhere is not our bug. */
	switch (sqlite3_errcode(st->db) & 0xff) {
	case SQLITE_FULL:
		return mp_fail(e, MPE_STORE_FULL, ENOSPC, "%s: the database's disk is full (%s)", what,
			       sqlite3_errmsg(st->db));
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return mp_fail(e, MPE_STORE_BUSY, 0, "%s: the database is locked by another process (%s)", what,
			       sqlite3_errmsg(st->db));
	case SQLITE_READONLY:
		return mp_fail(e, MPE_STORE_READONLY, 0, "%s: the database cannot be written (%s)", what,
			       sqlite3_errmsg(st->db));
	default:
		return mp_fail(e, MPE_STORE_ERROR, 0, "%s: %s", what, sqlite3_errmsg(st->db));
	}
}

static int exec(struct store *st, const char *sql, mp_err *e)
{
	char *msg = NULL;

	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		char what[64];
		snprintf(what, sizeof what, "%.40s", sql);   /* the statement's start: "COMMIT", "BEGIN ..." */
		store_fail(st, e, what);
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

int store_version(struct store *st)
{
	sqlite3_stmt *s;
	int v = -1;

	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return v;
}

static int migrate(struct store *st, mp_err *e)
{
	int v = store_version(st);

	if (v < 0)
		return store_fail(st, e, "read schema version");
	if ((size_t)v > mpd_schema_count)
		return mp_fail(e, MPE_STORE_TOO_NEW, 0,
			       "database schema version %d is newer than this mempolicyd (%zu); refusing to "
			       "touch it", v, mpd_schema_count);
	for (size_t i = (size_t)v; i < mpd_schema_count; i++) {
		char pragma[64];
		snprintf(pragma, sizeof pragma, "PRAGMA user_version = %zu", i + 1);
		if (exec(st, "BEGIN IMMEDIATE", e) < 0)
			return -1;
		if (exec(st, mpd_schema_migrations[i], e) < 0 || exec(st, pragma, e) < 0) {
			exec(st, "ROLLBACK", NULL);
			return mp_fail(e, MPE_STORE_MIGRATE, 0, "migration %zu failed: %s", i + 1, e->detail);
		}
		if (exec(st, "COMMIT", e) < 0)
			return -1;
		log_info("database migrated to schema version %zu", i + 1);
	}
	return 0;
}

struct store *store_open(const char *path, mp_err *e)
{
	struct store *st = calloc(1, sizeof *st);

	if (!st) {
		mp_nomem(e);
		return NULL;
	}
	pthread_mutex_init(&st->lock, NULL);
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
			    NULL) != SQLITE_OK) {
		mp_fail(e, MPE_STORE_OPEN, 0, "cannot open database %s: %s", path,
			st->db ? sqlite3_errmsg(st->db) : "out of memory");
		goto fail;
	}
	sqlite3_busy_timeout(st->db, 5000);
	/* WAL + NORMAL survives a daemon crash (SIGKILL); an OS crash may lose the last commits. */
	if (exec(st, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", e) < 0 ||
	    migrate(st, e) < 0)
		goto fail;
	return st;
fail:
	store_close(st);
	return NULL;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	for (int i = 0; i < STMT_CACHE; i++)
		sqlite3_finalize(st->cache[i].stmt);
	if (st->db) {
		sqlite3_exec(st->db, "PRAGMA optimize", NULL, NULL, NULL);
		sqlite3_close_v2(st->db);
	}
	pthread_mutex_destroy(&st->lock);
	free(st);
}

void store_lock(struct store *st)
{
	pthread_mutex_lock(&st->lock);
}

void store_unlock(struct store *st)
{
	pthread_mutex_unlock(&st->lock);
}

sqlite3 *store_db(struct store *st)
{
	return st->db;
}

sqlite3_stmt *store_stmt(struct store *st, const char *sql, mp_err *e)
{
	int i;

	for (i = 0; i < STMT_CACHE && st->cache[i].sql; i++)
		if (st->cache[i].sql == sql) {
			sqlite3_reset(st->cache[i].stmt);
			sqlite3_clear_bindings(st->cache[i].stmt);
			return st->cache[i].stmt;
		}
	sqlite3_stmt *s;
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) {
		store_fail(st, e, "prepare");
		return NULL;
	}
	if (i == STMT_CACHE) {
		/* Cache full: a programming error (more distinct statements than expected). */
		log_warn("statement cache full; raise STMT_CACHE");
		sqlite3_finalize(st->cache[STMT_CACHE - 1].stmt);
		i = STMT_CACHE - 1;
	}
	st->cache[i].sql = sql;
	st->cache[i].stmt = s;
	return s;
}

int store_begin(struct store *st, mp_err *e)
{
	return exec(st, "BEGIN IMMEDIATE", e);
}

int store_commit(struct store *st, mp_err *e)
{
	return exec(st, "COMMIT", e);
}

void store_rollback(struct store *st)
{
	exec(st, "ROLLBACK", NULL);
}

json_t *store_col_int(sqlite3_stmt *s, int col)
{
	return sqlite3_column_type(s, col) == SQLITE_NULL ? json_null() : json_integer(sqlite3_column_int64(s, col));
}

json_t *store_col_text(sqlite3_stmt *s, int col)
{
	const char *t = (const char *)sqlite3_column_text(s, col);
	return t ? json_string(t) : json_null();
}

json_t *store_col_json(sqlite3_stmt *s, int col)
{
	const char *t = (const char *)sqlite3_column_text(s, col);
	json_t *v = t ? json_loads(t, JSON_DECODE_ANY, NULL) : NULL;
	return v ? v : json_null();
}
