/* mempolicyctl: the command-line client of mempolicyd.
 *
 *   mempolicyctl [--socket PATH] [--json] COMMAND [ARGS...]
 *
 * Every command is one line of the static table `commands` below, dispatched by its first one or
 * two words. To add a command group (say `pool`):
 *   1. write client/cmd_pool.c with handlers `int cmd_pool_list(struct cli *, const struct command *,
 *      int argc, char **argv)` that parse their own options with cli_args(), call the daemon with
 *      http_expect() (client/http.h) and print with out_json()/table_*() (client/out.h), returning an
 *      EXIT_* code (client/cli.h);
 *   2. declare the handlers in the prototype block below and add one table line per subcommand.
 * The Makefile picks up every .c file in client/; --help at every level comes from the table. */
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli.h"
#include "client/kv.h"
#include "client/out.h"

/* Handlers, one file per command group (client/cmd_<group>.c). */
int cmd_status(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_topology(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_knob_list(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_knob_get(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_knob_set(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_history_list(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_history_show(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_schedule_add(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_schedule_list(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_schedule_show(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_schedule_rm(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_pool_list(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_pool_resize(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_pool_avail(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_job_list(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_job_show(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_job_cancel(struct cli *c, const struct command *cmd, int argc, char **argv);
int cmd_history_stats(struct cli *c, const struct command *cmd, int argc, char **argv);

static const struct command commands[] = {
	{ "status", "", cmd_status, "",
	  "daemon health, kernel, THP mode and node count", NULL },
	{ "topology", "", cmd_topology, "",
	  "NUMA nodes: CPUs, memory, hugepage sizes, distances", NULL },
	{ "knob", "list", cmd_knob_list, "",
	  "every kernel knob the daemon manages, with value and allowed values", NULL },
	{ "knob", "get", cmd_knob_get, "NAME",
	  "one knob in full", NULL },
	{ "knob", "set", cmd_knob_set, "NAME=VALUE [NAME=VALUE...] [--dry-run]",
	  "change knobs; several at once are all-or-nothing",
	  "  --dry-run      show the plan, change nothing\n"
	  "One NAME=VALUE is a PUT /v1/knobs/NAME; several are one PATCH /v1/knobs, applied in the\n"
	  "order given and rolled back together if the kernel refuses one. A VALUE of decimal digits\n"
	  "(optionally with '-') is sent as a JSON integer, anything else as a string.\n"
	  "Example: mempolicyctl knob set thp.enabled=madvise thp.khugepaged.pages_to_scan=4096" },
	{ "history", "", cmd_history_list, "[--kind K] [--status S] [--since T] [--until T] [--limit N] [--cursor C]",
	  "recorded operations, newest first",
	  "  --kind K       only operations of this kind (e.g. knobs.set)\n"
	  "  --status S     only this status (ok, failed, rolled_back, ...)\n"
	  "  --since T      started at or after T (RFC 3339 UTC, e.g. 2026-01-02T10:00:00Z, or ns)\n"
	  "  --until T      started before T\n"
	  "  --limit N      at most N operations (1..1000, default 50)\n"
	  "  --cursor C     the next page, as printed after a full page" },
	{ "history", "show", cmd_history_show, "ID",
	  "one operation in full, with its knob changes", NULL },
	{ "history", "stats", cmd_history_stats,
	  "[--size SIZE] [--node N] [--since T] [--until T] [--direction grow|shrink] [--kind K]",
	  "per-page resize latency: min, quartiles, max, mean, stddev (mmtests style, ms)",
	  "  --size SIZE    only batches of this page size (2M, 1G)\n"
	  "  --node N       only batches that wrote node N's pool\n"
	  "  --since T      batches started at or after T (RFC 3339 UTC or ns)\n"
	  "  --until T      batches started before T\n"
	  "  --direction D  grow (default: allocation latency) or shrink\n"
	  "  --kind K       hugepages.resize (the only kind with batches)\n"
	  "Quartiles are floor nearest rank without interpolation, stddev is the sample one (n-1)." },
	{ "pool", "list", cmd_pool_list, "",
	  "hugetlb pools: every page size, with pages and free pages per node", NULL },
	{ "pool", "resize", cmd_pool_resize,
	  "SIZE (--total N | --node N=COUNT...) [--batch B] [--deadline D] [--compact] [--dry-run] [--no-wait]",
	  "grow or shrink a pool in batches, measuring the latency per page",
	  "  --total N      target pages for the whole pool (the global nr_hugepages), or\n"
	  "  --node N=COUNT target pages on node N (repeat; nodes not named keep their size)\n"
	  "  --batch B      pages per write (default 10, 1 for 1G pages)\n"
	  "  --deadline D   stop after D (500ms, 30s, 2m; plain numbers are ms): the job ends partial\n"
	  "  --compact      when a batch gains nothing, compact memory once and retry it\n"
	  "  --dry-run      show the plan, change nothing\n"
	  "  --no-wait      print the job id and return; follow with `job show ID --wait`\n"
	  "Waits for the job (a progress bar on a terminal) and prints per node what was asked, what\n"
	  "the kernel gave and the latency per page. Exit 1 unless the job ended ok. Ctrl-C stops\n"
	  "waiting, not the job: use `job cancel ID`.\n"
	  "Example: mempolicyctl pool resize 2M --node 0=512 --node 1=512 --batch 16" },
	{ "pool", "avail", cmd_pool_avail, "SIZE --count K [--node N]",
	  "can K pages be had now: from free pages, or how much the pool must grow", NULL },
	{ "job", "list", cmd_job_list, "[--kind K] [--status S] [--limit N]",
	  "jobs (pool resizes), newest first", NULL },
	{ "job", "show", cmd_job_show, "ID [--wait]",
	  "one job: status, progress, per-node outcome (--wait: until it ends)", NULL },
	{ "job", "cancel", cmd_job_cancel, "ID",
	  "cancel a job; a running resize stops before its next batch", NULL },
	{ "schedule", "add", cmd_schedule_add,
	  "--cron EXPR --size SIZE (--total N | --node N=COUNT...) [--timezone TZ] [--grace S] [--batch B]",
	  "resize a hugetlb pool on a cron schedule",
	  "  --cron EXPR    five fields: minute hour day-of-month month day-of-week (or @daily, ...)\n"
	  "  --size SIZE    page size: 2M, 1G, 2048kB\n"
	  "  --total N      target pages for the whole pool, or\n"
	  "  --node N=COUNT target pages on node N (repeat for several nodes)\n"
	  "  --timezone TZ  UTC (default) or a fixed offset like +02:00\n"
	  "  --grace S      a run missed while the daemon was down still runs if at most S seconds\n"
	  "                 late (default 3600); older ones are skipped and recorded\n"
	  "  --batch B      pages per write of the resize\n"
	  "Example: mempolicyctl schedule add --cron \"0 2 * * *\" --size 2M --node 0=4096" },
	{ "schedule", "list", cmd_schedule_list, "",
	  "every schedule with its next and last run", NULL },
	{ "schedule", "show", cmd_schedule_show, "ID",
	  "one schedule in full", NULL },
	{ "schedule", "rm", cmd_schedule_rm, "ID",
	  "delete a schedule (jobs it started stay in history)", NULL },
};
static const size_t ncommands = sizeof commands / sizeof commands[0];

static const char exit_codes[] =
	"Exit codes: 0 success, 1 the daemon refused or the operation failed, 2 usage error,\n"
	"            3 daemon unreachable. Results go to stdout, errors to stderr.\n";

static void print_command_line(FILE *f, const struct command *k)
{
	char words[64];
	snprintf(words, sizeof words, "%s%s%s", k->group, k->name[0] ? " " : "", k->name);
	fprintf(f, "  %-16s %s\n", words, k->summary);
}

static void main_help(FILE *f)
{
	fprintf(f,
		"usage: mempolicyctl [--socket PATH] [--json] COMMAND [ARGS...]\n"
		"\n"
		"Client of mempolicyd, the NUMA memory-placement daemon.\n"
		"\n"
		"Options:\n"
		"  --socket PATH  the daemon's socket (else $MEMPOLICYD_SOCKET, else " CLI_DEFAULT_SOCKET ")\n"
		"  --json         print the daemon's JSON answer instead of a table\n"
		"  --help         this help; COMMAND --help for a command\n"
		"  --version      the client's version\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < ncommands; i++)
		print_command_line(f, &commands[i]);
	fprintf(f, "\n%s", exit_codes);
}

static void group_help(FILE *f, const char *group)
{
	fprintf(f, "usage:\n");
	for (size_t i = 0; i < ncommands; i++) {
		const struct command *k = &commands[i];
		if (strcmp(k->group, group) == 0)
			fprintf(f, "  mempolicyctl %s%s%s%s%s\n", k->group, k->name[0] ? " " : "", k->name,
				k->usage[0] ? " " : "", k->usage);
	}
	fprintf(f, "\nCommands:\n");
	for (size_t i = 0; i < ncommands; i++)
		if (strcmp(commands[i].group, group) == 0)
			print_command_line(f, &commands[i]);
	fprintf(f, "\nRun 'mempolicyctl %s COMMAND --help' for one command.\n\n%s", group, exit_codes);
}

static void command_help(FILE *f, const struct command *k)
{
	fprintf(f, "usage: mempolicyctl [--socket PATH] [--json] %s%s%s%s%s\n\n%s.\n", k->group,
		k->name[0] ? " " : "", k->name, k->usage[0] ? " " : "", k->usage, k->summary);
	if (k->help)
		fprintf(f, "\n%s\n", k->help);
	fprintf(f, "\n%s", exit_codes);
}

int cli_usage_error(const struct command *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("mempolicyctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cmd)
		fprintf(stderr, "usage: mempolicyctl %s%s%s%s%s\n", cmd->group, cmd->name[0] ? " " : "", cmd->name,
			cmd->usage[0] ? " " : "", cmd->usage);
	else
		fputs("Try 'mempolicyctl --help'.\n", stderr);
	return EXIT_USAGE;
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

int cli_take_node_counts(const struct command *cmd, int *argc, char **argv, json_t *nodes)
{
	char err[160];

	if (kv_take_node_counts(argc, argv, nodes, err, sizeof err) < 0)
		return cli_usage_error(cmd, "%s", err);
	return EXIT_OK;
}

int cli_args(struct cli *c, const struct command *cmd, int argc, char **argv, const struct opt *opts,
	     char **pos, int maxpos)
{
	int npos = 0;
	bool only_pos = false;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		int rc;

		if (only_pos || a[0] != '-' || a[1] == '\0') {
			if (npos >= maxpos)
				return cli_usage_error(cmd, "unexpected argument '%s'", a), -1;
			pos[npos++] = argv[i];
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = true;
			continue;
		}
		if (strcmp(a, "--json") == 0) {
			c->json = true;
			continue;
		}
		if ((rc = take_value("--socket", argc, argv, &i, &c->socket)) != 0) {
			if (rc < 0)
				return cli_usage_error(cmd, "--socket needs a value"), -1;
			continue;
		}
		rc = 0;
		for (const struct opt *o = opts; o && o->name; o++) {
			if (o->flag) {
				if (strcmp(a, o->name) == 0) {
					*o->flag = true;
					rc = 1;
				}
			} else if ((rc = take_value(o->name, argc, argv, &i, o->val)) < 0) {
				return cli_usage_error(cmd, "%s needs a value", o->name), -1;
			}
			if (rc)
				break;
		}
		if (!rc)
			return cli_usage_error(cmd, "unknown option '%s'", a), -1;
	}
	return npos;
}

static bool wants_help(int argc, char **argv)
{
	for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	struct cli c = { .socket = NULL, .json = false };
	const struct command *k = NULL;
	const char *env = getenv("MEMPOLICYD_SOCKET");
	int i = 1, rc, nwords;
	bool group_known = false;

	c.socket = env && env[0] ? env : CLI_DEFAULT_SOCKET;
	/* Global options before the command. */
	for (; i < argc && argv[i][0] == '-'; i++) {
		int r;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			main_help(stdout);
			return EXIT_OK;
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("mempolicyctl %s\n", MPD_VERSION);
			return EXIT_OK;
		}
		if (strcmp(argv[i], "--json") == 0) {
			c.json = true;
			continue;
		}
		if ((r = take_value("--socket", argc, argv, &i, &c.socket)) > 0)
			continue;
		if (r < 0)
			return cli_usage_error(NULL, "--socket needs a value");
		return cli_usage_error(NULL, "unknown option '%s'", argv[i]);
	}
	if (i >= argc)
		return cli_usage_error(NULL, "no command given");

	for (size_t j = 0; j < ncommands; j++) {
		if (strcmp(commands[j].group, argv[i]) != 0)
			continue;
		group_known = true;
		if (commands[j].name[0] && i + 1 < argc && strcmp(commands[j].name, argv[i + 1]) == 0) {
			k = &commands[j];
			break;
		}
		if (!commands[j].name[0] && !k)
			k = &commands[j];   /* the bare group word, unless a subcommand matches */
	}
	if (!group_known)
		return cli_usage_error(NULL, "unknown command '%s'", argv[i]);
	nwords = k && k->name[0] ? 2 : 1;
	if (!k) {
		/* A group without a bare command: `knob`, `knob --help`, `knob frobnicate`. */
		if (i + 1 >= argc || wants_help(argc - i - 1, argv + i + 1)) {
			if (i + 1 < argc) {
				group_help(stdout, argv[i]);
				return EXIT_OK;
			}
			group_help(stderr, argv[i]);
			return EXIT_USAGE;
		}
		return cli_usage_error(NULL, "unknown command '%s %s'", argv[i], argv[i + 1]);
	}
	if (wants_help(argc - i - nwords, argv + i + nwords)) {
		/* `history --help` shows the group (its bare command and `history show`). */
		bool has_subs = false;
		for (size_t j = 0; j < ncommands; j++)
			if (strcmp(commands[j].group, k->group) == 0 && commands[j].name[0])
				has_subs = true;
		if (!k->name[0] && has_subs)
			group_help(stdout, k->group);
		else
			command_help(stdout, k);
		return EXIT_OK;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		out_error("cannot initialise libcurl");
		return EXIT_REFUSED;
	}
	rc = k->fn(&c, k, argc - i - nwords, argv + i + nwords);
	fflush(stdout);
	curl_global_cleanup();
	return rc;
}
