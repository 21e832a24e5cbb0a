/* The SQLite store: the only code that speaks SQL. Two connections to one WAL file: a writer,
 * whose mutex keeps every history write in commit order, and a read-only reader for the reads
 * that serve the API (lists, statistics), so that a long scan never makes a writer wait.
 *
 * One lock rule for every store_*, history_*, jobs_db_*, sched_store_* and stats_* function: it
 * takes the lock it needs itself and releases it before returning. Callers never lock, and a write
 * that spans rows is one named transaction inside store/ (store_job_finish, history_record_knobs,
 * sched_store_ran, ...), never a sequence of calls. See docs/DESIGN.md "Storage". */
#ifndef MPD_STORE_DB_H
#define MPD_STORE_DB_H

#include <stdint.h>

#include "common/err.h"

struct store;

/* Opens (creating if needed) the database at path, sets WAL, busy timeout and foreign keys, runs
 * the migrations compiled in from schema/, opens the reader and prepares every statement. Refuses
 * a database newer than this binary.
 *
 * Test-only fault point (test builds: MPD_TEST_HOOKS): MEMPOLICYD_TEST_KILL_AT=<transaction>:<n> in the environment makes the
 * process SIGKILL itself right after the n-th statement of every named transaction <transaction>
 * (before its COMMIT), to prove that a crash there leaves the rows agreeing. */
struct store *store_open(const char *path, mp_err *e);
void store_close(struct store *st);   /* NULL is fine */

/* The schema version (PRAGMA user_version) of the open database, -1 on error. */
int store_version(struct store *st);

#endif
