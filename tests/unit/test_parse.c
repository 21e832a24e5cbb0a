/* The strict parsers every untrusted string goes through. */
#include <errno.h>
#include <string.h>

#include "common/parse.h"
#include "tests/unit/check_main.h"

START_TEST(u64_accepts_plain_and_one_newline)
{
	uint64_t v;
	ck_assert_int_eq(parse_u64("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(parse_u64("4096\n", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(parse_u64("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
}
END_TEST

START_TEST(u64_rejects_what_strtoul_would_take)
{
	static const char *bad[] = { "", "\n", "-1", "+5", " 5", "5 ", "5x", "0x10", "1e3", "5\n\n",
				     "18446744073709551616", "99999999999999999999999" };
	uint64_t v = 7;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_msg(parse_u64(bad[i], &v) == -1, "accepted '%s'", bad[i]);
		ck_assert_uint_eq(v, 7);
	}
	parse_u64("18446744073709551616", &v);
	ck_assert_int_eq(errno, ERANGE);
}
END_TEST

/* A client's number has one spelling: what parse_u64 forgives in kernel text (a leading zero, a
 * trailing newline) is refused, and what it refuses stays refused. */
START_TEST(canonical_u64_has_one_spelling)
{
	static const char *bad[] = { "01", "00", "00012", "0001", "1\n", "0\n", "", "+1", "-1", " 1", "1 ",
				     "\t1", "0x1", "1e3" };
	uint64_t v = 7;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		errno = 0;
		ck_assert_msg(parse_u64_canonical(bad[i], &v) == -1 && errno == EINVAL, "accepted '%s'", bad[i]);
		ck_assert_uint_eq(v, 7);
	}
	ck_assert_int_eq(parse_u64_canonical("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(parse_u64_canonical("12", &v), 0);
	ck_assert_uint_eq(v, 12);
	ck_assert_int_eq(parse_u64_canonical("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(parse_u64_canonical("18446744073709551616", &v), -1);
	ck_assert_int_eq(errno, ERANGE);
}
END_TEST

START_TEST(i64_signs_and_limits)
{
	int64_t v;
	ck_assert_int_eq(parse_i64("-9223372036854775808", &v), 0);
	ck_assert(v == INT64_MIN);
	ck_assert_int_eq(parse_i64("9223372036854775807", &v), 0);
	ck_assert(v == INT64_MAX);
	ck_assert_int_eq(parse_i64("9223372036854775808", &v), -1);
	ck_assert_int_eq(parse_i64("--1", &v), -1);
	ck_assert_int_eq(parse_i64("-", &v), -1);
}
END_TEST

START_TEST(idset_kernel_lists)
{
	idset s;
	char buf[64];
	ck_assert_int_eq(idset_parse("0-3,8,10-11\n", &s), 0);
	ck_assert_uint_eq(idset_count(&s), 7);
	ck_assert(idset_has(&s, 3) && idset_has(&s, 8) && !idset_has(&s, 9));
	ck_assert_int_gt(idset_format(&s, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "0-3,8,10-11");
	/* A CPU-less node has an empty cpulist file. */
	ck_assert_int_eq(idset_parse("\n", &s), 0);
	ck_assert_uint_eq(idset_count(&s), 0);
	ck_assert_int_eq(idset_format(&s, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(idset_rejects_malformed)
{
	static const char *bad[] = { "3-1", "1,", ",1", "1--2", "a", "1 2", "-1", "4096", "0-4096", "1,,2" };
	idset s;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(idset_parse(bad[i], &s) == -1, "accepted '%s'", bad[i]);
}
END_TEST

START_TEST(idset_client_lists)
{
	/* The refusals issue 8 names, and what kernel text may have but a client may not. */
	static const char *bad[] = { "", "\n", "0\n", "0-", "3-1", "1,,2", "99999999999999999999", "4096",
				     "-1", "+1", " 1", "1 ", "0x1", "1-2-3", "0,", ",0", "a", "1%00" };
	idset s;
	char buf[64];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(idset_parse_client(bad[i], &s) == -1, "accepted '%s'", bad[i]);
	ck_assert_int_eq(idset_parse_client("0-1,3", &s), 0);
	idset_format(&s, buf, sizeof buf);
	ck_assert_str_eq(buf, "0-1,3");
	ck_assert_int_eq(idset_parse_client("4095", &s), 0);
	ck_assert(idset_has(&s, 4095));
}
END_TEST

/* The walk visits exactly the members, in order, across word boundaries and up to the last id. */
START_TEST(idset_next_walks_the_members)
{
	idset s;
	unsigned want[] = { 0, 63, 64, 65, 200, IDSET_MAX - 1 }, got = 0;

	idset_clear(&s);
	ck_assert_int_eq(idset_next(&s, 0), -1);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		idset_add(&s, want[i]);
	for (int id = idset_next(&s, 0); id >= 0; id = idset_next(&s, (unsigned)id + 1)) {
		ck_assert_uint_lt(got, sizeof want / sizeof want[0]);
		ck_assert_int_eq(id, (int)want[got++]);
	}
	ck_assert_uint_eq(got, sizeof want / sizeof want[0]);
	ck_assert_int_eq(idset_next(&s, 66), 200);
	ck_assert_int_eq(idset_next(&s, IDSET_MAX), -1);
}
END_TEST

START_TEST(idset_format_too_small)
{
	idset s;
	char buf[4];
	idset_parse("100,200", &s);
	ck_assert_int_eq(idset_format(&s, buf, sizeof buf), -1);
}
END_TEST

START_TEST(sizes_all_spellings)
{
	static const struct { const char *in; uint64_t kb; } ok[] = {
		{ "2M", 2048 }, { "2m", 2048 }, { "2MB", 2048 }, { "2048kB", 2048 }, { "2048k", 2048 },
		{ "2097152", 2048 }, { "1G", 1048576 }, { "1GB", 1048576 }, { "64kB", 64 },
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		uint64_t kb = 0;
		ck_assert_msg(parse_size_kb(ok[i].in, &kb) == 0, "rejected %s", ok[i].in);
		ck_assert_uint_eq(kb, ok[i].kb);
	}
	static const char *bad[] = { "", "M", "2T", "0M", "2.5M", "-2M", "2 M", "1000", "2Mx", "../2M" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		uint64_t kb;
		ck_assert_msg(parse_size_kb(bad[i], &kb) == -1, "accepted '%s'", bad[i]);
	}
}
END_TEST

START_TEST(size_formatting)
{
	char b[32];
	format_size_kb(2048, b, sizeof b);
	ck_assert_str_eq(b, "2M");
	format_size_kb(1048576, b, sizeof b);
	ck_assert_str_eq(b, "1G");
	format_size_kb(64, b, sizeof b);
	ck_assert_str_eq(b, "64kB");
	format_size_kb(1536, b, sizeof b);
	ck_assert_str_eq(b, "1536kB");
}
END_TEST

START_TEST(bracket_lists)
{
	char t1[] = "always [madvise] never\n";
	const char *o[8];
	int sel;
	ck_assert_int_eq(parse_bracket_list(t1, o, 8, &sel), 3);
	ck_assert_int_eq(sel, 1);
	ck_assert_str_eq(o[0], "always");
	ck_assert_str_eq(o[1], "madvise");
	ck_assert_str_eq(o[2], "never");

	/* One 6.11 draft bracketed two entries: the first wins. */
	char t2[] = "always within_size advise [never] [deny] force";
	ck_assert_int_eq(parse_bracket_list(t2, o, 8, &sel), 6);
	ck_assert_str_eq(o[sel], "never");
	ck_assert_str_eq(o[4], "deny");

	char t3[] = "always madvise never";
	ck_assert_int_eq(parse_bracket_list(t3, o, 8, &sel), -1);
	char t4[] = "always [madvise never";
	ck_assert_int_eq(parse_bracket_list(t4, o, 8, &sel), -1);
	char t5[] = "[]";
	ck_assert_int_eq(parse_bracket_list(t5, o, 8, &sel), -1);
	char t6[] = "a [b] c d e";
	ck_assert_int_eq(parse_bracket_list(t6, o, 3, &sel), -1);
}
END_TEST

/* Found by tests/fuzz/fuzz_parse: a number with more than 20 digits was refused as out of range
 * even when leading zeros made it small. */
START_TEST(long_leading_zeros_are_still_small)
{
	uint64_t v = 0, kb = 0;
	int64_t i = 0;
	ck_assert_int_eq(parse_u64("0000000000000000000000000001", &v), 0);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(parse_u64("0000000000000018446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(parse_u64("0000000000000018446744073709551616", &v), -1);
	ck_assert_int_eq(errno, ERANGE);
	ck_assert_int_eq(parse_i64("-00000000000000000000009", &i), 0);
	ck_assert(i == -9);
	ck_assert_int_eq(parse_size_kb("000000000000000000000000000000000002M", &kb), 0);
	ck_assert_uint_eq(kb, 2048);
	ck_assert_int_eq(parse_size_kb("100000000000000000000000000000000000M", &kb), -1);
}
END_TEST

/* Found by tests/fuzz/fuzz_knobs: "999...9'9" was ERANGE (the overflow was seen before the quote),
 * so a knob answered 422 "out of range" for text that is no number; ERANGE is for numbers only. */
START_TEST(not_a_number_is_einval_however_long)
{
	uint64_t v;
	errno = 0;
	ck_assert_int_eq(parse_u64("999999999999999999999'9", &v), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(parse_u64("99999999999999999999999x", &v), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(parse_u64("99999999999999999999999\n", &v), -1);
	ck_assert_int_eq(errno, ERANGE);
}
END_TEST

/* Found by tests/fuzz/fuzz_parse: a bracket inside a bracketed entry was kept in the option. */
START_TEST(bracket_inside_selected_entry)
{
	const char *o[8];
	int sel;
	char t1[] = "[[]";
	ck_assert_int_eq(parse_bracket_list(t1, o, 8, &sel), -1);
	char t2[] = "always [[madvise]] never";
	ck_assert_int_eq(parse_bracket_list(t2, o, 8, &sel), -1);
	char t3[] = "a [b]]";
	ck_assert_int_eq(parse_bracket_list(t3, o, 8, &sel), -1);
}
END_TEST

static Suite *parse_suite(void)
{
	Suite *s = suite_create("parse");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, u64_accepts_plain_and_one_newline);
	tcase_add_test(tc, u64_rejects_what_strtoul_would_take);
	tcase_add_test(tc, i64_signs_and_limits);
	tcase_add_test(tc, idset_kernel_lists);
	tcase_add_test(tc, idset_rejects_malformed);
	tcase_add_test(tc, idset_client_lists);
	tcase_add_test(tc, idset_next_walks_the_members);
	tcase_add_test(tc, idset_format_too_small);
	tcase_add_test(tc, sizes_all_spellings);
	tcase_add_test(tc, size_formatting);
	tcase_add_test(tc, bracket_lists);
	tcase_add_test(tc, bracket_inside_selected_entry);
	tcase_add_test(tc, long_leading_zeros_are_still_small);
	tcase_add_test(tc, canonical_u64_has_one_spelling);
	tcase_add_test(tc, not_a_number_is_einval_however_long);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(parse_suite)
