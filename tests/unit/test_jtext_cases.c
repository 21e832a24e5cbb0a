/* common/jtext.c as the store uses it (store/db.c's bind_json, the conditions' stored form): the
 * text a JSON column is stored as must be what json_dumps(JSON_COMPACT | JSON_ENCODE_ANY) made of
 * the same value before, byte for byte (GET /v1/jobs/ID, the history and the crash recovery read
 * those rows, and a row written by an older daemon sits beside a new one), and must fail where
 * json_dumps fails. Hand-picked cases and a stored profile.apply result; test_jtext.c has the
 * generated trees. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/jtext.h"
#include "tests/unit/check_main.h"

/* What bind_json stores. */
static char *store_json_text(const json_t *v)
{
	return jtext_dump(v, JSON_COMPACT | JSON_ENCODE_ANY, NULL);
}

static void same_as_jansson(json_t *v)
{
	char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY), *got = store_json_text(v);

	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(want);
	free(got);
	json_decref(v);
}

START_TEST(scalars_are_written_as_jansson_writes_them)
{
	static const double reals[] = { 0.0, -0.0, 1.0, 0.1, 1e300, -2.5e-300, 123456789012345678.0, 3.141592653589793,
					1.0 / 3, 1e21, 5e-324 };

	same_as_jansson(json_null());
	same_as_jansson(json_true());
	same_as_jansson(json_false());
	same_as_jansson(json_integer(0));
	same_as_jansson(json_integer(-1));
	same_as_jansson(json_integer(INT64_MAX));
	same_as_jansson(json_integer(INT64_MIN));
	same_as_jansson(json_integer(1796173503001896689LL));
	for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
		same_as_jansson(json_real(reals[i]));
}
END_TEST

/* Reals are printed here, not by jansson: every finite double's text must be jansson's. Random bit
 * patterns (every exponent, subnormals), and small integers and decimal fractions as measurements
 * give them. */
START_TEST(random_reals_are_written_as_jansson_writes_them)
{
	uint64_t x = 0x9E3779B97F4A7C15ull;

	for (int i = 0; i < 200000; i++) {
		double d;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(&d, &x, sizeof d);
		if (i % 4 == 1)
			d = (double)(int64_t)(x % 2000001) - 1000000.0;
		else if (i % 4 == 2)
			d = (double)(x % 100000) / 1000.0;
		if (d != d || d - d != 0)
			continue;   /* NaN and the infinities: json_real refuses them */
		same_as_jansson(json_real(d));
	}
}
END_TEST

START_TEST(strings_are_escaped_as_jansson_escapes_them)
{
	static const char *const cases[] = {
		"", "plain", "quote \" and backslash \\", "tab\tnl\ncr\rbs\bff\f", "\x01\x1f ctl", "slash / stays",
		"madvise\xe2\x86\x92never", "emoji \xf0\x9f\x98\x80", "del \x7f", "\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf",
		"\xf4\x8f\xbf\xbf end",
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		same_as_jansson(json_string(cases[i]));
	/* A NUL inside a string (json_stringn) and in a key (json_object_setn) */
	same_as_jansson(json_stringn("a\0b", 3));
	json_t *o = json_object();
	json_object_setn_new(o, "k\0\"ey\n", 6, json_integer(1));
	same_as_jansson(o);
}
END_TEST

START_TEST(containers_keep_their_order)
{
	json_t *v = json_pack("{s:[], s:{}, s:[i, s, [[]], {s:n}], s:{s:b, s:f, s:o}}", "empty", "none", "mixed", 1, "x",
			      "k", "nested", "t", 1, "r", 0.5, "deep", json_pack("{s:[i,i]}", "z", 1, 2));
	json_t *a = json_array();

	/* keys in insertion order, not sorted (z before a) */
	json_object_set_new(v, "z", json_integer(1));
	json_object_set_new(v, "a", json_integer(2));
	same_as_jansson(v);
	for (int i = 0; i < 300; i++)   /* past the first buffer's size */
		json_array_append_new(a, json_string("a fairly long string to make the text grow past 2 kB"));
	same_as_jansson(a);
}
END_TEST

/* A stored profile.apply result as the apply builds it (tests/unit/fixtures/profile_result.json is
 * one taken from a daemon's database). */
START_TEST(a_stored_result_is_the_same_text)
{
	json_error_t err;
	json_t *v = json_load_file(MPD_SRCDIR "/tests/unit/fixtures/profile_result.json", 0, &err);

	ck_assert_msg(v != NULL, "%s", err.text);
	same_as_jansson(v);
}
END_TEST

START_TEST(what_jansson_refuses_is_refused)
{
	/* not UTF-8: a lone continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short */
	static const char *const bad[] = { "\x80", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ab\xe2\x86" };

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		json_t *s = json_stringn_nocheck(bad[i], strlen(bad[i]));
		json_t *o = json_pack("{s:[O]}", "k", s);

		ck_assert_ptr_null(json_dumps(s, JSON_COMPACT | JSON_ENCODE_ANY));
		ck_assert_ptr_null(store_json_text(s));
		ck_assert_ptr_null(store_json_text(o));
		json_decref(o);
		json_decref(s);
	}
	ck_assert_ptr_null(store_json_text(NULL));
	/* a value that holds itself: jansson finds the loop, the depth bound stops here */
	json_t *loop = json_array(), *in = json_pack("{s:O}", "back", loop);
	ck_assert_int_eq(json_array_append(loop, in), 0);
	ck_assert_ptr_null(json_dumps(loop, JSON_COMPACT));
	ck_assert_ptr_null(store_json_text(loop));
	json_array_clear(loop);   /* the loop broken, both are freed */
	json_decref(in);
	json_decref(loop);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("jtext_cases");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);   /* 200,000 reals: seconds under a sanitizer on a busy machine */
	tcase_add_test(tc, scalars_are_written_as_jansson_writes_them);
	tcase_add_test(tc, random_reals_are_written_as_jansson_writes_them);
	tcase_add_test(tc, strings_are_escaped_as_jansson_escapes_them);
	tcase_add_test(tc, containers_keep_their_order);
	tcase_add_test(tc, a_stored_result_is_the_same_text);
	tcase_add_test(tc, what_jansson_refuses_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(suite)
