/* mempolicyctl's tables (client/out.c, compiled in here: unit test programs link the server
 * library, not the client). Run under ASan (make SAN=1): a read past a buffer is a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/out.c"
#include "tests/unit/check_main.h"

/* table_row takes one vararg per column, however many columns the table has: a table wider than
 * any fixed bound still gets every cell, the last one included. */
START_TEST(table_row_takes_every_column)
{
	enum { N = 20 };
	const char *hdr[N];
	char names[N][16], *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	struct table *t;

	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof names[i], "H%d", i);
		hdr[i] = names[i];
	}
	t = table_new(N, hdr);
	table_row(t, "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11", "a12", "a13", "a14",
		  "a15", "a16", "a17", "a18", "last");
	table_print(t, f);
	fclose(f);
	ck_assert_msg(strstr(out, "a16  a17  a18  last\n") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "H19\n") != NULL, "%s", out);
	free(out);
}
END_TEST

START_TEST(table_row_of_a_narrow_table)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	struct table *t = table_new(2, NULL);

	table_row(t, "key", NULL);
	table_print(t, f);
	fclose(f);
	ck_assert_str_eq(out, "key  -\n");
	free(out);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cli_out");
	TCase *tc = tcase_create("table");
	tcase_add_test(tc, table_row_takes_every_column);
	tcase_add_test(tc, table_row_of_a_narrow_table);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(suite)
