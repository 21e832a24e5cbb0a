/* The store's named transactions under SIGKILL: a child process opens the database with the test
 * fault point armed (MEMPOLICYD_TEST_KILL_AT=<transaction>:<n>), runs the transaction and is killed
 * right after its n-th statement; the parent reopens the file and checks that the rows agree, for
 * every n up to the transaction's length. Also: the lock rule's check aborts a helper run without
 * its lock. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/internal.h"
#include "server/store/jobs.h"
#include "server/store/retain.h"
#include "server/store/restores.h"
#include "server/store/schedules.h"
#include "tests/unit/check_main.h"

static char dir[64], path[96];

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/mpd-storetx-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/t.db", dir);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static struct store *open_store(void)
{
	mp_err e = { 0 };
	struct store *st = store_open(path, &e);
	ck_assert_msg(st != NULL, "%s", e.detail);
	return st;
}

/* Runs fn(arg) in a child whose store has the fault point armed at tx:n. Returns true when the
 * child was SIGKILLed (the fault point fired), false when it finished (n is past the end). A
 * connection is never carried across fork(): the parent has none open while this runs. */
static bool run_killed(const char *tx, int n, int (*fn)(struct store *, void *), void *arg)
{
	char spec[64];
	int status;
	pid_t pid;

	snprintf(spec, sizeof spec, "%s:%d", tx, n);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct store *st;
		mp_err e = { 0 };
		setenv("MEMPOLICYD_TEST_KILL_AT", spec, 1);
		if (!(st = store_open(path, &e)))
			_exit(2);
		int rc = fn(st, arg);
		store_close(st);
		_exit(rc == 0 ? 0 : 3);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status)) {
		ck_assert_int_eq(WTERMSIG(status), SIGKILL);
		return true;
	}
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child ended with status %d", status);
	return false;
}

static char *status_of(json_t *row)
{
	char *s = strdup(json_string_value(json_object_get(row, "status")));
	json_decref(row);
	return s;
}

static char *job_status(struct store *st, int64_t id)
{
	mp_err e = { 0 };
	json_t *j = jobs_db_get(st, id, &e);
	ck_assert_msg(j != NULL, "%s", e.detail);
	return status_of(j);
}

static char *op_status(struct store *st, int64_t id)
{
	mp_err e = { 0 };
	json_t *o = history_get(st, id, &e);
	ck_assert_msg(o != NULL, "%s", e.detail);
	return status_of(o);
}

/* A job and its operation as jobs_submit leaves them, then started. */
static void submitted_job(int64_t *op_id, int64_t *job_id)
{
	struct store *st = open_store();
	struct op_record op = { .kind = "test.job", .source = "api", .started_ns = 1, .status = "running" };
	struct job_row row = { .kind = "test.job", .status = "queued", .source = "api", .created_ns = 1 };
	mp_err e = { 0 };

	ck_assert_msg(store_job_submit(st, &op, &row, op_id, job_id, &e) == 0, "%s", e.detail);
	ck_assert_int_eq(store_job_start(st, *job_id, 2, &e), 0);
	store_close(st);
}

struct end_arg {
	const char *tx;
	int64_t op_id, job_id;
	const char *status;
};

static int end_job(struct store *st, void *p)
{
	struct end_arg *a = p;
	struct job_end end = { .tx = a->tx, .job_id = a->job_id, .op_id = a->op_id, .status = a->status,
			       .finished_ns = 3, .reason = "test", .op_error = "test" };
	mp_err e = { 0 };
	return store_job_finish(st, &end, &e);
}

/* For each way a job ends (finish, cancel, recovery at restart): a kill after each of its
 * statements leaves the job and its operation as they were (both running), and once it runs to
 * the end both say the new status. Before the transaction, a kill after the first statement left
 * the job ended and its operation running, which the next start then marked "interrupted". */
START_TEST(a_kill_at_every_step_of_a_jobs_end_leaves_job_and_operation_agreeing)
{
	static const struct { const char *tx, *status; } ways[] = {
		{ "job_finish", "ok" }, { "job_cancel", "cancelled" }, { "job_recover", "interrupted" },
	};

	for (size_t w = 0; w < sizeof ways / sizeof *ways; w++) {
		struct end_arg a = { .tx = ways[w].tx, .status = ways[w].status };
		int n;

		submitted_job(&a.op_id, &a.job_id);
		for (n = 1; run_killed(ways[w].tx, n, end_job, &a); n++) {
			struct store *st = open_store();
			char *js = job_status(st, a.job_id), *os = op_status(st, a.op_id);
			ck_assert_msg(!strcmp(js, "running") && !strcmp(os, "running"),
				      "%s killed after statement %d: job %s, operation %s", ways[w].tx, n, js, os);
			free(js);
			free(os);
			store_close(st);
		}
		ck_assert_int_eq(n, 3);   /* two statements: the job row, the operation row */
		struct store *st = open_store();
		char *js = job_status(st, a.job_id), *os = op_status(st, a.op_id);
		ck_assert_str_eq(js, ways[w].status);
		ck_assert_str_eq(os, ways[w].status);
		free(js);
		free(os);
		store_close(st);
	}
}
END_TEST

static int submit(struct store *st, void *p)
{
	struct op_record op = { .kind = "test.job", .source = "api", .started_ns = 1, .status = "running" };
	struct job_row row = { .kind = "test.job", .status = "queued", .source = "api", .created_ns = 1 };
	int64_t *ids = p;
	mp_err e = { 0 };
	return store_job_submit(st, &op, &row, &ids[0], &ids[1], &e);
}

static int64_t count(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	int64_t n = -1;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return n;
}

START_TEST(a_kill_inside_submit_leaves_neither_row)
{
	int64_t ids[2];
	int n;

	store_close(open_store());   /* migrated, empty */
	for (n = 1; run_killed("job_submit", n, submit, ids); n++) {
		ck_assert_int_eq(count("SELECT count(*) FROM operations"), 0);
		ck_assert_int_eq(count("SELECT count(*) FROM jobs"), 0);
	}
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(count("SELECT count(*) FROM operations"), 1);
	ck_assert_int_eq(count("SELECT count(*) FROM jobs WHERE op_id = (SELECT id FROM operations)"), 1);
}
END_TEST

static int record_knobs(struct store *st, void *p)
{
	static const struct knob_change_rec kc[2] = { { 0, "thp.enabled", "madvise", "never", "written", 0 },
						      { 1, "thp.defrag", "madvise", "defer", "written", 0 } };
	struct op_outcome out = { "ok", 5, 0, NULL, NULL };
	mp_err e = { 0 };
	return history_record_knobs(st, *(int64_t *)p, kc, 2, &out, &e);
}

START_TEST(a_kill_inside_a_knob_record_leaves_the_operation_running_and_no_changes)
{
	struct store *st = open_store();
	struct op_record op = { .kind = "knobs.set", .source = "api", .started_ns = 1, .status = "running" };
	mp_err e = { 0 };
	int64_t id = history_insert(st, &op, &e);
	int n;

	ck_assert_int_gt(id, 0);
	store_close(st);
	for (n = 1; run_killed("knob_record", n, record_knobs, &id); n++) {
		ck_assert_int_eq(count("SELECT count(*) FROM knob_changes"), 0);
		ck_assert_int_eq(count("SELECT count(*) FROM operations WHERE status = 'running'"), 1);
	}
	ck_assert_int_eq(n, 4);   /* two changes and the outcome */
	ck_assert_int_eq(count("SELECT count(*) FROM knob_changes"), 2);
	ck_assert_int_eq(count("SELECT count(*) FROM operations WHERE status = 'ok'"), 1);
}
END_TEST

static int schedule_ran(struct store *st, void *p)
{
	struct op_record skipped = { .kind = "schedule.run", .source = "scheduler", .started_ns = 9,
				     .finished_ns = 9, .status = "skipped" };
	struct op_record failed = skipped;
	struct sched_ran r = { .run_ns = 9, .due_ns = 8, .status = "failed", .error = "test", .next_run_ns = 100,
			       .skipped_op = &skipped, .failed_op = &failed };
	mp_err e = { 0 };

	failed.status = "failed";
	return sched_store_ran(st, *(int64_t *)p, &r, &e);
}

START_TEST(a_kill_inside_a_schedule_run_leaves_neither_operation_nor_run)
{
	struct store *st = open_store();
	json_t *action = json_pack("{s:{s:i}}", "hugepages", "total", 1);
	struct schedule_new s = { .cron = "* * * * *", .timezone = "UTC", .action = action, .enabled = true,
				  .misfire_grace_s = 60, .created_ns = 1, .next_run_ns = 8, .max_schedules = 10 };
	mp_err e = { 0 };
	int64_t id = sched_store_insert(st, &s, &e);
	int n;

	ck_assert_int_gt(id, 0);
	store_close(st);
	json_decref(action);
	for (n = 1; run_killed("schedule_run", n, schedule_ran, &id); n++) {
		ck_assert_int_eq(count("SELECT count(*) FROM operations"), 0);
		ck_assert_int_eq(count("SELECT count(*) FROM schedules WHERE last_run_ns IS NULL AND next_run_ns = 8"), 1);
	}
	ck_assert_int_eq(n, 4);   /* two operations and the schedule row */
	ck_assert_int_eq(count("SELECT count(*) FROM operations"), 2);
	/* the schedule points at the failure's operation */
	ck_assert_int_eq(count("SELECT count(*) FROM schedules s JOIN operations o ON o.id = s.last_op_id "
			       "WHERE o.status = 'failed' AND s.next_run_ns = 100"), 1);
}
END_TEST

static int prune(struct store *st, void *p)
{
	struct retention r = { .max_age_ns = 1000 };   /* now is 10^6: everything started before 999000 */
	struct retain_counts n = { 0 };
	mp_err e = { 0 };

	(void)p;
	return store_prune(st, &r, 1000000, 1, &n, &e) < 0 ? -1 : 0;
}

static int64_t rows(void)
{
	return count("SELECT (SELECT count(*) FROM operations) * 10000 + (SELECT count(*) FROM batches) * 100 + "
		     "(SELECT count(*) FROM knob_changes) * 10 + (SELECT count(*) FROM jobs)");
}

/* Retention's transaction: a kill after any of its deletes (an operation's batches, the operations
 * and their knob changes, the jobs) removes nothing; run to its end it removes the old operations
 * whole, the finished job, and leaves the queued job and its running operation. */
START_TEST(a_kill_inside_retention_removes_nothing_and_leaves_no_orphan)
{
	struct store *st = open_store();
	static const struct knob_change_rec kc = { 0, "thp.enabled", "madvise", "never", "written", 0 };
	struct batch_row b = { .kind = "hugepages.resize", .size_kb = 2048, .node = 0, .grow = true, .started_ns = 1 };
	struct op_outcome out = { "ok", 2, 0, NULL, NULL };
	struct op_record op = { .kind = "knobs.set", .source = "api", .started_ns = 1, .status = "running" };
	struct op_record held = { .kind = "test.job", .source = "api", .started_ns = 1, .status = "running" };
	struct job_row queued = { .kind = "test.job", .status = "queued", .source = "api", .created_ns = 1 };
	mp_err e = { 0 };
	int64_t id, held_op, held_job, before;
	int n;

	for (int i = 0; i < 3; i++) {
		ck_assert_int_gt(id = history_insert(st, &op, &e), 0);
		ck_assert_int_eq(history_record_knobs(st, id, &kc, 1, &out, &e), 0);
		b.op_id = id;
		for (b.seq = 0; b.seq < 2; b.seq++)
			ck_assert_int_eq(batches_db_insert(st, &b, 1, &e), 0);
	}
	ck_assert_int_eq(store_job_submit(st, &held, &queued, &held_op, &held_job, &e), 0);
	b.op_id = held_op;
	ck_assert_int_eq(batches_db_insert(st, &b, 1, &e), 0);
	store_close(st);
	/* a finished old job of the first operation */
	ck_assert_int_eq(count("SELECT count(*) FROM operations"), 4);
	{
		sqlite3 *db;
		ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
		ck_assert_int_eq(sqlite3_exec(db, "INSERT INTO jobs (kind, status, source, op_id, created_ns, finished_ns) "
					      "VALUES ('test.job', 'ok', 'api', 1, 1, 2)", NULL, NULL, NULL), SQLITE_OK);
		sqlite3_close(db);
	}
	before = rows();
	ck_assert_int_eq(before, 4 * 10000 + 7 * 100 + 3 * 10 + 2);
	for (n = 1; run_killed("retain", n, prune, NULL); n++)
		ck_assert_int_eq(rows(), before);
	ck_assert_int_eq(n, 4);   /* batches, operations (and their knob changes), jobs */
	ck_assert_int_eq(rows(), 1 * 10000 + 1 * 100 + 0 * 10 + 1);
	ck_assert_int_eq(count("SELECT count(*) FROM jobs WHERE status = 'queued'"), 1);   /* held_job */
	ck_assert_int_eq(count("SELECT count(*) FROM operations WHERE status = 'running'"), 1);
}
END_TEST

static int record_restores(struct store *st, void *p)
{
	struct op_record op = { .kind = "probe.restore", .source = "daemon", .started_ns = 1, .finished_ns = 1,
				.status = "ok" };
	mp_err e = { 0 };

	return restores_db_record(st, &op, p, 2, &e) > 0 ? 0 : -1;
}

START_TEST(a_kill_inside_the_start_up_restore_record_keeps_every_row_to_restore_again)
{
	struct store *st = open_store();
	mp_err e = { 0 };
	int64_t ids[2];
	int n;

	ids[0] = restores_db_add(st, 0, "knob", "thp.enabled", "madvise", &e);
	ids[1] = restores_db_add(st, 0, "pool", "2048:0", "3", &e);
	ck_assert_msg(ids[0] > 0 && ids[1] > 0, "%s", e.detail);
	store_close(st);
	for (n = 1; run_killed("restore_at_start", n, record_restores, ids); n++) {
		/* killed before the commit: nothing recorded, both rows still there to restore again */
		ck_assert_int_eq(count("SELECT count(*) FROM operations"), 0);
		ck_assert_int_eq(count("SELECT count(*) FROM restores"), 2);
	}
	ck_assert_int_eq(n, 4);   /* the operation and two deletions */
	ck_assert_int_eq(count("SELECT count(*) FROM operations WHERE kind = 'probe.restore'"), 1);
	ck_assert_int_eq(count("SELECT count(*) FROM restores"), 0);
}
END_TEST

/* The lock rule's check: a helper that needs the writer's lock, called without it, aborts. */
START_TEST(a_helper_without_its_lock_aborts)
{
	struct store *st = open_store();

	teardown();   /* the open file outlives its name; nothing is left behind by the abort */
	stmt(st, ST_OP_INSERT);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("store_tx");
	TCase *t = tcase_create("kill");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, a_kill_at_every_step_of_a_jobs_end_leaves_job_and_operation_agreeing);
	tcase_add_test(t, a_kill_inside_submit_leaves_neither_row);
	tcase_add_test(t, a_kill_inside_a_knob_record_leaves_the_operation_running_and_no_changes);
	tcase_add_test(t, a_kill_inside_a_schedule_run_leaves_neither_operation_nor_run);
	tcase_add_test(t, a_kill_inside_retention_removes_nothing_and_leaves_no_orphan);
	tcase_add_test(t, a_kill_inside_the_start_up_restore_record_keeps_every_row_to_restore_again);
	tcase_add_test_raise_signal(t, a_helper_without_its_lock_aborts, SIGABRT);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
