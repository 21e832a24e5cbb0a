/* The option parser, the usage line and per-command --help, all three driven by the options each
 * command declares in the command table (client/commands.c), so they cannot disagree. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli.h"
#include "client/kv.h"
#include "client/query.h"
#include "common/parse.h"

/* The width of the option column in --help: "--node N=COUNT" and a space. */
#define HELP_COL 15

const char cli_exit_codes[] =
	"Exit codes: 0 success, 1 the daemon refused or the operation failed, 2 usage error,\n"
	"            3 daemon unreachable. Results go to stdout, errors to stderr.\n";

static void print_opt_usage(FILE *f, const struct opt *o)
{
	fprintf(f, "%s%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "",
		o->kind == OPT_NODE_COUNTS || o->kind == OPT_LIST ? "..." : "");
}

void cli_print_usage_args(FILE *f, const struct command *cmd)
{
	const char *sep = "";
	/* Options end at "-- CMD" (run): the usage line says them first, as they must be given. */
	bool last = CLI_VERBATIM_POS(cmd);

	if (cmd->positional[0] && !last) {
		fputs(cmd->positional, f);
		sep = " ";
	}
	for (const struct opt *o = cmd->opts; o && o->name; o++, sep = " ") {
		fputs(sep, f);
		if ((o->show & OPT_EITHER) && o[1].name) {
			fputc('(', f);
			print_opt_usage(f, o);
			fputs(" | ", f);
			print_opt_usage(f, ++o);
			fputc(')', f);
		} else if (o->show & OPT_REQUIRED) {
			print_opt_usage(f, o);
		} else {
			fputc('[', f);
			print_opt_usage(f, o);
			fputc(']', f);
		}
	}
	if (cmd->positional[0] && last)
		fprintf(f, "%s%s", sep, cmd->positional);
}

static void print_words(FILE *f, const struct command *cmd)
{
	fprintf(f, "%s%s%s", cmd->group, cmd->name[0] ? " " : "", cmd->name);
	if (cmd->positional[0] || (cmd->opts && cmd->opts[0].name))
		fputc(' ', f);
	cli_print_usage_args(f, cmd);
	fputc('\n', f);
}

void cli_command_help(FILE *f, const struct command *cmd)
{
	fputs("usage: mempolicyctl [--socket PATH] [--json] ", f);
	print_words(f, cmd);
	fprintf(f, "\n%s.\n", cmd->summary);
	if ((cmd->opts && cmd->opts[0].name) || cmd->notes)
		fputc('\n', f);
	for (const struct opt *o = cmd->opts; o && o->name; o++) {
		char left[64];
		const char *line = o->help, *nl;
		snprintf(left, sizeof left, "%s%s%s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "", o->name,
			 o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "  %-*s ", HELP_COL - 1, left);
		/* Continuation lines of a long help line stay in the help column. */
		while ((nl = strchr(line, '\n'))) {
			fprintf(f, "%.*s\n%*s", (int)(nl - line), line, HELP_COL + 2, "");
			line = nl + 1;
		}
		fprintf(f, "%s\n", line);
	}
	if (cmd->notes)
		fprintf(f, "%s\n", cmd->notes);
	fprintf(f, "\n%s", cli_exit_codes);
}

int cli_usage_error(const struct command *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("mempolicyctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cmd) {
		fputs("usage: mempolicyctl ", stderr);
		print_words(stderr, cmd);
	} else {
		fputs("Try 'mempolicyctl --help'.\n", stderr);
	}
	return EXIT_USAGE;
}

/* parse_u64 also takes one trailing newline (it reads kernel files); a number typed on a command
 * line never means one. The upper bound is what a JSON integer of the daemon holds. */
static int number(const char *text, uint64_t min, uint64_t *v)
{
	if (strchr(text, '\n') || parse_u64(text, v) < 0 || *v < min || *v > (uint64_t)INT64_MAX)
		return -1;
	return 0;
}

int cli_id(const struct command *cmd, const char *what, const char *text, uint64_t *id)
{
	if (!text)   /* the positional was not given: the table bounds how many, not how few */
		return cli_usage_error(cmd, "give %s", what);
	if (number(text, 1, id) < 0)
		return cli_usage_error(cmd, "%s is a positive integer, not '%s'", what, text);
	return EXIT_OK;
}

int cli_path(const struct command *cmd, const struct query *q, const char **path)
{
	if (!(*path = query_path(q)))
		return cli_usage_error(cmd, "the arguments make a request path longer than %d bytes; "
				       "nothing was sent", QUERY_MAX);
	return EXIT_OK;
}

/* "--name=value" or "--name value"; returns 1 if argv[*i] is the option (value in *val), 0 if not,
 * -1 if its value is missing. */
static int take_value(const char *name, int argc, char **argv, int *i, const char **val)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return 0;
	if (argv[*i][n] == '=') {
		*val = argv[*i] + n + 1;
		return 1;
	}
	if (argv[*i][n] != '\0')
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*val = argv[++*i];
	return 1;
}

/* A short option as getopt takes it: "-m VALUE" or "-mVALUE". 1 with *val, 0 when argv[*i] is not
 * it, -1 when its value is missing. */
static int take_short(const char *alias, int argc, char **argv, int *i, const char **val)
{
	size_t n = strlen(alias);

	if (strncmp(argv[*i], alias, n) != 0)
		return 0;
	if (argv[*i][n] != '\0') {
		*val = argv[*i] + n;
		return 1;
	}
	if (*i + 1 >= argc)
		return -1;
	*val = argv[++*i];
	return 1;
}

/* Stores the value of option o (text in val) into the field of a its declaration names.
 * EXIT_OK or EXIT_USAGE. */
static int store(const struct command *cmd, const struct opt *o, const char *val, struct args *a)
{
	char *field = (char *)a + o->field;   /* borrowed: inside a */
	struct num *n;

	switch (o->kind) {
	case OPT_TEXT:
		*(const char **)field = val;
		break;
	case OPT_NUM:
		n = (struct num *)field;
		if (number(val, o->min, &n->v) < 0)
			return cli_usage_error(cmd, "%s wants a %s integer, not '%s'", o->name,
					       o->min ? "positive" : "non-negative", val);
		n->set = true;
		break;
	case OPT_FLAG:
		*(bool *)field = true;
		break;
	case OPT_NODE_COUNTS:   /* taken out of argv before the loop */
		break;
	case OPT_LIST:
		if (!*(json_t **)field && !(*(json_t **)field = json_array()))
			return cli_usage_error(cmd, "out of memory");
		if (json_array_append_new(*(json_t **)field, json_string(val)) < 0)
			return cli_usage_error(cmd, "%s: '%.64s' is not UTF-8 text", o->name, val);
		break;
	}
	return EXIT_OK;
}

void cli_args_free(struct args *a)
{
	free(a->pos);
	json_decref(a->nodes);
	json_decref(a->arms);
	memset(a, 0, sizeof *a);
}

/* The repeatable --node N=COUNT is taken out of argv first (kv_take_node_counts), so the loop
 * below sees only options that occur once. */
static int take_node_counts(const struct command *cmd, int *argc, char **argv, struct args *a)
{
	char err[160];

	for (const struct opt *o = cmd->opts; o && o->name; o++) {
		if (o->kind != OPT_NODE_COUNTS)
			continue;
		if (!(a->nodes = json_object()))
			return cli_usage_error(cmd, "out of memory");
		if (kv_take_node_counts(argc, argv, a->nodes, err, sizeof err) < 0)
			return cli_usage_error(cmd, "%s", err);
	}
	return EXIT_OK;
}

int cli_args(struct cli *c, const struct command *cmd, int argc, char **argv, struct args *a)
{
	int maxpos = cmd->maxpos < 0 ? argc : cmd->maxpos;
	bool only_pos = false;

	memset(a, 0, sizeof *a);
	if (!(a->pos = calloc((size_t)maxpos + 1, sizeof *a->pos)))
		return cli_usage_error(cmd, "out of memory");
	if (take_node_counts(cmd, &argc, argv, a) != EXIT_OK)
		return EXIT_USAGE;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i], *val = NULL;
		const struct opt *o;
		int rc = 0;

		if (only_pos || arg[0] != '-' || arg[1] == '\0') {
			if (a->npos >= maxpos)
				return cli_usage_error(cmd, "unexpected argument '%s'", arg);
			a->pos[a->npos++] = argv[i];
			only_pos |= CLI_VERBATIM_POS(cmd);
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			only_pos = true;
			continue;
		}
		if (strcmp(arg, "--json") == 0) {
			c->json = true;
			continue;
		}
		if ((rc = take_value("--socket", argc, argv, &i, &c->socket)) != 0) {
			if (rc < 0)
				return cli_usage_error(cmd, "--socket needs a value");
			continue;
		}
		for (o = cmd->opts; o && o->name; o++) {
			if (o->kind == OPT_NODE_COUNTS)
				continue;
			if (o->kind == OPT_FLAG)
				rc = strcmp(arg, o->name) == 0 || (o->alias && strcmp(arg, o->alias) == 0);
			else if ((rc = take_value(o->name, argc, argv, &i, &val)) == 0 && o->alias)
				rc = take_short(o->alias, argc, argv, &i, &val);
			if (rc < 0)
				return cli_usage_error(cmd, "%s needs a value", o->name);
			if (rc)
				break;
		}
		if (!rc)
			return cli_usage_error(cmd, "unknown option '%s'", arg);
		if (store(cmd, o, val, a) != EXIT_OK)
			return EXIT_USAGE;
	}
	return EXIT_OK;
}
