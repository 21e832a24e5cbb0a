/* mempolicyctl: the command-line client of mempolicyd.
 *
 *   mempolicyctl [--socket PATH | --url URL [--cacert FILE] [--token-file FILE]] [--json] COMMAND [ARGS...]
 *
 * Global options, dispatch by the first one or two words through the command table
 * (client/commands.c, where every command and its options are declared), help for the whole
 * program and for a group, and the last word on the exit code: a result that could not be
 * written to stdout is a failure, however well the daemon answered. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>

#include "client/cli.h"
#include "client/curlapi.h"
#include "client/gen.h"
#include "client/out.h"
#include "client/runself.h"

static int command_words(const struct command *k, char *words, size_t len)
{
	return snprintf(words, len, "%s%s%s", k->group, k->name[0] ? " " : "", k->name);
}

/* The summaries' column: past the longest command name, so that every name is followed by at
 * least two spaces (what a reader, or a script splitting the table, relies on). */
static int command_col(void)
{
	char words[64];
	int col = 16;

	for (size_t i = 0; i < cli_ncommands; i++) {
		int n = command_words(&cli_commands[i], words, sizeof words);
		if (n + 1 > col)
			col = n + 1;
	}
	return col;
}

static void print_command_line(FILE *f, const struct command *k)
{
	char words[64];
	command_words(k, words, sizeof words);
	fprintf(f, "  %-*s %s\n", command_col(), words, k->summary);
}

static void main_help(FILE *f)
{
	fprintf(f,
		"usage: mempolicyctl [--socket PATH | --url URL [--cacert FILE] [--token-file FILE]] [--json]\n"
		"                    COMMAND [ARGS...]\n"
		"\n"
		"Client of mempolicyd, the NUMA memory-placement daemon.\n"
		"\n"
		"Options:\n");
	for (const struct global_opt *o = cli_global_opts; o->name; o++) {
		char left[40];
		snprintf(left, sizeof left, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "  %-17s %s\n", left, o->help);
	}
	fprintf(f, "\nEnvironment:\n");
	for (const struct env_var *v = cli_env_vars; v->name; v++)
		fprintf(f, "  %-17s %s\n", v->name, v->help);
	fprintf(f, "\nCommands:\n");
	for (size_t i = 0; i < cli_ncommands; i++)
		print_command_line(f, &cli_commands[i]);
	fprintf(f, "\n%s", cli_exit_codes);
}

static void group_help(FILE *f, const char *group)
{
	fprintf(f, "usage:\n");
	for (size_t i = 0; i < cli_ncommands; i++) {
		const struct command *k = &cli_commands[i];
		if (strcmp(k->group, group) != 0)
			continue;
		fprintf(f, "  mempolicyctl %s%s%s", k->group, k->name[0] ? " " : "", k->name);
		if (k->positional[0] || (k->opts && k->opts[0].name))
			fputc(' ', f);
		cli_print_usage_args(f, k);
		fputc('\n', f);
	}
	fprintf(f, "\nCommands:\n");
	for (size_t i = 0; i < cli_ncommands; i++)
		if (strcmp(cli_commands[i].group, group) == 0)
			print_command_line(f, &cli_commands[i]);
	fprintf(f, "\nRun 'mempolicyctl %s COMMAND --help' for one command.\n\n%s", group, cli_exit_codes);
}

static bool wants_help(int argc, char **argv)
{
	for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return true;
	return false;
}

/* The errno of the first write to fd 1 that failed, 0 while all went through. stdio keeps only an
 * error flag: once more than a buffer is printed (--help, a long table), the write that fails
 * (EPIPE, ENOSPC) is one in the middle, and by the last flush its errno is long gone. */
static int stdout_errno;

static ssize_t stdout_write(void *cookie, const char *buf, size_t n)
{
	size_t done = 0;

	(void)cookie;
	while (done < n) {
		ssize_t w = write(STDOUT_FILENO, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!stdout_errno)
				stdout_errno = w < 0 ? errno : EIO;
			break;   /* short: stdio sets the stream's error flag */
		}
		done += (size_t)w;
	}
	return (ssize_t)done;
}

static int stdout_close(void *cookie)
{
	(void)cookie;
	if (close(STDOUT_FILENO) == 0)
		return 0;
	if (!stdout_errno)
		stdout_errno = errno;
	return -1;
}

/* stdout as a stream whose writes are stdout_write's, buffered as glibc buffers fd 1 (by line on a
 * terminal, else fully). Left as it is if the stream cannot be made: then the reason may be EIO. */
static void stdout_checked(void)
{
	static const cookie_io_functions_t io = { .write = stdout_write, .close = stdout_close };
	FILE *f = fopencookie(NULL, "w", io);   /* owned: replaces stdout, closed by finish() */

	if (!f)
		return;
	setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);   /* fails only on a bad mode */
	stdout = f;
}

/* Every exit goes through here. stdout is fully buffered when it is not a terminal, so a full disk
 * or a closed pipe shows only when it is flushed: check that, and the error flag of any earlier
 * write, before saying the command worked. */
static int finish(int rc)
{
	bool failed;
	int err;

	errno = 0;
	failed = fflush(stdout) != 0 || ferror(stdout);
	err = errno;
	if (fclose(stdout) != 0 && !failed) {
		failed = true;
		err = errno;
	}
	if (failed) {
		/* the failed write's own errno, when it was seen; else what the flush or close said */
		err = stdout_errno ? stdout_errno : err;
		out_error("cannot write the result to stdout: %s", strerror(err ? err : EIO));
		if (rc == EXIT_OK)
			rc = EXIT_REFUSED;
	}
	return rc;
}

/* Global options before the command; *i ends at the command word. -1 to go on, else an exit code. */
/* "--name VALUE" or "--name=VALUE" at argv[*i]: 1 with *out set, 0 when it is not that option,
 * -1 when the value is missing. */
static int valued(const char *name, int argc, char **argv, int *i, const char **out)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (strncmp(a, name, n) != 0 || (a[n] != '=' && a[n] != '\0'))
		return 0;
	if (a[n] == '=') {
		*out = a + n + 1;
		return 1;
	}
	if (*i + 1 >= argc)
		return -1;
	*out = argv[++*i];
	return 1;
}

static int global_options(struct cli *c, int argc, char **argv, int *i, const char **token_file)
{
	static const char *const names[] = { "--socket", "--url", "--cacert", "--token-file" };

	for (; *i < argc && argv[*i][0] == '-'; ++*i) {
		const char *a = argv[*i];
		const char **slot[] = { &c->socket, &c->url, &c->cacert, token_file };
		int got = 0;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			main_help(stdout);
			return EXIT_OK;
		}
		if (strcmp(a, "--version") == 0) {
			printf("mempolicyctl %s\n", MPD_VERSION);
			curlapi_describe(stdout);
			return EXIT_OK;
		}
		/* Not in --help: the build generates the man page and completion with these, and the
		 * completion function asks for the daemon's words with --complete. */
		if (strcmp(a, "--man") == 0)
			return cli_man(stdout) < 0 ? EXIT_REFUSED : EXIT_OK;
		if ((strcmp(a, "--completion") == 0 || strcmp(a, "--complete") == 0) && *i + 1 >= argc)
			return cli_usage_error(NULL, "%s needs a value", a);
		if (strcmp(a, "--completion") == 0)
			return cli_completion(stdout, argv[*i + 1]);
		if (strcmp(a, "--complete") == 0)
			return cli_complete(c, argv[*i + 1]);
		if (strcmp(a, "--json") == 0) {
			c->json = true;
			continue;
		}
		for (size_t k = 0; k < sizeof names / sizeof names[0] && !got; k++)
			if ((got = valued(names[k], argc, argv, i, slot[k])) < 0)
				return cli_usage_error(NULL, "%s needs a value", names[k]);
		if (!got)
			return cli_usage_error(NULL, "unknown option '%s'", a);
	}
	return -1;
}

/* The command named by argv[i] (and argv[i+1]), or NULL with *rc set to the exit code after help
 * or an error was printed. */
static const struct command *find_command(int argc, char **argv, int i, int *rc)
{
	const struct command *k = NULL;
	bool group_known = false;

	for (size_t j = 0; j < cli_ncommands; j++) {
		const struct command *x = &cli_commands[j];
		if (strcmp(x->group, argv[i]) != 0)
			continue;
		group_known = true;
		if (x->name[0] && i + 1 < argc && strcmp(x->name, argv[i + 1]) == 0)
			return x;
		if (!x->name[0] && !k)
			k = x;   /* the bare group word, unless a subcommand matches */
	}
	if (k)
		return k;
	if (!group_known) {
		*rc = cli_usage_error(NULL, "unknown command '%s'", argv[i]);
	} else if (i + 1 >= argc) {
		/* A group without a bare command: `knob` alone lists its commands, as a usage error. */
		group_help(stderr, argv[i]);
		*rc = EXIT_USAGE;
	} else if (wants_help(argc - i - 1, argv + i + 1)) {
		group_help(stdout, argv[i]);
		*rc = EXIT_OK;
	} else {
		*rc = cli_usage_error(NULL, "unknown command '%s %s'", argv[i], argv[i + 1]);
	}
	return NULL;
}

static int run(struct cli *c, const struct command *k, int argc, char **argv)
{
	struct args a;
	int rc;

	if (wants_help(argc, argv)) {
		/* `history --help` shows the group (its bare command and `history show`). */
		bool has_subs = false;
		for (size_t j = 0; j < cli_ncommands; j++)
			if (strcmp(cli_commands[j].group, k->group) == 0 && cli_commands[j].name[0])
				has_subs = true;
		if (!k->name[0] && has_subs)
			group_help(stdout, k->group);
		else
			cli_command_help(stdout, k);
		return EXIT_OK;
	}
	if ((rc = cli_args(c, k, argc, argv, &a)) != EXIT_OK)
		goto out;
	/* Not for run's own launch: libcurl's set-up was 8-10 us of its ~1.6 ms (bench/README.md
	 * section 8). */
	if (run_needs_curl(c, k, &a) && (rc = curlapi_open(c)) != EXIT_OK)
		goto out;
	rc = k->fn(c, k, &a);
	curlapi_close(c);
out:
	cli_args_free(&a);
	return rc;
}

int main(int argc, char **argv)
{
	struct cli c = { .socket = NULL, .json = false, .api = NULL, .curl = NULL };
	const struct command *k;
	const char *env = getenv("MEMPOLICYD_SOCKET"), *url = getenv("MEMPOLICYD_URL"), *token_file = NULL;
	size_t seed;
	int i = 1, rc;

	stdout_checked();   /* before anything is printed */
	/* Before the first JSON object, which would seed jansson's hash from /dev/urandom (an open, a
	 * read and a close): one getrandom(2), the same entropy. 0 (it failed): jansson's own. */
	if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
		seed = 0;
	json_object_seed(seed);
	c.socket = env && env[0] ? env : CLI_DEFAULT_SOCKET;
	c.url = url && url[0] ? url : NULL;
	if ((rc = global_options(&c, argc, argv, &i, &token_file)) >= 0)
		return finish(rc);
	if (i >= argc)
		return finish(cli_usage_error(NULL, "no command given"));
	if (!(k = find_command(argc, argv, i, &rc)))
		return finish(rc);
	if ((rc = cli_remote_setup(&c, token_file)) == EXIT_OK)
		rc = run(&c, k, argc - i - (k->name[0] ? 2 : 1), argv + i + (k->name[0] ? 2 : 1));
	cli_remote_free(&c);
	return finish(rc);
}
