/* mempolicyctl's NAME=VALUE parsing and value typing (client/kv.c, compiled in here: unit test
 * programs link the server library, not the client). */
#include <stdio.h>
#include <string.h>

#include "client/kv.c"
#include "tests/unit/check_main.h"

START_TEST(names)
{
	static const char *good[] = { "thp.enabled", "thp.size.2048kB.enabled", "a", "x_y-z.0" };
	static const char *bad[] = { "", "thp/enabled", "../x", "a b", "thp.enabled?x=1", "a%2F", "a=b",
				     "é" };
	char longname[200];
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		ck_assert_msg(kv_name_ok(good[i]), "rejected %s", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!kv_name_ok(bad[i]), "accepted %s", bad[i]);
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	ck_assert(!kv_name_ok(longname));
	longname[KV_NAME_MAX - 1] = '\0';
	ck_assert(kv_name_ok(longname));
}
END_TEST

START_TEST(values_are_typed_by_their_text)
{
	json_t *v;

	v = kv_value("4096");
	ck_assert(json_is_integer(v) && json_integer_value(v) == 4096);
	json_decref(v);
	v = kv_value("-1");
	ck_assert(json_is_integer(v) && json_integer_value(v) == -1);
	json_decref(v);
	v = kv_value("0");
	ck_assert(json_is_integer(v) && json_integer_value(v) == 0);
	json_decref(v);
	/* not decimal integers: strings, for the daemon to judge */
	static const char *str[] = { "madvise", "defer+madvise", "0x10", "1.5", "+5", " 5", "5 ", "1e3",
				     "99999999999999999999", "true", "../../x", "5\n" };
	for (size_t i = 0; i < sizeof str / sizeof str[0]; i++) {
		v = kv_value(str[i]);
		ck_assert_msg(json_is_string(v) && strcmp(json_string_value(v), str[i]) == 0, "%s", str[i]);
		json_decref(v);
	}
}
END_TEST

START_TEST(pairs)
{
	char name[KV_NAME_MAX], err[256];
	json_t *v;

	ck_assert_int_eq(kv_parse("thp.enabled=never", name, &v, err, sizeof err), 0);
	ck_assert_str_eq(name, "thp.enabled");
	ck_assert_str_eq(json_string_value(v), "never");
	json_decref(v);
	/* the first '=' splits; the rest belongs to the value */
	ck_assert_int_eq(kv_parse("a=b=c", name, &v, err, sizeof err), 0);
	ck_assert_str_eq(json_string_value(v), "b=c");
	json_decref(v);
	/* a path-like value is only a value: the daemon refuses it, it never becomes a path */
	ck_assert_int_eq(kv_parse("thp.enabled=../../x", name, &v, err, sizeof err), 0);
	ck_assert_str_eq(json_string_value(v), "../../x");
	json_decref(v);

	static const char *bad[] = { "thp.enabled", "=never", "thp.enabled=", "thp/enabled=x", "", "=" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		ck_assert_msg(kv_parse(bad[i], name, &v, err, sizeof err) == -1, "accepted '%s'", bad[i]);
		ck_assert_ptr_null(v);
		ck_assert(err[0] != '\0');
	}
}
END_TEST

START_TEST(all_pairs_keep_order_and_refuse_duplicates)
{
	char *ok[] = { "thp.enabled=never", "thp.khugepaged.pages_to_scan=2048", "thp.defrag=defer" };
	char *dup[] = { "thp.enabled=never", "thp.enabled=always" };
	char *badone[] = { "thp.enabled=never", "oops" };
	char err[256];
	json_t *o;
	const char *key;
	json_t *val;
	int i = 0;

	ck_assert_int_eq(kv_parse_all(ok, 3, &o, err, sizeof err), 0);
	json_object_foreach(o, key, val) {
		/* PATCH applies knobs in the order given: the object must keep it */
		ck_assert(strncmp(ok[i], key, strlen(key)) == 0 && ok[i][strlen(key)] == '=');
		i++;
	}
	ck_assert_int_eq(i, 3);
	ck_assert(json_is_integer(json_object_get(o, "thp.khugepaged.pages_to_scan")));
	json_decref(o);

	ck_assert_int_eq(kv_parse_all(dup, 2, &o, err, sizeof err), -1);
	ck_assert_ptr_null(o);
	ck_assert(strstr(err, "twice"));
	ck_assert_int_eq(kv_parse_all(badone, 2, &o, err, sizeof err), -1);
	ck_assert_ptr_null(o);
}
END_TEST

START_TEST(node_counts_are_taken_out_of_argv)
{
	char a0[] = "2M", a1[] = "--node", a2[] = "0=512", a3[] = "--batch", a4[] = "16", a5[] = "--node=3=8",
	     a6[] = "--", a7[] = "--node";
	char *argv[] = { a0, a1, a2, a3, a4, a5, a6, a7 };
	int argc = 8;
	char err[160];
	json_t *nodes = json_object();

	ck_assert_int_eq(kv_take_node_counts(&argc, argv, nodes, err, sizeof err), 0);
	/* What is left is for cli_args; "--node" after "--" is a positional argument. */
	ck_assert_int_eq(argc, 5);
	ck_assert_str_eq(argv[0], "2M");
	ck_assert_str_eq(argv[1], "--batch");
	ck_assert_str_eq(argv[2], "16");
	ck_assert_str_eq(argv[3], "--");
	ck_assert_str_eq(argv[4], "--node");
	ck_assert_int_eq(json_object_size(nodes), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(nodes, "0")), 512);
	ck_assert_int_eq(json_integer_value(json_object_get(nodes, "3")), 8);
	json_decref(nodes);
}
END_TEST

START_TEST(node_counts_refuse_malformed)
{
	static const char *bad[][2] = {
		{ "--node", NULL }, { "--node", "0" }, { "--node", "x=1" }, { "--node", "0=-1" },
		{ "--node", "0=1k" }, { "--node", "=5" }, { "--node", "0=" }, { "--node", "99999999999999999=1" },
		{ "--node", "0=9223372036854775808" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char b0[32], b1[32];
		char *argv[2] = { b0, b1 };
		int argc = bad[i][1] ? 2 : 1;
		char err[160] = "";
		json_t *nodes = json_object();
		snprintf(b0, sizeof b0, "%s", bad[i][0]);
		snprintf(b1, sizeof b1, "%s", bad[i][1] ? bad[i][1] : "");
		ck_assert_msg(kv_take_node_counts(&argc, argv, nodes, err, sizeof err) == -1, "accepted %s", b1);
		ck_assert(err[0]);
		json_decref(nodes);
	}
	char c0[] = "--node", c1[] = "1=2", c2[] = "--node=1=3";
	char *dup[] = { c0, c1, c2 };
	int argc = 3;
	char err[160];
	json_t *nodes = json_object();
	ck_assert_int_eq(kv_take_node_counts(&argc, dup, nodes, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "given twice"));
	json_decref(nodes);
}
END_TEST

/* Found by tests/fuzz/fuzz_kv: a value that is not UTF-8 was refused as "out of memory"; a node
 * spelled "07" (or "7\n") was sent under that key, which the daemon never looks up, and
 * "--node 7=1 --node 07=2" was not caught as the same node twice. */
START_TEST(fuzz_findings)
{
	char b0[] = "thp.enabled=\xff\xfe";
	char *bad[] = { b0 };
	char err[160] = "";
	json_t *o = NULL;
	ck_assert_int_eq(kv_parse_all(bad, 1, &o, err, sizeof err), -1);
	ck_assert_ptr_null(o);
	ck_assert_ptr_nonnull(strstr(err, "UTF-8"));

	char a0[] = "--node", a1[] = "07=5";
	char *argv[] = { a0, a1 };
	int argc = 2;
	json_t *nodes = json_object();
	ck_assert_int_eq(kv_take_node_counts(&argc, argv, nodes, err, sizeof err), 0);
	ck_assert_int_eq(json_object_size(nodes), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(nodes, "7")), 5);
	json_decref(nodes);

	char c0[] = "--node=7=1", c1[] = "--node=07=2";
	char *dup[] = { c0, c1 };
	argc = 2;
	nodes = json_object();
	ck_assert_int_eq(kv_take_node_counts(&argc, dup, nodes, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "given twice"));
	json_decref(nodes);

	char d0[] = "--node=1\n=2";
	char *nl[] = { d0 };
	argc = 1;
	nodes = json_object();
	ck_assert_int_eq(kv_take_node_counts(&argc, nl, nodes, err, sizeof err), -1);
	json_decref(nodes);
}
END_TEST

static Suite *kv_suite(void)
{
	Suite *s = suite_create("cli_kv");
	TCase *tc = tcase_create("kv");
	tcase_add_test(tc, names);
	tcase_add_test(tc, values_are_typed_by_their_text);
	tcase_add_test(tc, pairs);
	tcase_add_test(tc, all_pairs_keep_order_and_refuse_duplicates);
	tcase_add_test(tc, node_counts_are_taken_out_of_argv);
	tcase_add_test(tc, node_counts_refuse_malformed);
	tcase_add_test(tc, fuzz_findings);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(kv_suite)
