#include "server/store/db.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/parse.h"
#include "server/log.h"
#include "server/store/internal.h"
#include "server/store/jsontext.h"

extern const char *const mpd_schema_migrations[];
extern const size_t mpd_schema_count;

static const char *const stmt_sql[ST__COUNT] = {
#define X(name, conn, sql) [ST_##name] = sql,
	STORE_STMTS(X)
#undef X
};
static const enum conn_id stmt_conn[ST__COUNT] = {
#define X(name, conn, sql) [ST_##name] = conn,
	STORE_STMTS(X)
#undef X
};
static const char *const stmt_name[ST__COUNT] = {
#define X(name, conn, sql) [ST_##name] = #name,
	STORE_STMTS(X)
#undef X
};
/* 0 for the statements STORE_COLS does not name: they must return no rows' columns. */
static const int stmt_ncols[ST__COUNT] = {
#define C(name, n) [ST_##name] = (n),
	STORE_COLS(C)
#undef C
};

int store_prepare(sqlite3 *db, const char *name, const char *sql, int ncols, sqlite3_stmt **out, mp_err *e)
{
	sqlite3_stmt *s = NULL;
	int got;

	*out = NULL;
	if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK)
		/* Not e->detail as its own argument: formatting a buffer into itself garbled it. */
		return mp_fail(e, MPE_STORE_OPEN, 0, "statement %s cannot be prepared: %s", name, sqlite3_errmsg(db));
	if ((got = sqlite3_column_count(s)) != ncols) {
		sqlite3_finalize(s);
		return mp_fail(e, MPE_STORE_OPEN, 0, "statement %s returns %d columns; its readers read %d "
			       "(server/store/stmts.h, STORE_COLS)", name, got, ncols);
	}
	*out = s;
	return 0;
}

/* Which connection of which store this thread holds: the lock rule's debug check, per thread so
 * that checking it needs no lock and races with nothing. */
static _Thread_local const struct conn *held[CONN__COUNT];
static const char *const conn_name[CONN__COUNT] = { [W] = "writer", [R] = "reader", [P] = "pages reader" };

void store_conn_lock(struct store *st, enum conn_id c)
{
	/* The mutex is not recursive: taking it twice would hang, so say where instead. */
	if (held[c] == &st->c[c]) {
		log_error("store: this thread already holds the %s lock", conn_name[c]);
		abort();
	}
	pthread_mutex_lock(&st->c[c].mu);
	held[c] = &st->c[c];
}

void store_conn_unlock(struct store *st, enum conn_id c)
{
	assert(held[c] == &st->c[c]);
	held[c] = NULL;
	pthread_mutex_unlock(&st->c[c].mu);
}

void store_hold(const struct store *st, enum conn_id c, const char *fn)
{
	if (held[c] != &st->c[c]) {
		log_error("store: %s runs without the %s lock", fn, conn_name[c]);
		abort();
	}
}

int store_fail(struct store *st, enum conn_id c, mp_err *e, const char *what)
{
	sqlite3 *db = st->c[c].db;
	int rc;

	/* What a caller can act on: a full disk or a database in use elsewhere is not our bug. */
	switch (sqlite3_errcode(db) & 0xff) {
	case SQLITE_FULL:
		rc = mp_fail(e, MPE_STORE_FULL, ENOSPC, "%s: the database's disk is full (%s)", what,
			     sqlite3_errmsg(db));
		break;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		rc = mp_fail(e, MPE_STORE_BUSY, 0, "%s: the database is locked by another process (%s)", what,
			     sqlite3_errmsg(db));
		break;
	case SQLITE_READONLY:
		rc = mp_fail(e, MPE_STORE_READONLY, 0, "%s: the database cannot be written (%s)", what,
			     sqlite3_errmsg(db));
		break;
	default:
		rc = mp_fail(e, MPE_STORE_ERROR, 0, "%s: %s", what, sqlite3_errmsg(db));
	}
	/* The writer's failures are what an administrator is alerted on (GET /metrics). */
	if (c == W)
		STORE_EVENT(st, write_error, mp_code_name(e->code));
	return rc;
}

static int exec(struct store *st, enum conn_id c, const char *sql, mp_err *e)
{
	char *msg = NULL;

	if (sqlite3_exec(st->c[c].db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		char what[64];
		snprintf(what, sizeof what, "%.40s", sql);   /* the statement's start: "COMMIT", "BEGIN ..." */
		store_fail(st, c, e, what);
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* Before the statements are prepared (migrations): a one-off statement on the writer. */
static int raw_version(struct store *st)
{
	sqlite3_stmt *s;
	int v = -1;

	if (sqlite3_prepare_v2(st->c[W].db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return v;
}

int store_version(struct store *st)
{
	sqlite3_stmt *s;
	int v = -1;

	store_conn_lock(st, R);
	s = stmt(st, ST_VERSION);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_reset(s);
	store_conn_unlock(st, R);
	return v;
}

static int too_new(int v, mp_err *e)
{
	return mp_fail(e, MPE_STORE_TOO_NEW, 0, "database schema version %d is newer than this mempolicyd (%zu); "
		       "refusing to touch it", v, mpd_schema_count);
}

/* Before anything writes (the WAL switch changes the header): a database newer than this binary,
 * or one that lacks a table or column its version promises, is refused as it is. */
static int trust(struct store *st, mp_err *e)
{
	int v = raw_version(st);

	if (v < 0)
		return store_fail(st, W, e, "read schema version");
	if ((size_t)v > mpd_schema_count)
		return too_new(v, e);
	return store_check_schema(st->c[W].db, v, e);
}

static int migrate(struct store *st, mp_err *e)
{
	int v = raw_version(st);

	if (v < 0)
		return store_fail(st, W, e, "read schema version");
	if ((size_t)v > mpd_schema_count)
		return too_new(v, e);
	for (size_t i = (size_t)v; i < mpd_schema_count; i++) {
		char pragma[64];
		snprintf(pragma, sizeof pragma, "PRAGMA user_version = %zu", i + 1);
		if (exec(st, W, "BEGIN IMMEDIATE", e) < 0)
			return -1;
		if (exec(st, W, mpd_schema_migrations[i], e) < 0 || exec(st, W, pragma, e) < 0) {
			exec(st, W, "ROLLBACK", NULL);
			return mp_fail(e, MPE_STORE_MIGRATE, 0, "migration %zu failed: %s", i + 1, e->detail);
		}
		if (exec(st, W, "COMMIT", e) < 0)
			return -1;
		log_info("database migrated to schema version %zu", i + 1);
	}
	return 0;
}

static int open_conn(struct store *st, enum conn_id c, const char *path, mp_err *e)
{
	/* NOMUTEX: our own mutex serialises each connection; SQLite's would serialise it twice. */
	int flags = (c == W ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY) |
		    SQLITE_OPEN_NOMUTEX;

	if (sqlite3_open_v2(path, &st->c[c].db, flags, NULL) != SQLITE_OK)
		return mp_fail(e, MPE_STORE_OPEN, 0, "cannot open database %s%s: %s", path,
			       c != W ? " for reading" : "", st->c[c].db ? sqlite3_errmsg(st->c[c].db) : "out of memory");
	sqlite3_busy_timeout(st->c[c].db, 5000);
	return 0;
}

/* After each commit on the writer, with the WAL's size in frames: what SQLite's autocheckpoint does
 * (a passive checkpoint past 1000 frames), run by the checkpointer's thread instead of this one
 * (ckpt.c) unless the WAL is past its bound, and not while a statistics scan holds a read
 * snapshot. A checkpoint cannot get past that snapshot, so it would be retried after every commit,
 * copying and syncing for nothing; the first commit after the scan asks instead. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct store *st = arg;

	__atomic_add_fetch(&st->commits, 1, __ATOMIC_RELAXED);   /* the scans' pacing (stats.c) */
	if (frames < CKPT_FRAMES || __atomic_load_n(&st->scans, __ATOMIC_RELAXED))
		return SQLITE_OK;
	if (frames >= CKPT_INLINE_FRAMES)
		sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	else
		ckpt_ask(st, frames);
	return SQLITE_OK;
}

/* Test builds only (MPD_TEST_HOOKS: make SAN=1 / TSAN=1): a production daemon never reads it. */
static void read_kill_at(struct store *st)
{
#ifndef MPD_TEST_HOOKS
	(void)st;
}
#else
	const char *v = getenv("MEMPOLICYD_TEST_KILL_AT");
	const char *colon = v ? strrchr(v, ':') : NULL;
	uint64_t n = 0;

	if (!colon || parse_u64(colon + 1, &n) < 0 || n == 0 || n > INT_MAX || (size_t)(colon - v) >= sizeof st->kill_tx)
		return;
	snprintf(st->kill_tx, sizeof st->kill_tx, "%.*s", (int)(colon - v), v);
	st->kill_at = (int)n;
	log_warn("test fault point armed: SIGKILL after statement %d of transaction %s", st->kill_at, st->kill_tx);
}
#endif

/* A random id for this daemon start, stamped on every operation and job it writes, so that the
 * next start tells its predecessors' unfinished work from its own without trusting the wall clock.
 * 63 bits: a collision with the one previous instance that matters is not a practical concern. */
static int new_instance(int64_t *out, mp_err *e)
{
	uint64_t v = 0;

	while (v == 0) {
		if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
			return mp_fail(e, MPE_STORE_OPEN, errno, "cannot draw an instance id: %s", strerror(errno));
		v &= INT64_MAX;
	}
	*out = (int64_t)v;
	return 0;
}

struct store *store_open(const char *path, mp_err *e)
{
	struct store *st = calloc(1, sizeof *st);
	int hv;

	if (!st) {
		mp_nomem(e);
		return NULL;
	}
	for (int c = 0; c < CONN__COUNT; c++)
		pthread_mutex_init(&st->c[c].mu, NULL);
	if (new_instance(&st->instance, e) < 0 || store_check_header(path, &hv, e) < 0)
		goto fail;
	if (hv >= 0 && (size_t)hv > mpd_schema_count) {
		too_new(hv, e);
		goto fail;
	}
	if (open_conn(st, W, path, e) < 0 || trust(st, e) < 0)
		goto fail;
	st->trusted = true;
	/* WAL + NORMAL survives a daemon crash (SIGKILL); an OS crash may lose the last commits. WAL
	 * is also what lets the reader scan while the writer commits. The WAL file keeps its largest
	 * size unless limited: a burst behind a long scan would hold that disk for good, so it is cut
	 * back to 4 MiB (the 1000 frames a checkpoint runs at) whenever it is restarted. */
	if (exec(st, W, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
		 "PRAGMA journal_size_limit=4194304;", e) < 0 ||
	    migrate(st, e) < 0 || open_conn(st, R, path, e) < 0 || open_conn(st, P, path, e) < 0)
		goto fail;
	for (int i = 0; i < ST__COUNT; i++)
		if (store_prepare(st->c[stmt_conn[i]].db, stmt_name[i], stmt_sql[i], stmt_ncols[i], &st->stmts[i],
				  e) < 0)
			goto fail;
	if (ckpt_start(st, path, e) < 0)
		goto fail;
	sqlite3_wal_hook(st->c[W].db, wal_hook, st);   /* replaces the autocheckpoint */
	read_kill_at(st);
	return st;
fail:
	store_close(st);
	return NULL;
}

void store_set_events(struct store *st, const struct store_events *ev)
{
	st->ev = ev;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	ckpt_stop(st);
	for (int i = 0; i < ST__COUNT; i++)
		sqlite3_finalize(st->stmts[i]);
	sqlite3_close_v2(st->c[P].db);
	sqlite3_close_v2(st->c[R].db);
	if (st->c[W].db && st->trusted)   /* never a write into a file refused at open */
		sqlite3_exec(st->c[W].db, "PRAGMA optimize", NULL, NULL, NULL);
	sqlite3_close_v2(st->c[W].db);
	for (int c = 0; c < CONN__COUNT; c++)
		pthread_mutex_destroy(&st->c[c].mu);
	free(st);
}

sqlite3_stmt *stmt(struct store *st, enum stmt_id id)
{
	sqlite3_stmt *s = st->stmts[id];

	store_hold(st, stmt_conn[id], "stmt");
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return s;
}

int tx_begin(struct store *st, const char *name, mp_err *e)
{
	hold(st, W);
	assert(!st->tx);
	if (exec(st, W, "BEGIN IMMEDIATE", e) < 0)
		return -1;
	st->tx = name;
	st->tx_steps = 0;
	return 0;
}

int tx_commit(struct store *st, mp_err *e)
{
	int rc;

	hold(st, W);
	rc = exec(st, W, "COMMIT", e);
	if (rc < 0)
		tx_rollback(st);
	st->tx = NULL;
	return rc;
}

void tx_rollback(struct store *st)
{
	hold(st, W);
	if (!sqlite3_get_autocommit(st->c[W].db))
		exec(st, W, "ROLLBACK", NULL);
	st->tx = NULL;
}

static void fault_point(struct store *st)
{
	st->tx_steps++;
	if (st->kill_at && st->tx && st->tx_steps == st->kill_at && !strcmp(st->tx, st->kill_tx)) {
		log_warn("test fault point: SIGKILL after statement %d of %s", st->tx_steps, st->tx);
		raise(SIGKILL);
	}
}

int run_write(struct store *st, sqlite3_stmt *s, mp_err *e, const char *what)
{
	int rc;

	hold(st, W);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store_fail(st, W, e, what);
	fault_point(st);
	return 0;
}

int64_t run_insert(struct store *st, sqlite3_stmt *s, mp_err *e, const char *what)
{
	if (run_write(st, s, e, what) < 0)
		return -1;
	return sqlite3_last_insert_rowid(st->c[W].db);
}

int run_write_one(struct store *st, sqlite3_stmt *s, enum mp_code not_found, const char *noun, int64_t id,
		  mp_err *e, const char *what)
{
	if (run_write(st, s, e, what) < 0)
		return -1;
	if (sqlite3_changes(st->c[W].db) == 0)
		return mp_fail(e, not_found, 0, "no %s %lld", noun, (long long)id);
	return 0;
}

json_t *read_one(struct store *st, enum conn_id c, sqlite3_stmt *s, row_fn row, enum mp_code not_found,
		 const char *noun, int64_t id, mp_err *e)
{
	json_t *out = NULL;
	int rc;

	hold(st, c);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		if (!(out = row(s)))
			mp_nomem(e);
	} else if (rc == SQLITE_DONE) {
		mp_fail(e, not_found, 0, "no %s %lld", noun, (long long)id);
	} else {
		char what[64];
		snprintf(what, sizeof what, "read %s", noun);
		store_fail(st, c, e, what);
	}
	sqlite3_reset(s);
	return out;
}

json_t *read_many(struct store *st, enum conn_id c, sqlite3_stmt *s, row_fn row, mp_err *e, const char *what)
{
	json_t *arr = json_array(), *v;
	int rc;

	hold(st, c);
	if (!arr) {
		mp_nomem(e);
		return NULL;
	}
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (!(v = row(s)) || json_array_append_new(arr, v) < 0) {
			sqlite3_reset(s);
			json_decref(arr);
			mp_nomem(e);
			return NULL;
		}
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		json_decref(arr);
		store_fail(st, c, e, what);
		return NULL;
	}
	return arr;
}

json_t *read_page_json(struct store *st, enum conn_id c, sqlite3_stmt *s, row_fn row, int limit, int64_t *next_before_id,
		       mp_err *e, const char *what)
{
	json_t *a = read_many(st, c, s, row, e, what);
	size_t n;

	*next_before_id = 0;
	if (a && (n = json_array_size(a)) > (size_t)limit) {
		json_array_remove(a, n - 1);
		*next_before_id = json_integer_value(json_object_get(json_array_get(a, n - 2), "id"));
	}
	return a;
}

int read_page(struct store *st, enum conn_id c, sqlite3_stmt *s, int limit, page_row_fn row, void *arg,
	      int64_t *next, mp_err *e, const char *what)
{
	int64_t last = 0;
	int rc, n = 0, out = -1;

	hold(st, c);
	*next = 0;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (n == limit) {
			*next = last;
			break;
		}
		if (row(s, arg) < 0) {
			mp_nomem(e);
			goto done;
		}
		last = sqlite3_column_int64(s, 0);
		n++;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		store_fail(st, c, e, what);
		goto done;
	}
	out = 0;
done:
	sqlite3_reset(s);
	return out;
}

bool col_opt_int(sqlite3_stmt *s, int col, int64_t *v)
{
	if (sqlite3_column_type(s, col) == SQLITE_NULL)
		return false;
	*v = sqlite3_column_int64(s, col);
	return true;
}

int bind_fail(int rc, mp_err *e, const char *what)
{
	if (rc == SQLITE_NOMEM)
		return mp_nomem(e);
	return mp_fail(e, MPE_STORE_ERROR, 0, "%s: a value cannot be bound: %s", what, sqlite3_errstr(rc));
}

int bind_text_or_null(sqlite3_stmt *s, int i, const char *t)
{
	return t ? sqlite3_bind_text(s, i, t, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, i);
}

int bind_json(sqlite3_stmt *s, int i, const json_t *v)
{
	char *t;

	if (!v)
		return sqlite3_bind_null(s, i);
	if (!(t = store_json_text(v)))
		return SQLITE_NOMEM;
	/* The dumped string is handed to SQLite, which frees it. */
	return sqlite3_bind_text(s, i, t, -1, free);
}

json_t *col_int(sqlite3_stmt *s, int col)
{
	return sqlite3_column_type(s, col) == SQLITE_NULL ? json_null() : json_integer(sqlite3_column_int64(s, col));
}

json_t *col_text(sqlite3_stmt *s, int col)
{
	const char *t = (const char *)sqlite3_column_text(s, col);
	return t ? json_string(t) : json_null();
}

json_t *col_json(sqlite3_stmt *s, int col)
{
	const char *t = (const char *)sqlite3_column_text(s, col);
	json_t *v = t ? json_loads(t, JSON_DECODE_ANY, NULL) : NULL;
	return v ? v : json_null();
}
