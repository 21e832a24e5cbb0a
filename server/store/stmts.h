/* Private to server/store/: every SQL statement the daemon runs, one line each, prepared once at
 * open on the connection it names (W: the writer, R: the read-only reader, P: the read-only reader
 * of pages and scans, internal.h) and finalized at close.
 * A statement is fetched by its index (stmt()), never looked up by text or pointer, and never
 * evicted. Adding a statement = one line here, and, when it returns rows, one line in STORE_COLS
 * below: how many columns its readers read by index. store_open checks each prepared statement's
 * sqlite3_column_count against that once, so a column added to a SELECT (or a list macro) without
 * its readers is a failed open naming the statement, not a reader silently off by one. */
#ifndef MPD_STORE_STMTS_H
#define MPD_STORE_STMTS_H

#define OP_COLS "id, kind, source, actor_uid, actor_name, started_ns, finished_ns, status, errno, error"
#define OP_NCOLS 10
/* What an operation's summary (store/summary.c) is built from, each only for the kinds that use it
 * so that a page of knob changes parses no JSON for it: the request (not of knobs.set), a resize's
 * result.targets, and the knob changes already as text, "knob old→new[ status]" in order (status
 * only when a change did not stay written). */
#define OP_SUMMARY_COLS "CASE WHEN kind != 'knobs.set' THEN request END, " \
	"CASE WHEN kind = 'hugepages.resize' THEN json_extract(result, '$.targets') END, " \
	"CASE WHEN kind = 'knobs.set' THEN (SELECT group_concat(knob || ' ' || ifnull(old, '?') || '→' || " \
	"ifnull(new, '?') || CASE WHEN status = 'written' THEN '' ELSE ' ' || status END, ', ') FROM " \
	"(SELECT knob, old, new, status FROM knob_changes WHERE op_id = operations.id ORDER BY seq)) END"
#define OP_SUMMARY_NCOLS 3
#define JOB_COLS "id, kind, status, source, schedule_id, actor_uid, actor_name, op_id, created_ns, started_ns, " \
	"finished_ns, request, progress, result, reason, errno, error"
#define JOB_NCOLS 17
/* JOB_COLS with, in result's place, what a list item's summary is built from. */
#define JOB_LIST_COLS "id, kind, status, source, schedule_id, actor_uid, actor_name, op_id, created_ns, " \
	"started_ns, finished_ns, request, progress, CASE WHEN kind = 'hugepages.resize' THEN " \
	"json_extract(result, '$.targets') END, reason, errno, error"
#define SCHED_COLS "id, cron, timezone, action, enabled, misfire_grace_s, created_ns, created_by_uid, " \
	"created_by_name, next_run_ns, last_run_ns, last_due_ns, last_status, last_job_id, last_op_id, last_error"
#define SCHED_NCOLS 16

/* The latency statistics: one WHERE per combination of filters (size, node, since, until), so that
 * SQLite sees plain equalities and ranges and picks the covering index that walks the samples in
 * latency order (batches_stats, or batches_stats_size with a size). V(bits, clause). */
#define STATS_W(sz, nd, si, un) " FROM batches WHERE kind = ?1 AND direction = ?2" sz nd si un
#define STATS_SZ " AND size_kb = ?3"
#define STATS_ND " AND node = ?4"
#define STATS_SI " AND started_ns >= ?5"
#define STATS_UN " AND started_ns < ?6"
#define STATS_VARIANTS(V) \
	V(0,  STATS_W("",       "",       "",       ""))       \
	V(1,  STATS_W(STATS_SZ, "",       "",       ""))       \
	V(2,  STATS_W("",       STATS_ND, "",       ""))       \
	V(3,  STATS_W(STATS_SZ, STATS_ND, "",       ""))       \
	V(4,  STATS_W("",       "",       STATS_SI, ""))       \
	V(5,  STATS_W(STATS_SZ, "",       STATS_SI, ""))       \
	V(6,  STATS_W("",       STATS_ND, STATS_SI, ""))       \
	V(7,  STATS_W(STATS_SZ, STATS_ND, STATS_SI, ""))       \
	V(8,  STATS_W("",       "",       "",       STATS_UN)) \
	V(9,  STATS_W(STATS_SZ, "",       "",       STATS_UN)) \
	V(10, STATS_W("",       STATS_ND, "",       STATS_UN)) \
	V(11, STATS_W(STATS_SZ, STATS_ND, "",       STATS_UN)) \
	V(12, STATS_W("",       "",       STATS_SI, STATS_UN)) \
	V(13, STATS_W(STATS_SZ, "",       STATS_SI, STATS_UN)) \
	V(14, STATS_W("",       STATS_ND, STATS_SI, STATS_UN)) \
	V(15, STATS_W(STATS_SZ, STATS_ND, STATS_SI, STATS_UN))

#define STATS_COUNT_STMT(m, where) X(STATS_COUNT_##m, P, "SELECT count(*), total(latency_ns)" where)
#define STATS_WALK_STMT(m, where)  X(STATS_WALK_##m, P, "SELECT latency_ns" where " ORDER BY latency_ns")

#define STORE_STMTS(X) \
	X(VERSION,          R, "PRAGMA user_version") \
	/* operations (history.c) */ \
	X(OP_INSERT,        W, "INSERT INTO operations (kind, source, actor_uid, actor_name, started_ns, finished_ns, " \
	                       "status, errno, error, request, result, kernel_release, instance) " \
	                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)") \
	X(OP_FINISH,        W, "UPDATE operations SET status = ?2, finished_ns = ?3, errno = ?4, error = ?5, " \
	                       "result = coalesce(?6, result) WHERE id = ?1") \
	X(OP_UNFINISHED,    W, "UPDATE operations SET status = 'interrupted', finished_ns = ?1, " \
	                       "error = 'the daemon stopped, or could not record the outcome, before this operation " \
	                       "finished' WHERE status = 'running' AND instance IS NOT ?2") \
	X(KNOB_CHANGE,      W, "INSERT INTO knob_changes (op_id, seq, knob, old, new, status, errno) " \
	                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)") \
	/* one statement for every filter combination: a NULL parameter disables its condition */ \
	X(OP_LIST,          P, "SELECT " OP_COLS ", " OP_SUMMARY_COLS " FROM operations " \
	                       "WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR status = ?2) " \
	                       "AND (?3 IS NULL OR started_ns >= ?3) AND (?4 IS NULL OR started_ns < ?4) " \
	                       "AND (?5 IS NULL OR id < ?5) ORDER BY id DESC LIMIT ?6") \
	X(OP_GET,           R, "SELECT " OP_COLS ", request, result, kernel_release, " OP_SUMMARY_COLS \
	                       " FROM operations WHERE id = ?1") \
	X(OP_GET_CHANGES,   R, "SELECT seq, knob, old, new, status, errno FROM knob_changes WHERE op_id = ?1 " \
	                       "ORDER BY seq") \
	/* profile.drift rows (drift.c): one per drift, updated while it lasts; newest first */ \
	X(DRIFT_LIST,       P, "SELECT id, started_ns, finished_ns, status, request, result FROM operations " \
	                       "WHERE kind = 'profile.drift' AND (?1 IS NULL OR json_extract(request, '$.key') = ?1) " \
	                       "AND (?2 IS NULL OR id < ?2) ORDER BY id DESC LIMIT ?3") \
	/* jobs and batches (jobs.c) */ \
	X(JOB_INSERT,       W, "INSERT INTO jobs (kind, status, conflict_key, source, schedule_id, actor_uid, " \
	                       "actor_name, op_id, created_ns, request, progress, instance, started_ns) " \
	                       "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)") \
	X(JOB_RUNNING,      W, "UPDATE jobs SET status = 'running', started_ns = ? WHERE id = ?") \
	X(JOB_FINISH,       W, "UPDATE jobs SET status = ?, finished_ns = ?, reason = ?, errno = ?, error = ?, " \
	                       "progress = coalesce(?, progress), result = ? WHERE id = ?") \
	X(JOB_GET,          R, "SELECT " JOB_COLS " FROM jobs WHERE id = ?") \
	/* a list carries summaries (store/summary.c): a resize's result.targets, not the result */ \
	X(JOB_LIST,         P, "SELECT " JOB_LIST_COLS " FROM jobs WHERE (?1 IS NULL OR kind = ?1) " \
	                       "AND (?2 IS NULL OR status = ?2) AND (?3 IS NULL OR schedule_id = ?3) " \
	                       "AND (?4 IS NULL OR id < ?4) ORDER BY id DESC LIMIT ?5") \
	X(JOB_ACTIVE,       R, "SELECT id, coalesce(op_id, 0) FROM jobs WHERE status IN ('queued', 'running') " \
	                       "AND instance IS NOT ?2 ORDER BY id LIMIT ?1") \
	X(BATCH_INSERT,     W, "INSERT INTO batches (op_id, seq, kind, size_kb, node, direction, started_ns, before, " \
	                       "written, after, requested, achieved, elapsed_ns, latency_ns) " \
	                       "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)") \
	/* schedules (schedules.c) */ \
	/* the cap is checked in the INSERT itself: two creations at once cannot both pass a count */ \
	X(SCHED_INSERT,     W, "INSERT INTO schedules (cron, timezone, action, enabled, misfire_grace_s, created_ns, " \
	                       "created_by_uid, created_by_name, next_run_ns) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 " \
	                       "WHERE (SELECT count(*) FROM schedules) < ?10") \
	X(SCHED_GET,        R, "SELECT " SCHED_COLS " FROM schedules WHERE id = ?1") \
	X(SCHED_LIST,       P, "SELECT " SCHED_COLS " FROM schedules WHERE id > ?1 ORDER BY id LIMIT ?2") \
	X(SCHED_DELETE,     W, "DELETE FROM schedules WHERE id = ?1") \
	X(SCHED_DUE,        R, "SELECT id, cron, timezone, action, misfire_grace_s, next_run_ns FROM schedules " \
	                       "WHERE enabled = 1 AND next_run_ns IS NOT NULL AND next_run_ns <= ?1 " \
	                       "ORDER BY next_run_ns, id") \
	X(SCHED_NEXT,       R, "SELECT min(next_run_ns) FROM schedules WHERE enabled = 1 AND next_run_ns IS NOT NULL") \
	X(SCHED_RAN,        W, "UPDATE schedules SET last_run_ns = ?2, last_due_ns = ?3, last_status = ?4, " \
	                       "last_job_id = ?5, last_op_id = ?6, last_error = ?7, next_run_ns = ?8 WHERE id = ?1") \
	/* process samples (samples.c): the kind index narrows, json_extract picks the process; the \
	 * newest ?3, returned oldest first */ \
	X(SAMPLES_LIST,     P, "SELECT id, started_ns, result FROM (SELECT id, started_ns, result FROM operations " \
	                       "WHERE kind = 'process.sample' AND json_extract(request, '$.pid') = ?1 " \
	                       "AND json_extract(request, '$.start_time') = ?2 ORDER BY id DESC LIMIT ?3) ORDER BY id") \
	X(SAMPLES_LAST,     R, "SELECT json_extract(request, '$.start_time') FROM operations " \
	                       "WHERE kind = 'process.sample' AND json_extract(request, '$.pid') = ?1 " \
	                       "ORDER BY id DESC LIMIT 1") \
	/* retention (retain.c): the bounds are read on the reader, the deletes run in small chunks */ \
	X(RET_OP_YOUNG,     R, "SELECT id FROM operations WHERE started_ns >= ?1 ORDER BY started_ns, id LIMIT 1") \
	X(RET_OP_END,       R, "SELECT coalesce(max(id), 0) + 1 FROM operations") \
	X(RET_OP_NTH,       R, "SELECT id FROM operations ORDER BY id DESC LIMIT 1 OFFSET ?1") \
	X(RET_SIZE,         R, "SELECT (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM " \
	                       "pragma_freelist_count()), (SELECT page_size FROM pragma_page_size()), " \
	                       "(SELECT count(*) FROM operations), (SELECT count(*) FROM jobs)") \
	X(RET_BATCH_NTH,    R, "SELECT op_id FROM batches ORDER BY op_id DESC, seq DESC LIMIT 1 OFFSET ?1") \
	X(RET_JOB_YOUNG,    R, "SELECT min(id) FROM jobs WHERE coalesce(finished_ns, created_ns) >= ?1") \
	X(RET_JOB_END,      R, "SELECT coalesce(max(id), 0) + 1 FROM jobs") \
	X(RET_JOB_NTH,      R, "SELECT id FROM jobs ORDER BY id DESC LIMIT 1 OFFSET ?1") \
	X(RET_BATCH_DEL,    W, "DELETE FROM batches WHERE rowid IN (SELECT b.rowid FROM operations o JOIN batches b " \
	                       "ON b.op_id = o.id WHERE o.id < ?1 AND o.status != 'running' ORDER BY o.id LIMIT ?2)") \
	X(RET_OP_DEL,       W, "DELETE FROM operations WHERE id IN (SELECT id FROM operations o WHERE id < ?1 " \
	                       "AND status != 'running' AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.op_id = o.id) " \
	                       "AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.op_id = o.id " \
	                       "AND j.status IN ('queued', 'running')) ORDER BY id LIMIT ?2)") \
	X(RET_JOB_DEL,      W, "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE id < ?1 " \
	                       "AND status NOT IN ('queued', 'running') ORDER BY id LIMIT ?2)") \
	/* one operation's batch latencies, ascending, for history compare (stats.c) */ \
	X(BATCH_LAT_OP,     P, "SELECT latency_ns FROM batches WHERE op_id = ?1 ORDER BY latency_ns") \
	/* pending restores (restores.c); W for the list too: it is read at start to write back */ \
	X(RESTORE_ADD,      W, "INSERT INTO restores (op_id, what, target, value, created_ns) VALUES (?1, ?2, ?3, ?4, ?5)") \
	X(RESTORE_DONE,     W, "DELETE FROM restores WHERE id = ?1") \
	X(RESTORE_PENDING,  W, "SELECT id, op_id, what, target, value FROM restores ORDER BY id DESC") \
	/* an experiment's raw samples (experiments.c) */ \
	X(EXP_SAMPLE_ADD,   W, "INSERT INTO experiment_samples (op_id, round, warmup, seq, arm, metric, value) " \
	                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)") \
	X(EXP_SAMPLES,      P, "SELECT round, warmup, seq, arm, metric, value FROM experiment_samples " \
	                       "WHERE op_id = ?1 ORDER BY seq, metric") \
	/* bearer tokens and failed authentications (tokens.c); the lookup serves every TLS request */ \
	X(TOKEN_NAMED,      W, "SELECT 1 FROM tokens WHERE name = ?1") \
	X(TOKEN_INSERT,     W, "INSERT INTO tokens (name, lookup, hash, scope, created_ns, created_by, expires_ns) " \
	                       "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE (SELECT count(*) FROM tokens) < ?8") \
	X(TOKEN_LOOKUP,     R, "SELECT id, name, hash, scope, expires_ns, revoked_ns, last_used_ns FROM tokens " \
	                       "WHERE lookup = ?1") \
	X(TOKEN_TOUCH,      W, "UPDATE tokens SET last_used_ns = ?2 WHERE id = ?1") \
	X(TOKEN_LIST,       R, "SELECT name, lookup, scope, created_ns, created_by, expires_ns, last_used_ns, " \
	                       "revoked_ns FROM tokens ORDER BY id") \
	X(TOKEN_REVOKE,     W, "UPDATE tokens SET revoked_ns = ?2 WHERE name = ?1 AND revoked_ns IS NULL") \
	X(AUTH_FAIL_ADD,    W, "INSERT INTO auth_failures (at_ns, peer, reason, token_name, detail) " \
	                       "VALUES (?1, ?2, ?3, ?4, ?5)") \
	/* latency statistics (stats.c): a count and sum, then a walk in latency order */ \
	STATS_VARIANTS(STATS_COUNT_STMT) \
	STATS_VARIANTS(STATS_WALK_STMT)

/* What each statement that returns rows gives its readers: C(name, columns). A statement not named
 * here must return none (an INSERT, UPDATE or DELETE). */
#define STATS_COUNT_COLS(m, where) C(STATS_COUNT_##m, 2)
#define STATS_WALK_COLS(m, where)  C(STATS_WALK_##m, 1)
#define STORE_COLS(C) \
	C(VERSION, 1) \
	C(OP_LIST, OP_NCOLS + OP_SUMMARY_NCOLS) \
	C(OP_GET, OP_NCOLS + 3 + OP_SUMMARY_NCOLS)   /* + request, result, kernel_release */ \
	C(OP_GET_CHANGES, 6) \
	C(DRIFT_LIST, 6) \
	C(JOB_GET, JOB_NCOLS) \
	C(JOB_LIST, JOB_NCOLS) \
	C(JOB_ACTIVE, 2) \
	C(SCHED_GET, SCHED_NCOLS) \
	C(SCHED_LIST, SCHED_NCOLS) \
	C(SCHED_DUE, 6) \
	C(SCHED_NEXT, 1) \
	C(SAMPLES_LIST, 3) \
	C(SAMPLES_LAST, 1) \
	C(RET_OP_YOUNG, 1) \
	C(RET_OP_END, 1) \
	C(RET_OP_NTH, 1) \
	C(RET_BATCH_NTH, 1) \
	C(RET_JOB_YOUNG, 1) \
	C(RET_JOB_END, 1) \
	C(RET_JOB_NTH, 1) \
	C(RET_SIZE, 4) \
	C(BATCH_LAT_OP, 1) \
	C(RESTORE_PENDING, 5) \
	C(EXP_SAMPLES, 6) \
	C(TOKEN_NAMED, 1) \
	C(TOKEN_LOOKUP, 7) \
	C(TOKEN_LIST, 8) \
	STATS_VARIANTS(STATS_COUNT_COLS) \
	STATS_VARIANTS(STATS_WALK_COLS)

enum stmt_id {
#define X(name, conn, sql) ST_##name,
	STORE_STMTS(X)
#undef X
	ST__COUNT
};

#endif
