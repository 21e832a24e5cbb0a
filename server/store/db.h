/* The SQLite store: the only code that speaks SQL. One connection, serialised by a mutex: the
 * daemon's write rate is an administrator's, and one connection keeps every history write in
 * commit order. Statements are prepared once and cached (see stmt()). */
#ifndef MPD_STORE_DB_H
#define MPD_STORE_DB_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

#include "common/err.h"

struct store;

/* Opens (creating if needed) the database at path, sets WAL, busy timeout and foreign keys, and
 * runs the migrations compiled in from schema/. Refuses a database newer than this binary. */
struct store *store_open(const char *path, mp_err *e);
void store_close(struct store *st);   /* NULL is fine */

/* Every query runs between store_lock and store_unlock. */
void store_lock(struct store *st);
void store_unlock(struct store *st);
sqlite3 *store_db(struct store *st);  /* only while locked */

/* A cached prepared statement for sql (a string literal: the pointer is the cache key). The
 * statement is reset and its bindings cleared before it is returned. Only while locked. */
sqlite3_stmt *store_stmt(struct store *st, const char *sql, mp_err *e);

/* BEGIN IMMEDIATE / COMMIT / ROLLBACK; while locked. */
int store_begin(struct store *st, mp_err *e);
int store_commit(struct store *st, mp_err *e);
void store_rollback(struct store *st);

/* Fills e from the connection's last error. */
int store_fail(struct store *st, mp_err *e, const char *what);

/* The schema version (PRAGMA user_version) of the open database. */
int store_version(struct store *st);

/* A result column as JSON (new references): NULL becomes json null; a text column that holds JSON
 * (request, result, action) is parsed, and unparseable text also becomes null. */
json_t *store_col_int(sqlite3_stmt *s, int col);
json_t *store_col_text(sqlite3_stmt *s, int col);
json_t *store_col_json(sqlite3_stmt *s, int col);

/* Wall-clock nanoseconds since the epoch, the unit of every *_ns column. */
int64_t store_now_ns(void);

#endif
