/* What every command handler of mempolicyctl shares: the global options, the exit codes, the
 * command table entry, and the small option parser handlers use for their own flags. */
#ifndef MPD_CLIENT_CLI_H
#define MPD_CLIENT_CLI_H

#include <jansson.h>
#include <stdbool.h>

/* Exit codes: part of the interface (documented in --help and docs). */
enum {
	EXIT_OK = 0,            /* success */
	EXIT_REFUSED = 1,       /* the daemon refused or the operation failed */
	EXIT_USAGE = 2,         /* bad command line */
	EXIT_UNREACHABLE = 3,   /* no daemon answered on the socket */
};

#define CLI_DEFAULT_SOCKET "/run/mempolicyd/mempolicyd.sock"

struct cli {
	const char *socket;     /* borrowed from argv or the environment */
	bool json;              /* --json: print the daemon's JSON instead of tables */
};

struct command;
/* A handler gets the arguments after its command words (argv[0] is the first of them) and
 * returns an exit code. */
typedef int (*command_fn)(struct cli *c, const struct command *cmd, int argc, char **argv);

struct command {
	const char *group;      /* first word: "knob", "status" */
	const char *name;       /* second word: "set"; "" when the group word alone is the command */
	command_fn fn;
	const char *usage;      /* arguments after the command words, "" for none */
	const char *summary;    /* one line for the command list */
	const char *help;       /* more lines for `... --help` (options, examples), or NULL */
};

/* Options of one command. has_arg options store into *val; flags set *flag. */
struct opt {
	const char *name;       /* "--limit" */
	const char **val;
	bool *flag;
};

/* Parses argv against opts (accepting "--name value" and "--name=value") plus the global
 * --json and --socket, which may also follow the command. Positionals go to pos (at most
 * maxpos; "--" ends options). Returns the number of positionals, or -1 after printing a usage
 * error. */
int cli_args(struct cli *c, const struct command *cmd, int argc, char **argv, const struct opt *opts,
	     char **pos, int maxpos);

/* Prints "mempolicyctl: <message>" and the command's usage line to stderr; returns EXIT_USAGE. */
int cli_usage_error(const struct command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Takes the repeatable "--node N=COUNT" options out of argv into nodes (kv_take_node_counts),
 * before cli_args sees the rest. EXIT_OK, or EXIT_USAGE after printing why. */
int cli_take_node_counts(const struct command *cmd, int *argc, char **argv, json_t *nodes);

#endif
