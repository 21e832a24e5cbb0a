/* Private to server/store/: the three connections, the statement table and the helpers every store
 * function is written with. Nothing outside server/store/ includes this file.
 *
 * The lock rule: every public store function takes the lock of the connection it uses itself, for
 * exactly the statements it runs, and releases it before it returns. Callers never lock. The
 * helpers below assume the lock is held and check it (hold() aborts otherwise), so a helper called
 * from the wrong place fails at once in every build rather than racing. */
#ifndef MPD_STORE_INTERNAL_H
#define MPD_STORE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdint.h>

#include "common/err.h"
#include "server/store/events.h"
#include "server/store/stmts.h"

/* W writes; R and P only read (WAL: neither blocks W, nor each other). P serves what runs on the
 * daemon's low-priority threads (api/slow.c: list pages at nice 10, scans at SCHED_IDLE), which
 * hold its lock for a whole page or walk; R the short reads the rest needs at full priority (a
 * token's lookup on every TLS request, the scheduler's due schedules, one job or operation), so
 * that none of those waits for a page whose thread yields the CPU to writes. */
enum conn_id { W, R, P, CONN__COUNT };

struct conn {
	sqlite3 *db;                          /* owned */
	pthread_mutex_t mu;                   /* serialises every use of db */
};

struct store {
	struct conn c[CONN__COUNT];           /* [W] read-write, [R] and [P] read-only */
	sqlite3_stmt *stmts[ST__COUNT];       /* owned; prepared at open, on the connection stmt_conn[] names */
	/* The named transaction in progress on the writer (under c[W].mu), and the test fault point. */
	const char *tx;                       /* borrowed string literal; NULL outside a transaction */
	int tx_steps;                         /* statements run inside it so far */
	char kill_tx[32];                     /* MEMPOLICYD_TEST_KILL_AT=<tx>:<n>; "" when unset */
	int kill_at;
	int scans;                            /* statistics scans in progress (atomic): no checkpoint meanwhile */
	struct ckpt *ckpt;                    /* owned: the checkpointer (ckpt.c); NULL before it starts */
	unsigned commits;                     /* atomic: commits on the writer, counted by its WAL hook (the scans' pacing) */
	int64_t instance;                     /* this daemon start's random id, written with every operation and job */
	bool trusted;                         /* the file passed store_check_schema: closing may write */
	const struct store_events *ev;        /* borrowed; NULL: nothing is reported (set before serving) */
};

/* Reports an event to the receiver, if there is one for it (events.h). */
#define STORE_EVENT(st, fn, ...) \
	do { \
		if ((st)->ev && (st)->ev->fn) \
			(st)->ev->fn(__VA_ARGS__); \
	} while (0)

/* Trust before touch (check.c). store_check_header reads the file's header with a plain read(2),
 * no SQLite, nothing created: *version is its user_version, -1 when there is no database yet (no
 * file, or an empty one); not a SQLite file is store.open. store_check_schema compares the tables
 * and columns of db with what the first `version` migrations make (built in memory), and names
 * what is missing (store.schema). Neither writes anything. */
int store_check_header(const char *path, int *version, mp_err *e);
int store_check_schema(sqlite3 *db, int version, mp_err *e);

/* The checkpointer (ckpt.c): a thread with a read-write connection of its own that runs the passive
 * checkpoints the writer's WAL hook asks for, so that no commit copies the WAL or waits for a
 * sync. ckpt_start opens it on path (after the WAL switch and the migrations); ckpt_ask, with the
 * WAL's frames after a commit, wakes it when it has something to do (cheap, callable with the
 * writer's lock held; nothing before ckpt_start); ckpt_stop joins it and closes its connection
 * (before the other connections close). */
/* The WAL's size in frames at which a checkpoint is asked for (SQLite's autocheckpoint default), and
 * the size at which the committing thread runs it itself: a passive checkpoint beside a writer
 * that never pauses cannot finish (new frames keep coming), and only one that finishes lets the
 * next commit restart the WAL, so past this the commit checkpoints, holding the writer's lock, and
 * the WAL stays bounded (about 40 MB) as before. */
#define CKPT_FRAMES 1000
#define CKPT_INLINE_FRAMES 10000
int ckpt_start(struct store *st, const char *path, mp_err *e);
void ckpt_ask(struct store *st, int frames);
void ckpt_stop(struct store *st);

/* Locking. lock() records, per thread, which connections it holds; hold() checks it. */
void store_conn_lock(struct store *st, enum conn_id c);
void store_conn_unlock(struct store *st, enum conn_id c);
void store_hold(const struct store *st, enum conn_id c, const char *fn);
#define hold(st, c) store_hold((st), (c), __func__)

/* Prepares one statement of the table (store_open, for each): fails with store.open naming it when
 * SQLite refuses the text or when it returns other than ncols columns, which is what its readers
 * read by index (stmts.h, STORE_COLS). 0 with *out (owned by the caller), or -1. */
int store_prepare(sqlite3 *db, const char *name, const char *sql, int ncols, sqlite3_stmt **out, mp_err *e);

/* The statement id, reset with its bindings cleared; the caller holds its connection's lock. */
sqlite3_stmt *stmt(struct store *st, enum stmt_id id);

/* A named transaction on the writer (BEGIN IMMEDIATE ... COMMIT); the writer lock is held. The
 * name is a string literal: it appears in errors and is what MEMPOLICYD_TEST_KILL_AT names. */
int tx_begin(struct store *st, const char *name, mp_err *e);
int tx_commit(struct store *st, mp_err *e);
void tx_rollback(struct store *st);

/* Fills e from connection c's last error; returns -1. */
int store_fail(struct store *st, enum conn_id c, mp_err *e, const char *what);

/* "One write": steps a writer statement to completion and resets it. Inside a named transaction
 * this is also the fault point: the test can have the process SIGKILLed right after it. */
int run_write(struct store *st, sqlite3_stmt *s, mp_err *e, const char *what);
/* The same for an INSERT: the new row's id (> 0), or -1. */
int64_t run_insert(struct store *st, sqlite3_stmt *s, mp_err *e, const char *what);
/* The same for an UPDATE or DELETE of one row by id: 0 rows is not_found (a code from the
 * registry) with "no <noun> <id>". */
int run_write_one(struct store *st, sqlite3_stmt *s, enum mp_code not_found, const char *noun, int64_t id,
		       mp_err *e, const char *what);

/* "One row" and "many rows" of a read, as JSON made by row(): read_one fails with not_found ("no
 * <noun> <id>") when there is no row; read_many returns an array (possibly empty). Both reset s. */
typedef json_t *(*row_fn)(sqlite3_stmt *s);
json_t *read_one(struct store *st, enum conn_id c, sqlite3_stmt *s, row_fn row, enum mp_code not_found,
		 const char *noun, int64_t id, mp_err *e);
json_t *read_many(struct store *st, enum conn_id c, sqlite3_stmt *s, row_fn row, mp_err *e, const char *what);
/* A keyset page: s selected limit + 1 rows by id descending; the extra one is dropped and says
 * there is a next page, whose cursor (the last kept row's "id") goes to *next_before_id (0: none). */
json_t *read_page_json(struct store *st, enum conn_id c, sqlite3_stmt *s, row_fn row, int limit, int64_t *next_before_id,
		       mp_err *e, const char *what);

/* A list page handed row by row to the caller (no JSON built): steps s, whose LIMIT the caller
 * bound to limit + 1, calls row(s, arg) on each of the first limit rows and sets *next to the id
 * (column 0) of the last of them when one more row exists, 0 otherwise. row returns -1 when out
 * of memory (internal.nomem). Resets s; the lock of connection c is held. */
typedef int (*page_row_fn)(sqlite3_stmt *s, void *arg);
int read_page(struct store *st, enum conn_id c, sqlite3_stmt *s, int limit, page_row_fn row, void *arg,
	      int64_t *next, mp_err *e, const char *what);
/* An integer column that may be NULL: false for NULL, else true with *v. */
bool col_opt_int(sqlite3_stmt *s, int col, int64_t *v);

/* Binding: NULL binds SQL NULL; JSON is bound as compact text. */
int bind_text_or_null(sqlite3_stmt *s, int i, const char *t);
/* A failed bind (SQLITE_TOOBIG past the connection's length limit, SQLITE_NOMEM) leaves the
 * parameter NULL and the statement would still run, storing NULL or finding nothing: each text
 * or blob bind goes through BIND, which keeps the first failure in rc, and the function checks rc
 * with bind_fail before it runs the statement. */
#define BIND(rc, call) ((rc) = (rc) != SQLITE_OK ? (rc) : (call))
/* rc as the error of what (internal.nomem for SQLITE_NOMEM, store.error otherwise); -1. */
int bind_fail(int rc, mp_err *e, const char *what);
int bind_json(sqlite3_stmt *s, int i, const json_t *v);

/* A result column as JSON (new references): NULL becomes json null; a text column that holds JSON
 * (request, result, action) is parsed, and unparseable text also becomes null. */
json_t *col_int(sqlite3_stmt *s, int col);
json_t *col_text(sqlite3_stmt *s, int col);
json_t *col_json(sqlite3_stmt *s, int col);
/* The same for a result column (operations.result, jobs.result), through store/conditions.h's
 * stored form: bind_result binds the shorter form of result (borrowed), col_result reads either
 * form back as the answer's. */
int bind_result(sqlite3_stmt *s, int i, json_t *result);
json_t *col_result(sqlite3_stmt *s, int col);
/* What bind_result binds, made once for a result that goes into two rows (a job's and its
 * operation's, store_job_finish): 0 with *text (owned by the caller; NULL for no result), or
 * SQLITE_NOMEM (also for a result json_dumps could not write). */
int result_text(json_t *result, char **text);

/* How many latency samples a statistics query keeps in memory (2^20: 8 MiB) before it switches to
 * counting first and walking without a buffer. A variable only so that a test can make it small. */
extern size_t stats_buf_samples;
/* How many times a statistics walk paused for writers (stats.c), counted for the unit test that
 * checks it pauses only when commits happen; atomic. */
extern unsigned stats_pauses;

/* Rows of one table written inside another file's transaction (the writer lock held). */
struct op_record;
struct op_outcome;
int64_t op_insert_row(struct store *st, const struct op_record *op, mp_err *e);
int op_finish_row(struct store *st, int64_t id, const struct op_outcome *out, mp_err *e);
/* The same with out->result already as result_text made it (text borrowed; NULL: no result). */
int op_finish_row_text(struct store *st, int64_t id, const struct op_outcome *out, const char *text, mp_err *e);
/* A knob change's rows and its operation's outcome (store/history.h's knob_record). */
struct knob_record;
int knob_record_rows(struct store *st, const struct knob_record *r, mp_err *e);

#endif
