/* history compare's ids (ops/compare.c compare_parse_ids): columns by commas, a column's runs by
 * colons, the bounds, and what is refused. */
#include <stdio.h>
#include <string.h>

#include "server/ops/compare.h"
#include "tests/unit/check_main.h"

static void refused(const char *s)
{
	struct compare_cols cc;
	mp_err e = { 0 };

	ck_assert_msg(compare_parse_ids(s, &cc, &e) == -1, "'%.60s' accepted", s);
	ck_assert_int_eq(e.code, MPE_REQUEST_BAD_QUERY);
}

START_TEST(columns_and_runs)
{
	struct compare_cols cc;
	mp_err e = { 0 };

	ck_assert_int_eq(compare_parse_ids("12,15,19", &cc, &e), 0);
	ck_assert_int_eq(cc.ncols, 3);
	ck_assert_int_eq(cc.nids, 3);
	ck_assert(cc.ids[2] == 19 && cc.col[2] == 2);
	ck_assert_int_eq(compare_parse_ids("12:14:16,13:15:17", &cc, &e), 0);
	ck_assert_int_eq(cc.ncols, 2);
	ck_assert_int_eq(cc.nids, 6);
	ck_assert(cc.ids[3] == 13 && cc.col[2] == 0 && cc.col[3] == 1);
	ck_assert_int_eq(compare_parse_ids("1:2,3", &cc, &e), 0);
	ck_assert(cc.nids == 3 && cc.ncols == 2);
}
END_TEST

START_TEST(bounds_and_refusals)
{
	char s[4096];
	struct compare_cols cc;
	mp_err e = { 0 };
	size_t off = 0;

	/* 256 ids in two columns is the most; one more is refused */
	for (int i = 1; i <= 256; i++)
		off += (size_t)snprintf(s + off, sizeof s - off, "%s%d", i == 1 ? "" : i == 129 ? "," : ":", i);
	ck_assert_int_eq(compare_parse_ids(s, &cc, &e), 0);
	ck_assert(cc.nids == 256 && cc.ncols == 2);
	snprintf(s + off, sizeof s - off, ":999");
	refused(s);
	/* 16 columns is the most */
	ck_assert_int_eq(compare_parse_ids("1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", &cc, &e), 0);
	refused("1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17");
	static const char *const bad[] = { "", "1", "1:2", "1,", ",1", "1,,2", "1:,2", ":1,2", "1::2,3", "1,2:",
					   "0,1", "-1,2", "1,x", "1:2,1", "1,1", "1,9223372036854775808",
					   "1,2 ", "1;2", "1,123456789012345678901234" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		refused(bad[i]);
	ck_assert_int_eq(compare_parse_ids("1,9223372036854775807", &cc, &e), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("compare");
	TCase *tc = tcase_create("ids");

	tcase_add_test(tc, columns_and_runs);
	tcase_add_test(tc, bounds_and_refusals);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(suite)
