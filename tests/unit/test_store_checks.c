/* What the store checks before it runs a statement: that a prepared statement returns the columns
 * its readers read by index (store_prepare, once at open), and that every text bound to a write
 * was bound (BIND/bind_fail): a value past the connection's length limit fails the write and
 * writes nothing, rather than storing NULL in its place. */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/internal.h"
#include "server/store/jobs.h"
#include "server/store/tokens.h"
#include "tests/unit/check_main.h"

static char dir[64], path[96];
static struct store *st;
static char big[512];            /* past the limit the tests set */

static void setup(void)
{
	mp_err e = { 0 };

	snprintf(dir, sizeof dir, "/tmp/mpd-checks-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/c.db", dir);
	st = store_open(path, &e);   /* every statement of the table passes its column check */
	ck_assert_msg(st != NULL, "%s", e.detail);
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
}

static void teardown(void)
{
	char cmd[128];

	store_close(st);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* The writer takes no text longer than 256 bytes from here on. */
static void limit_writer(void)
{
	sqlite3_limit(st->c[W].db, SQLITE_LIMIT_LENGTH, 256);
}

static int count(const char *table)
{
	char sql[96];
	sqlite3_stmt *s;
	int n;

	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
	ck_assert_int_eq(sqlite3_prepare_v2(st->c[R].db, sql, -1, &s, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
	n = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return n;
}

START_TEST(a_statement_with_other_columns_than_its_readers_is_refused_at_prepare)
{
	sqlite3 *db;
	sqlite3_stmt *s = NULL;
	mp_err e = { 0 };

	ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE t (a, b, c)", NULL, NULL, NULL), SQLITE_OK);
	/* a column more than the reader reads (a list macro grown without its reader) */
	ck_assert_int_eq(store_prepare(db, "T_LIST", "SELECT a, b, c FROM t", 2, &s, &e), -1);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(e.code, MPE_STORE_OPEN);
	ck_assert_msg(strstr(e.detail, "T_LIST returns 3 columns; its readers read 2"), "%s", e.detail);
	/* one fewer: the reader would read past the row */
	mp_err_clear(&e);
	ck_assert_int_eq(store_prepare(db, "T_GET", "SELECT a FROM t", 2, &s, &e), -1);
	ck_assert_msg(strstr(e.detail, "T_GET returns 1 columns; its readers read 2"), "%s", e.detail);
	/* a write returns none, and is declared with none */
	mp_err_clear(&e);
	ck_assert_int_eq(store_prepare(db, "T_ADD", "INSERT INTO t VALUES (1, 2, 3)", 1, &s, &e), -1);
	ck_assert_int_eq(store_prepare(db, "T_ADD", "INSERT INTO t VALUES (1, 2, 3)", 0, &s, &e), 0);
	sqlite3_finalize(s);
	ck_assert_int_eq(store_prepare(db, "T_LIST", "SELECT a, b, c FROM t", 3, &s, &e), 0);
	ck_assert_ptr_nonnull(s);
	sqlite3_finalize(s);
	/* text SQLite refuses is named too */
	ck_assert_int_eq(store_prepare(db, "T_BAD", "SELEKT 1", 1, &s, &e), -1);
	ck_assert_msg(strstr(e.detail, "statement T_BAD cannot be prepared"), "%s", e.detail);
	sqlite3_close(db);
}
END_TEST

START_TEST(an_operation_whose_text_cannot_be_bound_is_not_written)
{
	struct op_record op = { .kind = "knobs.set", .source = "api", .started_ns = 1, .finished_ns = 2,
				.status = "failed", .error = big, .kernel_release = "6.18-test" };
	mp_err e = { 0 };

	limit_writer();
	ck_assert_int_eq(history_insert(st, &op, &e), -1);
	ck_assert_int_eq(e.code, MPE_STORE_ERROR);
	ck_assert_msg(strstr(e.detail, "insert operation: a value cannot be bound"), "%s", e.detail);
	ck_assert_int_eq(count("operations"), 0);
	/* the same operation with a text that fits is written */
	op.error = "refused";
	mp_err_clear(&e);
	ck_assert_msg(history_insert(st, &op, &e) > 0, "%s", e.detail);
	ck_assert_int_eq(count("operations"), 1);
}
END_TEST

START_TEST(a_job_end_whose_error_cannot_be_bound_leaves_the_job_as_it_was)
{
	struct op_record op = { .kind = "hugepages.resize", .source = "api", .started_ns = 1, .status = "running",
				.kernel_release = "6.18-test" };
	struct job_row r = { .kind = "hugepages.resize", .status = "queued", .source = "api", .created_ns = 1 };
	int64_t op_id = 0, job_id = 0;
	mp_err e = { 0 };
	json_t *job;

	ck_assert_msg(store_job_submit(st, &op, &r, &op_id, &job_id, &e) == 0, "%s", e.detail);
	limit_writer();
	struct job_end end = { .job_id = job_id, .op_id = op_id, .status = "failed", .finished_ns = 5,
			       .reason = "deadline", .error = big, .op_error = "refused" };
	ck_assert_int_eq(store_job_finish(st, &end, &e), -1);
	ck_assert_msg(strstr(e.detail, "a value cannot be bound"), "%s", e.detail);
	ck_assert_ptr_nonnull(job = jobs_db_get(st, job_id, &e));
	ck_assert_str_eq(json_string_value(json_object_get(job, "status")), "queued");
	ck_assert(json_is_null(json_object_get(job, "error")));
	json_decref(job);
}
END_TEST

/* token_name may be NULL (bind_text_or_null): unchecked, a name that could not be bound was
 * recorded as "no token" */
START_TEST(a_failed_authentication_whose_token_name_cannot_be_bound_is_not_recorded)
{
	mp_err e = { 0 };

	limit_writer();
	ck_assert_int_eq(auth_failure_record(st, 1, "192.0.2.1", "auth.unauthenticated", big, "wrong secret", &e),
			 -1);
	ck_assert_msg(strstr(e.detail, "record a failed authentication: a value cannot be bound"), "%s", e.detail);
	ck_assert_int_eq(count("auth_failures"), 0);
	mp_err_clear(&e);
	ck_assert_msg(auth_failure_record(st, 1, "192.0.2.1", "auth.unauthenticated", NULL, "no such token", &e) == 0,
		      "%s", e.detail);
	ck_assert_int_eq(count("auth_failures"), 1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("store_checks");
	TCase *t = tcase_create("checks");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, a_statement_with_other_columns_than_its_readers_is_refused_at_prepare);
	tcase_add_test(t, an_operation_whose_text_cannot_be_bound_is_not_written);
	tcase_add_test(t, a_job_end_whose_error_cannot_be_bound_leaves_the_job_as_it_was);
	tcase_add_test(t, a_failed_authentication_whose_token_name_cannot_be_bound_is_not_recorded);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
