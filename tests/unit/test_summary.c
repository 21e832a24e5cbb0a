/* An operation's one-line summary (store/summary.c) per kind, its cut at 240 bytes on a UTF-8
 * boundary, and an instant's RFC 3339 text (api/instants.c) with the _at members it adds. */
#include <stdlib.h>
#include <string.h>

#include "server/api/api.h"
#include "server/store/summary.h"
#include "tests/unit/check_main.h"

static char *text_of(const char *kind, const char *status, const char *request, const char *targets,
		     const char *changes)
{
	json_t *rq = request ? json_loads(request, 0, NULL) : NULL, *tg = targets ? json_loads(targets, 0, NULL) : NULL;
	json_t *s = op_summary_text(kind, status, rq, tg, changes);
	char *out;

	ck_assert_ptr_nonnull(s);
	out = strdup(json_string_value(s));
	json_decref(s);
	json_decref(rq);
	json_decref(tg);
	return out;
}

static void expect(const char *want, char *got)
{
	ck_assert_str_eq(got, want);
	free(got);
}

START_TEST(knob_changes_are_the_statements_text)
{
	/* the text itself comes from SQL (store/stmts.h), checked end to end in test_openapi.py */
	expect("thp.enabled madvise→never", text_of("knobs.set", "ok", NULL, NULL, "thp.enabled madvise→never"));
	expect("no change running", text_of("knobs.set", "running", NULL, NULL, NULL));
}
END_TEST

START_TEST(resize_says_pages_moved_per_target)
{
	expect("2M node0 +512 ok",
	       text_of("hugepages.resize", "ok", "{\"size\": \"2M\"}", "[{\"node\": 0, \"from\": 0, \"current\": 512, \"stopped\": \"target\"}]", NULL));
	expect("1G node0 -2 ok, node1 +1 no_progress",
	       text_of("hugepages.resize", "partial", "{\"size\": \"1G\"}",
		       "[{\"node\": 0, \"from\": 4, \"current\": 2, \"stopped\": \"target\"},"
		       " {\"node\": 1, \"from\": 0, \"current\": 1, \"stopped\": \"no_progress\"}]", NULL));
	expect("2M total +8 ok",
	       text_of("hugepages.resize", "ok", "{\"size\": \"2M\"}", "[{\"node\": null, \"from\": 0, \"current\": 8}]", NULL));
	/* while it runs: what it asked for */
	expect("2M node1 →25 running", text_of("hugepages.resize", "running", "{\"size\": \"2M\", \"nodes\": {\"1\": 25}}", NULL, NULL));
}
END_TEST

START_TEST(other_kinds_and_unknown_ones)
{
	expect("cgroup /a/b mems→0-1 ok", text_of("cgroup.mems", "ok", "{\"path\": \"a/b\", \"mems\": \"0-1\"}", NULL, NULL));
	expect("pid 42 0→1 partial", text_of("process.migrate", "partial", "{\"pid\": 42, \"from\": \"0\", \"to\": \"1\"}", NULL, NULL));
	expect("/bin/sleep ok", text_of("process.launch", "ok", "{\"argv\": [\"/bin/sleep\", \"1\"]}", NULL, NULL));
	expect("schedule 3 skipped", text_of("schedule.run", "skipped", "{\"schedule_id\": 3}", NULL, NULL));
	expect("probe touch ok", text_of("probe.touch", "ok", "{\"probe\": \"touch\"}", NULL, NULL));
	expect("experiment always vs never on sparse-touch, 10 rounds ok",
	       text_of("experiment.run", "ok", "{\"arms\": [{\"name\": \"always\"}, {\"name\": \"never\"}], \"rounds\": 10,"
		       " \"workload\": {\"probe\": \"sparse-touch\"}}", NULL, NULL));
	expect("experiment a vs b vs c on ./bench, 4 rounds failed",
	       text_of("experiment.run", "failed", "{\"arms\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"c\"}],"
		       " \"rounds\": 4, \"workload\": {\"argv\": [\"./bench\", \"-x\"]}}", NULL, NULL));
	expect("ok", text_of("no.such.kind", "ok", NULL, NULL, NULL));
}
END_TEST

START_TEST(long_text_is_cut_on_a_character_boundary)
{
	/* 80 changes of "kN é→x" with 2- and 3-byte characters: the cut falls anywhere, never inside one */
	char changes[8192] = "";
	for (int i = 0; i < 80; i++)
		snprintf(changes + strlen(changes), sizeof changes - strlen(changes), "%sk%d é→x", i ? ", " : "", i);
	/* text_of strdup()s json_string_value: NULL (jansson refusing invalid UTF-8) would crash it */
	char *s = text_of("knobs.set", "ok", NULL, NULL, changes);
	size_t n = strlen(s);
	ck_assert_uint_le(n, 240 + strlen("…"));
	ck_assert_str_eq(s + n - strlen("…"), "…");
	free(s);
	for (int shift = 0; shift < 4; shift++) {   /* every alignment of the cut against the characters */
		char *t = text_of("knobs.set", "ok", NULL, NULL, changes + shift);
		ck_assert_uint_le(strlen(t), 240 + strlen("…"));
		free(t);
	}
}
END_TEST

START_TEST(instants_get_their_text_at_every_depth)
{
	char buf[48];
	json_t *v = json_pack("{s:I, s:n, s:[{s:I}], s:I}", "created_ns", (json_int_t)1796004000123456789LL, "finished_ns",
			      "jobs", "started_ns", (json_int_t)5, "elapsed_ns", (json_int_t)1796004000123456789LL);

	ck_assert_int_eq(api_instant_text(1796004000123456789LL, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "2026-11-30T02:00:00.123456789Z");
	ck_assert_int_eq(api_instant_text(-1, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "1969-12-31T23:59:59.999999999Z");
	ck_assert_int_eq(api_add_instants(v), 0);
	ck_assert_str_eq(json_string_value(json_object_get(v, "created_at")), "2026-11-30T02:00:00.123456789Z");
	ck_assert(json_is_null(json_object_get(v, "finished_at")));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(v, "jobs"), 0), "started_at")),
			 "1970-01-01T00:00:00.000000005Z");
	/* a duration is not an instant */
	ck_assert_ptr_null(json_object_get(v, "elapsed_at"));
	json_decref(v);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("summary");
	TCase *t = tcase_create("core");

	tcase_add_test(t, knob_changes_are_the_statements_text);
	tcase_add_test(t, resize_says_pages_moved_per_target);
	tcase_add_test(t, other_kinds_and_unknown_ones);
	tcase_add_test(t, long_text_is_cut_on_a_character_boundary);
	tcase_add_test(t, instants_get_their_text_at_every_depth);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
