/* api/jsonw.c: the text a list page is written as must be what jansson would have dumped for the
 * same values (a client may compare bytes, and the pages were jansson's before), and a stored
 * text that is not UTF-8 must not break the page's syntax. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/jsonw.h"
#include "tests/unit/check_main.h"

static char *written(void (*fn)(struct jw *, const void *), const void *arg)
{
	struct jw w = { 0 };
	size_t len;
	char *t;

	fn(&w, arg);
	t = jw_finish(&w, &len);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(strlen(t), len);
	return t;
}

static void str_of(struct jw *w, const void *s)
{
	jw_str(w, s);
}

START_TEST(strings_are_escaped_as_jansson_does)
{
	static const char *const cases[] = {
		"", "plain", "quote \" and backslash \\", "tab\tnl\ncr\rbs\bff\f", "\x01\x1f ctl",
		"slash / stays", "madvise\xe2\x86\x92never", "emoji \xf0\x9f\x98\x80", "del \x7f",
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *v = json_string(cases[i]);
		char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY), *got = written(str_of, cases[i]);
		ck_assert_str_eq(got, want);
		free(want);
		free(got);
		json_decref(v);
	}
}
END_TEST

/* jw_str skips plain text eight bytes at a time: a byte to escape (or past ASCII) at any offset
 * of a word, in the first, a middle or the last word and in the bytes after the last whole one,
 * must still be escaped, and a string that is not UTF-8 still found, as jansson does. */
START_TEST(a_byte_to_escape_is_found_at_every_offset_of_a_word)
{
	static const char *const odd[] = { "\"", "\\", "\n", "\x1f", "\x7f", "\xc3\xa9", "\xe2\x86\x92", " ", "~" };
	char text[64];

	for (size_t len = 1; len < 40; len++)
		for (size_t at = 0; at < len; at++)
			for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
				size_t n = strlen(odd[i]);
				json_t *v;
				char *want, *got;

				memset(text, 'a', sizeof text);
				if (at + n > len)
					continue;
				memcpy(text + at, odd[i], n);
				text[len] = '\0';
				v = json_string(text);
				ck_assert_ptr_nonnull(v);
				want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
				got = written(str_of, text);
				ck_assert_msg(!strcmp(got, want), "len %zu at %zu case %zu: %s, want %s", len, at, i, got, want);
				free(want);
				free(got);
				json_decref(v);
			}
	/* A lone continuation byte after a whole word of plain text: the marker, not the byte. */
	{
		char *got = written(str_of, "abcdefgh\x80ijklmnop");
		ck_assert_str_eq(got, "\"(not UTF-8)\"");
		free(got);
	}
}
END_TEST

START_TEST(text_that_is_not_utf8_becomes_a_marker)
{
	/* a lone continuation byte, an overlong '/', a surrogate, a truncated sequence, one found
	 * after an escape and valid UTF-8 were written (the string is checked as it is written) */
	static const char *const cases[] = { "a\x80z", "\xc0\xaf", "\xed\xa0\x80", "cut \xe2\x86",
					     "tab\t\xe2\x86\x92 then \xc0\xaf" };

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = written(str_of, cases[i]);
		ck_assert_msg(json_string(cases[i]) == NULL, "jansson takes case %zu", i);
		ck_assert_str_eq(got, "\"(not UTF-8)\"");
		free(got);
	}
}
END_TEST

static void after_text(struct jw *w, const void *s)
{
	jw_lit(w, "[");
	jw_str(w, "kept");
	jw_lit(w, ",");
	jw_str(w, s);
	jw_lit(w, "]");
}

START_TEST(a_marker_replaces_only_its_own_string)
{
	char *got = written(after_text, "quote \" then \x80");

	ck_assert_str_eq(got, "[\"kept\",\"(not UTF-8)\"]");
	free(got);
}
END_TEST

static void mixed(struct jw *w, const void *arg)
{
	(void)arg;
	jw_lit(w, "{\"n\":");
	jw_int(w, INT64_MIN);
	jw_lit(w, ",\"m\":");
	jw_int_or_null(w, false, 5);
	jw_lit(w, ",\"a\":");
	jw_json_text(w, "{ \"b\" : [1, 2] }");
	jw_lit(w, ",\"bad\":");
	jw_json_text(w, "{not json");
	jw_lit(w, ",\"s\":");
	jw_str(w, NULL);
	jw_lit(w, ",\"t\":");
	jw_instant_at(w, true, 1796143302649146996LL);
	jw_lit(w, "}");
}

START_TEST(values_and_stored_json)
{
	char *got = written(mixed, NULL);
	ck_assert_str_eq(got, "{\"n\":-9223372036854775808,\"m\":null,\"a\":{\"b\":[1,2]},\"bad\":null,\"s\":null,"
			      "\"t\":\"2026-12-01T16:41:42.649146996Z\"}");
	free(got);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("jsonw");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, strings_are_escaped_as_jansson_does);
	tcase_add_test(tc, a_byte_to_escape_is_found_at_every_offset_of_a_word);
	tcase_add_test(tc, a_marker_replaces_only_its_own_string);
	tcase_add_test(tc, text_that_is_not_utf8_becomes_a_marker);
	tcase_add_test(tc, values_and_stored_json);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(suite)
