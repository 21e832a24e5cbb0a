/* mempolicyctl's NAME=VALUE parsing and value typing (client/kv.c, compiled in here: unit test
 * programs link the server library, not the client). */
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

static Suite *kv_suite(void)
{
	Suite *s = suite_create("cli_kv");
	TCase *tc = tcase_create("kv");
	tcase_add_test(tc, names);
	tcase_add_test(tc, values_are_typed_by_their_text);
	tcase_add_test(tc, pairs);
	tcase_add_test(tc, all_pairs_keep_order_and_refuse_duplicates);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(kv_suite)
