/* mempolicyctl's option parser and help (client/args.c, compiled in with kv.c and query.c):
 * options go where their declaration says, numbers are checked with the strict parser (leading
 * zeros allowed, however many), and --help lists exactly the declared options. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/args.c"
#include "client/kv.c"
#include "client/query.c"
#include "tests/unit/check_main.h"

static const struct opt opts[] = {
	{ "--kind", "K", "only this kind", OPT_TEXT_IN(kind), 0, "-k" },
	{ "--limit", "N", "at most N", OPT_NUM_IN(limit, 1), 0, NULL },
	{ "--total", "N", "pages in all, or", OPT_NUM_IN(total, 0), OPT_EITHER, NULL },
	{ "--node", "N=COUNT", "pages on node N", OPT_NODE_COUNTS_IN(), 0, NULL },
	{ "--count", "K", "how many\nsecond line", OPT_NUM_IN(count, 1), OPT_REQUIRED, NULL },
	{ "--wait", NULL, "wait", OPT_FLAG_IN(wait), 0, "-w" },
	{ NULL, NULL, NULL, OPT_TEXT, 0, 0, 0, NULL },
};
static const struct command cmd = { "grp", "sub", NULL, "ID", 1, opts, "a test command", "Notes." };

/* Parses a NULL-terminated list of words; returns the exit code of cli_args. */
static int parse(struct args *a, const char *const *words)
{
	static char store[16][4096];
	static char *argv[16];
	struct cli c = { .socket = "sock", .json = false };
	int argc = 0;

	for (; words[argc]; argc++) {
		snprintf(store[argc], sizeof store[argc], "%s", words[argc]);
		argv[argc] = store[argc];
	}
	return cli_args(&c, &cmd, argc, argv, a);
}

/* numactl's way: "-k x", "-kx", a short flag; and for a command whose positionals are verbatim
 * ("[--] CMD"), options stop at the first positional and the usage line shows them first. */
START_TEST(short_options_and_verbatim_positionals)
{
	static const struct command run = { "run", "", NULL, "[--] CMD [ARGS...]", -1, opts, "run", NULL };
	static char w[][8] = { "-kx", "-w", "-k", "y", "sh", "-c", "-k" };
	char *argv[] = { w[0], w[1], w[2], w[3], w[4], w[5], w[6] };
	struct cli c = { .socket = "sock", .json = false };
	struct args a;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	ck_assert_int_eq(cli_args(&c, &run, 2, argv, &a), EXIT_OK);
	ck_assert_str_eq(a.kind, "x");
	ck_assert(a.wait);
	cli_args_free(&a);
	ck_assert_int_eq(cli_args(&c, &run, 7, argv + 0, &a), EXIT_OK);
	ck_assert_str_eq(a.kind, "y");   /* the last -k before CMD; the one after is CMD's */
	ck_assert_int_eq(a.npos, 3);
	ck_assert_str_eq(a.pos[0], "sh");
	ck_assert_str_eq(a.pos[2], "-k");
	cli_args_free(&a);
	ck_assert_int_eq(cli_args(&c, &run, 1, argv + 2, &a), EXIT_USAGE);   /* -k without its value */
	cli_args_free(&a);

	f = open_memstream(&out, &len);
	cli_print_usage_args(f, &run);
	fclose(f);
	ck_assert_msg(strncmp(out, "[--kind K]", 10) == 0, "%s", out);
	ck_assert_msg(strstr(out, "[--wait] [--] CMD [ARGS...]") != NULL, "%s", out);
	free(out);
	out = NULL;
	f = open_memstream(&out, &len);
	cli_command_help(f, &run);
	fclose(f);
	ck_assert_msg(strstr(out, "  -k, --kind K") != NULL, "%s", out);
	free(out);
}
END_TEST

START_TEST(options_go_where_declared)
{
	struct args a;
	ck_assert_int_eq(parse(&a, (const char *const[]){ "7", "--kind=x", "--limit", "3", "--node", "1=4", "--wait",
							  NULL }), EXIT_OK);
	ck_assert_str_eq(a.kind, "x");
	ck_assert(a.limit.set && a.limit.v == 3);
	ck_assert(!a.total.set && !a.count.set);
	ck_assert(a.wait);
	ck_assert_int_eq(json_integer_value(json_object_get(a.nodes, "1")), 4);
	ck_assert_int_eq(a.npos, 1);
	ck_assert_str_eq(a.pos[0], "7");
	cli_args_free(&a);

	/* not declared: refused, as are a second positional and a missing value */
	ck_assert_int_eq(parse(&a, (const char *const[]){ "--status", "ok", NULL }), EXIT_USAGE);
	cli_args_free(&a);
	ck_assert_int_eq(parse(&a, (const char *const[]){ "1", "2", NULL }), EXIT_USAGE);
	cli_args_free(&a);
	ck_assert_int_eq(parse(&a, (const char *const[]){ "--limit", NULL }), EXIT_USAGE);
	cli_args_free(&a);
}
END_TEST

START_TEST(numbers_are_strict_and_leading_zeros_harmless)
{
	static char zeros[4000];
	struct args a;

	/* 300 and 3000 leading zeros are the number they spell, not a longer request */
	for (size_t n = 300; n <= 3000; n += 2700) {
		memset(zeros, '0', n);
		snprintf(zeros + n, sizeof zeros - n, "5");
		ck_assert_int_eq(parse(&a, (const char *const[]){ "--limit", zeros, "--count", zeros, NULL }), EXIT_OK);
		ck_assert_uint_eq(a.limit.v, 5);
		ck_assert_uint_eq(a.count.v, 5);
		cli_args_free(&a);
	}
	static const char *const bad[] = { "0", "-1", "+1", " 1", "1 ", "0x10", "1.5", "", "1\n",
					   "9223372036854775808", "99999999999999999999999" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_msg(parse(&a, (const char *const[]){ "--limit", bad[i], NULL }) == EXIT_USAGE, "took '%s'",
			      bad[i]);
		cli_args_free(&a);
	}
	/* the minimum is the declaration's: --total takes 0 */
	ck_assert_int_eq(parse(&a, (const char *const[]){ "--total", "0", NULL }), EXIT_OK);
	ck_assert(a.total.set && a.total.v == 0);
	cli_args_free(&a);
	ck_assert_int_eq(parse(&a, (const char *const[]){ "--limit", "9223372036854775807", NULL }), EXIT_OK);
	cli_args_free(&a);
}
END_TEST

START_TEST(help_and_usage_come_from_the_declaration)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cli_command_help(f, &cmd);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "usage: mempolicyctl [--socket PATH] [--json] grp sub ID [--kind K] "
				     "[--limit N] (--total N | --node N=COUNT...) --count K [--wait]\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\na test command.\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\n  -k, --kind K   only this kind\n"));   /* the short alias first */
	ck_assert_ptr_nonnull(strstr(buf, "\n  --node N=COUNT pages on node N\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\n  --count K      how many\n                 second line\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\n  -w, --wait     wait\nNotes.\n"));
	ck_assert_ptr_nonnull(strstr(buf, "3 daemon unreachable"));
	free(buf);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cli_args");
	TCase *t = tcase_create("args");
	tcase_add_test(t, options_go_where_declared);
	tcase_add_test(t, short_options_and_verbatim_positionals);
	tcase_add_test(t, numbers_are_strict_and_leading_zeros_harmless);
	tcase_add_test(t, help_and_usage_come_from_the_declaration);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
