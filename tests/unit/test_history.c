/* The operations store on a real SQLite file: insert, finish, knob changes, list with filters and
 * cursors, get in full, and data that survives closing and reopening. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/store/db.h"
#include "server/api/api.h"
#include "server/store/history.h"
#include "tests/unit/check_main.h"

static char dir[64], path[96];

static struct store *fresh(void)
{
	struct store *st;
	mp_err e = { 0 };

	snprintf(dir, sizeof dir, "/tmp/mpd-history-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/h.db", dir);
	st = store_open(path, &e);
	ck_assert_msg(st != NULL, "%s", e.detail);
	return st;
}

static void drop(struct store *st)
{
	char cmd[128];
	store_close(st);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Inserts a finished operation started at t ns. */
static int64_t add(struct store *st, const char *kind, const char *status, int64_t t, bool actor)
{
	mp_err e = { 0 };
	struct op_record op = { .kind = kind, .source = actor ? "api" : "scheduler", .has_actor = actor,
				.actor_uid = 0, .actor_name = actor ? "root" : NULL, .started_ns = t, .finished_ns = t + 10,
				.status = status, .kernel_release = "6.18-test" };
	int64_t id;

	id = history_insert(st, &op, &e);
	ck_assert_msg(id > 0, "%s", e.detail);
	return id;
}

/* A row of history_list_each as JSON, the members these tests look at. */
static int collect(const struct op_row *r, void *arg)
{
	json_t *actor = r->has_uid || r->actor_name ?
		json_pack("{s:o, s:o}", "uid", r->has_uid ? json_integer(r->uid) : json_null(),
			  "name", r->actor_name ? json_string(r->actor_name) : json_null()) : json_null();

	return json_array_append_new(arg, json_pack("{s:I, s:s, s:s, s:o, s:s}", "id", (json_int_t)r->id,
						      "kind", r->kind, "status", r->status, "actor", actor,
						      "summary", r->summary));
}

static json_t *list(struct store *st, struct history_filter *f, int64_t *next)
{
	json_t *ops = json_array();
	mp_err e = { 0 };
	ck_assert_msg(history_list_each(st, f, collect, ops, next, &e) == 0, "%s", e.detail);
	return ops;
}

static int64_t id_at(json_t *ops, size_t i)
{
	return json_integer_value(json_object_get(json_array_get(ops, i), "id"));
}

START_TEST(insert_finish_and_get_with_changes)
{
	struct store *st = fresh();
	mp_err e = { 0 };
	json_t *req = json_pack("{s:{s:s}}", "knobs", "thp.enabled", "never");
	json_t *res = json_pack("{s:[]}", "changes");
	struct op_record op = { .kind = "knobs.set", .source = "api", .has_actor = true, .actor_uid = 1000,
				.actor_name = "alice", .started_ns = 1000, .status = "running", .request = req,
				.kernel_release = "6.18-test" };
	struct knob_change_rec kc[3] = { { 0, "thp.enabled", "madvise", "never", "written", 0 },
					 { 1, "thp.defrag", "madvise", "defer", "failed", 22 },
					 { 0, "thp.enabled", "madvise", "never", "written", 0 } };
	struct op_outcome out = { "rolled_back", 2000, 22, "refused", res };
	struct op_outcome other = { "ok", 2000, 0, NULL, NULL };
	json_t *got, *ch;
	int64_t id;

	id = history_insert(st, &op, &e);
	ck_assert_int_gt(id, 0);
	/* the same (op, seq) twice is refused by the primary key, and the transaction takes the
	 * whole record back: no change rows, the operation still running */
	ck_assert_int_eq(history_record_knobs(st, id, kc, 3, &out, &e), -1);
	got = history_get(st, id, &e);
	ck_assert_str_eq(json_string_value(json_object_get(got, "status")), "running");
	ck_assert_uint_eq(json_array_size(json_object_get(got, "knob_changes")), 0);
	json_decref(got);
	/* an unknown operation: nothing recorded either */
	ck_assert_int_eq(history_record_knobs(st, id + 100, kc, 1, &other, &e), -1);
	ck_assert_int_eq(history_record_knobs(st, id, kc, 2, &out, &e), 0);

	got = history_get(st, id, &e);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(json_string_value(json_object_get(got, "status")), "rolled_back");
	ck_assert_int_eq(json_integer_value(json_object_get(got, "errno")), 22);
	ck_assert_int_eq(json_integer_value(json_object_get(got, "finished_ns")), 2000);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(got, "actor"), "uid")), 1000);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "actor"), "name")), "alice");
	ck_assert(json_equal(json_object_get(got, "request"), req));
	ck_assert(json_equal(json_object_get(got, "result"), res));
	ch = json_object_get(got, "knob_changes");
	ck_assert_uint_eq(json_array_size(ch), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ch, 0), "old")), "madvise");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ch, 1), "new")), "defer");
	ck_assert(json_is_null(json_object_get(json_array_get(ch, 0), "errno")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(ch, 1), "errno")), 22);
	json_decref(got);

	ck_assert_ptr_null(history_get(st, id + 1, &e));
	ck_assert_int_eq(api_status(&e), 404);
	ck_assert_str_eq(mp_code_name(e.code), "history.not_found");
	json_decref(req);
	json_decref(res);
	drop(st);
}
END_TEST

/* A bearer token's change: a name and no uid (server/api/auth.c), shown as such. */
START_TEST(token_actor_has_a_name_and_no_uid)
{
	struct store *st = fresh();
	mp_err e = { 0 };
	struct op_record op = { .kind = "knobs.set", .source = "api", .has_actor = false, .actor_name = "token:ci",
				.started_ns = 500, .finished_ns = 510, .status = "ok", .kernel_release = "6.18-test" };
	json_t *got, *actor;
	int64_t id = history_insert(st, &op, &e);

	ck_assert_msg(id > 0, "%s", e.detail);
	got = history_get(st, id, &e);
	ck_assert_msg(got, "%s", e.detail);
	actor = json_object_get(got, "actor");
	ck_assert(json_is_null(json_object_get(actor, "uid")));
	ck_assert_str_eq(json_string_value(json_object_get(actor, "name")), "token:ci");
	json_decref(got);
	drop(st);
}
END_TEST

START_TEST(list_filters_and_newest_first)
{
	struct store *st = fresh();
	struct history_filter f = { .limit = 50 };
	int64_t next, a, b, c, d;
	json_t *ops;

	a = add(st, "knobs.set", "ok", 100, true);
	b = add(st, "hugepages.resize", "ok", 200, true);
	c = add(st, "knobs.set", "failed", 300, true);
	d = add(st, "knobs.set", "ok", 400, false);

	ops = list(st, &f, &next);
	ck_assert_uint_eq(json_array_size(ops), 4);
	ck_assert_int_eq(id_at(ops, 0), d);
	ck_assert_int_eq(id_at(ops, 3), a);
	ck_assert_int_eq(next, 0);
	ck_assert(json_is_null(json_object_get(json_array_get(ops, 0), "actor")));
	json_decref(ops);


	f.kind = "knobs.set";
	ops = list(st, &f, &next);
	ck_assert_uint_eq(json_array_size(ops), 3);
	json_decref(ops);
	f.status = "ok";
	ops = list(st, &f, &next);
	ck_assert_uint_eq(json_array_size(ops), 2);
	ck_assert_int_eq(id_at(ops, 0), d);
	ck_assert_int_eq(id_at(ops, 1), a);
	json_decref(ops);

	f = (struct history_filter){ .limit = 50, .has_since = true, .since_ns = 200, .has_until = true,
				     .until_ns = 400 };
	ops = list(st, &f, &next);   /* since inclusive, until exclusive */
	ck_assert_uint_eq(json_array_size(ops), 2);
	ck_assert_int_eq(id_at(ops, 0), c);
	ck_assert_int_eq(id_at(ops, 1), b);
	json_decref(ops);

	f = (struct history_filter){ .limit = 50, .kind = "nothing" };
	ops = list(st, &f, &next);
	ck_assert_uint_eq(json_array_size(ops), 0);
	ck_assert_int_eq(next, 0);
	json_decref(ops);
	drop(st);
}
END_TEST

START_TEST(cursor_pages_through_everything_once)
{
	struct store *st = fresh();
	struct history_filter f = { .limit = 7 };
	int64_t next, prev = INT64_MAX;
	int seen = 0, pages = 0;

	for (int i = 0; i < 30; i++)
		add(st, i % 2 ? "knobs.set" : "other", "ok", 1000 + i, true);
	do {
		json_t *ops = list(st, &f, &next);
		for (size_t i = 0; i < json_array_size(ops); i++) {
			ck_assert_int_lt(id_at(ops, i), prev);
			prev = id_at(ops, i);
			seen++;
		}
		pages++;
		f.before_id = next;
		json_decref(ops);
	} while (next);
	ck_assert_int_eq(seen, 30);
	ck_assert_int_eq(pages, 5);

	/* with a filter, the cursor keeps to it */
	f = (struct history_filter){ .limit = 10, .kind = "knobs.set" };
	seen = 0;
	do {
		json_t *ops = list(st, &f, &next);
		seen += (int)json_array_size(ops);
		f.before_id = next;
		json_decref(ops);
	} while (next);
	ck_assert_int_eq(seen, 15);

	/* an exact multiple of the page size ends without an empty extra page */
	f = (struct history_filter){ .limit = 15, .kind = "other" };
	json_decref(list(st, &f, &next));
	ck_assert_int_eq(next, 0);
	drop(st);
}
END_TEST

START_TEST(reopen_keeps_data_and_schema_version)
{
	struct store *st = fresh();
	mp_err e = { 0 };
	int64_t id = add(st, "knobs.set", "ok", 5, true);
	int v = store_version(st);
	json_t *got;

	ck_assert_int_ge(v, 1);
	store_close(st);
	st = store_open(path, &e);
	ck_assert_msg(st != NULL, "%s", e.detail);
	ck_assert_int_eq(store_version(st), v);
	got = history_get(st, id, &e);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(json_string_value(json_object_get(got, "kind")), "knobs.set");
	ck_assert_str_eq(json_string_value(json_object_get(got, "kernel_release")), "6.18-test");
	json_decref(got);
	ck_assert_int_gt(add(st, "knobs.set", "ok", 6, true), id);
	drop(st);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("history");
	TCase *t = tcase_create("store");
	tcase_add_test(t, insert_finish_and_get_with_changes);
	tcase_add_test(t, token_actor_has_a_name_and_no_uid);
	tcase_add_test(t, list_filters_and_newest_first);
	tcase_add_test(t, cursor_pages_through_everything_once);
	tcase_add_test(t, reopen_keeps_data_and_schema_version);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
