/* common/jtext.c: every value dumped must be, byte for byte, what json_dumps(JSON_COMPACT) makes
 * of it (answers and stored rows were jansson's text before, and a client or a test may compare
 * bytes), and it must fail wherever json_dumps fails. Trees are generated from a fixed seed:
 * strings with every byte class (escapes, controls, DEL, multi-byte UTF-8, NUL inside a
 * json_stringn), integers at both ends of the range, reals across the exponent range, empty and
 * nested containers, keys that need escaping. */
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/jtext.h"
#include "tests/unit/check_main.h"

static uint64_t seed = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, so a failure is the same tree again */
	seed ^= seed >> 12;
	seed ^= seed << 25;
	seed ^= seed >> 27;
	return seed * 0x2545f4914f6cdd1dull;
}

static size_t rnd_text(char *buf, size_t cap)
{
	static const char *const pieces[] = { "a", "Z", " ", "\"", "\\", "/", "\b", "\f", "\n", "\r", "\t", "\x01",
					      "\x1f", "\x7f", "\xc3\xa9", "\xe2\x86\x92", "\xf0\x9f\x98\x80",
					      "\xe2\x80\xa8", "madvise", "0123456789", "" };
	size_t n = 0, k = rnd() % 24;

	for (size_t i = 0; i < k; i++) {
		const char *p = pieces[rnd() % (sizeof pieces / sizeof pieces[0])];
		size_t l = strlen(p);
		if (rnd() % 29 == 0 && n + 1 < cap) {
			buf[n++] = '\0';   /* a NUL inside: json_stringn keeps it */
			continue;
		}
		if (n + l >= cap)
			break;
		memcpy(buf + n, p, l);
		n += l;
	}
	buf[n] = '\0';
	return n;
}

static double rnd_real(void)
{
	static const double fixed[] = { 0.0, -0.0, 0.1, 0.008, 1.0, -1.0, 1e17, 1.5e17, 123456789012345678.0, 1e-5,
					1e-4, 1e300, -1e-300, 5e-324, DBL_MAX, DBL_MIN, 1e21, 3.0e-7, 2.5, 100.0 };

	if (rnd() % 2)
		return fixed[rnd() % (sizeof fixed / sizeof fixed[0])];
	uint64_t bits = rnd();
	double d;
	memcpy(&d, &bits, sizeof d);
	return isfinite(d) ? d : 0.5;
}

static json_t *rnd_value(int depth)
{
	char text[128];
	size_t n;

	switch (rnd() % (depth > 6 ? 6 : 8)) {
	case 0: n = rnd_text(text, sizeof text); return json_stringn(text, n);
	case 1: {
		static const json_int_t ends[] = { 0, -1, 1, INT64_MIN, INT64_MAX, 1796173067870821719LL };
		return json_integer(rnd() % 2 ? ends[rnd() % 6] : (json_int_t)rnd());
	}
	case 2: return json_real(rnd_real());
	case 3: return json_true();
	case 4: return json_false();
	case 5: return json_null();
	case 6: {
		json_t *a = json_array();
		for (size_t i = rnd() % 6; i > 0; i--)
			json_array_append_new(a, rnd_value(depth + 1));
		return a;
	}
	default: {
		json_t *o = json_object();
		for (size_t i = rnd() % 6; i > 0; i--) {
			n = rnd_text(text, sizeof text);
			json_object_setn_new(o, text, n, rnd_value(depth + 1));
		}
		return o;
	}
	}
}

static void same_as_jansson(const json_t *v, size_t flags)
{
	char *want = json_dumps(v, flags), *got;
	size_t len = 0;

	got = jtext_dump(v, flags, &len);
	if (!want) {
		ck_assert_msg(!got, "json_dumps fails but jtext wrote %s", got);
		return;
	}
	ck_assert_msg(got != NULL, "jtext fails where json_dumps wrote %s", want);
	ck_assert_uint_eq(len, strlen(want));
	ck_assert_msg(!memcmp(got, want, len), "jtext %s\njansson %s", got, want);
	free(want);
	free(got);
}

START_TEST(generated_trees_are_dumped_as_jansson_does)
{
	for (int i = 0; i < 20000; i++) {
		json_t *v = rnd_value(0);
		same_as_jansson(v, JSON_COMPACT | JSON_ENCODE_ANY);
		same_as_jansson(v, JSON_COMPACT);   /* a scalar root fails both without ENCODE_ANY */
		json_decref(v);
	}
}
END_TEST

START_TEST(reals_are_written_as_jansson_writes_them)
{
	for (int i = 0; i < 200000; i++) {
		json_t *v = json_real(rnd_real());
		same_as_jansson(v, JSON_COMPACT | JSON_ENCODE_ANY);
		json_decref(v);
	}
}
END_TEST

/* What json_dumps refuses, jtext refuses: a string that is not UTF-8 (json_string_nocheck), a
 * cycle; and flags it does not implement. */
START_TEST(what_jansson_refuses_is_refused)
{
	json_t *o = json_object(), *a = json_array(), *b = json_array();

	json_object_set_new(o, "bad", json_string_nocheck("a\x80z"));
	ck_assert_ptr_null(json_dumps(o, JSON_COMPACT));
	ck_assert_ptr_null(jtext_dump(o, JSON_COMPACT, NULL));
	json_decref(o);

	/* A key that is not UTF-8 (json_object_set_new_nocheck): jansson 2.14 ignores its key's
	 * failure and writes text that is not JSON ({":true}); jtext refuses it instead. */
	o = json_object();
	json_object_set_new_nocheck(o, "\xc0\xaf", json_true());
	ck_assert_ptr_null(jtext_dump(o, JSON_COMPACT, NULL));
	json_decref(o);

	json_array_append(a, b);
	json_array_append(b, a);   /* a -> b -> a */
	ck_assert_ptr_null(json_dumps(a, JSON_COMPACT));
	ck_assert_ptr_null(jtext_dump(a, JSON_COMPACT, NULL));
	json_array_clear(b);       /* break the cycle so both are freed */
	json_decref(a);
	json_decref(b);

	a = json_array();
	ck_assert_ptr_null(jtext_dump(a, JSON_COMPACT | JSON_SORT_KEYS, NULL));
	ck_assert_ptr_null(jtext_dump(a, JSON_INDENT(2), NULL));
	ck_assert_ptr_null(jtext_dump(NULL, JSON_COMPACT | JSON_ENCODE_ANY, NULL));
	json_decref(a);
}
END_TEST

/* A DAG is not a cycle: the same object twice in a tree is written twice. */
START_TEST(a_value_shared_twice_is_written_twice)
{
	json_t *shared = json_pack("{s:i}", "n", 1), *o = json_object();

	json_object_set(o, "x", shared);
	json_object_set(o, "y", shared);
	same_as_jansson(o, JSON_COMPACT);
	json_decref(o);
	json_decref(shared);
}
END_TEST

/* The writer's string form used by list pages: not UTF-8 becomes the marker there, not a failure. */
START_TEST(jw_str_marks_text_that_is_not_utf8)
{
	struct jw w = { 0 };
	size_t len;
	char *t;

	jw_lit(&w, "[");
	jw_str(&w, "quote \" then \x80");
	jw_lit(&w, ",");
	jw_int(&w, INT64_MIN);
	jw_lit(&w, "]");
	t = jw_finish(&w, &len);
	ck_assert_str_eq(t, "[\"(not UTF-8)\",-9223372036854775808]");
	free(t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("jtext");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, generated_trees_are_dumped_as_jansson_does);
	tcase_add_test(tc, reals_are_written_as_jansson_writes_them);
	tcase_add_test(tc, what_jansson_refuses_is_refused);
	tcase_add_test(tc, a_value_shared_twice_is_written_twice);
	tcase_add_test(tc, jw_str_marks_text_that_is_not_utf8);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(suite)
