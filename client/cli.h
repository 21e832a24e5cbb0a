/* What every command handler of mempolicyctl shares: the global options, the exit codes, the
 * command table entry with its declared options, and what parsing those options fills in. */
#ifndef MPD_CLIENT_CLI_H
#define MPD_CLIENT_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct query;
struct curlapi;

/* Exit codes: part of the interface (documented in --help and docs). */
enum {
	EXIT_OK = 0,            /* success */
	EXIT_REFUSED = 1,       /* the daemon refused or the operation failed */
	EXIT_USAGE = 2,         /* bad command line */
	EXIT_UNREACHABLE = 3,   /* no daemon answered on the socket */
};

#define CLI_DEFAULT_SOCKET "/run/mempolicyd/mempolicyd.sock"
#define CLI_URL_MAX   255   /* "https://host:port", nothing after the port */
#define CLI_TOKEN_MAX 128   /* a token is 85 characters */

struct cli {
	const char *socket;     /* borrowed from argv or the environment */
	const char *url;        /* borrowed: --url / $MEMPOLICYD_URL, "https://host:port"; NULL: the socket */
	const char *cacert;     /* borrowed: --cacert, the CA file that signed the daemon's certificate */
	char *token;            /* owned: from $MEMPOLICYD_TOKEN or --token-file, never from argv; wiped */
	bool json;              /* --json: print the daemon's JSON instead of tables */
	const struct curlapi *api;   /* borrowed: the libcurl of this command's transport
				 * (client/curlapi.h), set by curlapi_open */
	void *curl;             /* owned: the one handle of c->api (so one connection) every request
				 * of this command uses; made by the first request, freed by curlapi_close */
};

/* A numeric option, checked with parse_u64 before anything is sent: decimal digits only (leading
 * zeros allowed: "007" is 7), at least the declared minimum, at most INT64_MAX. The daemon gets
 * the value re-printed, never the user's text. */
struct num {
	bool set;
	uint64_t v;
};

/* What parsing fills in: one field per option name some command declares. The command table
 * says which field each option goes to (struct opt.field), so a handler reads a->limit and never
 * looks at argv. Fields of options the command does not declare stay NULL/unset. */
struct args {
	const char *kind, *status, *since, *until, *cursor;   /* borrowed from argv */
	const char *size, *node, *direction, *deadline;       /* node: text, for the daemon to judge */
	const char *cron, *timezone;
	struct num limit, count, total, batch, grace;
	struct num node_id;     /* --node N where the client checks the number itself */
	bool dry_run, wait, no_wait, compact, force;
	bool exit_code;         /* profile verify --exit-code */
	const char *name, *scope, *expires;   /* token create */
	bool mappings;          /* proc show --mappings */
	json_t *nodes;          /* owned: {"N": COUNT} of repeated --node N=COUNT, when declared */
	/* run: numactl's policy and CPU options; proc migrate/collapse */
	const char *membind, *preferred, *preferred_many, *interleave, *weighted_interleave;
	const char *cpunodebind, *physcpubind, *thp, *from, *to;
	bool localalloc, watch, detach;
	struct num interval, start, length, start_time;
	char **pos;             /* owned array, strings borrowed from argv: the positional arguments */
	int npos;
};

enum opt_kind {
	OPT_TEXT,               /* --name VALUE into a const char * */
	OPT_NUM,                /* --name N into a struct num */
	OPT_FLAG,               /* --name into a bool */
	OPT_NODE_COUNTS,        /* repeatable --node N=COUNT into args.nodes */
};

/* Only for the usage line: how an option is shown. */
enum {
	OPT_REQUIRED = 1,       /* shown bare, not in [brackets] */
	OPT_EITHER = 2,         /* this one or the next one is required: "(--a A | --b B)" */
};

/* One declared option: the parser, the usage line and --help all read this and nothing else. */
struct opt {
	const char *name;       /* "--limit" */
	const char *arg;        /* placeholder in usage and help, "N"; NULL for a flag */
	const char *help;       /* one line for --help; a '\n' continues it under the same column */
	enum opt_kind kind;
	size_t field;           /* offsetof(struct args, <field>) */
	uint64_t min;           /* OPT_NUM: the smallest value accepted */
	unsigned show;          /* OPT_REQUIRED, OPT_EITHER */
	const char *alias;      /* NULL, or the short option of the tool it imitates: "-m" for
				 * --membind (numactl's), taking "-m 0" and "-m0" */
};

/* offsetof that refuses to compile unless the field has the type the kind writes. */
#define ARGS_FIELD(f, T) (offsetof(struct args, f) + 0 * sizeof(_Generic(((struct args *)0)->f, T: 1)))
#define OPT_TEXT_IN(f)       OPT_TEXT, ARGS_FIELD(f, const char *), 0
#define OPT_NUM_IN(f, min)   OPT_NUM, ARGS_FIELD(f, struct num), (min)
#define OPT_FLAG_IN(f)       OPT_FLAG, ARGS_FIELD(f, bool), 0
#define OPT_NODE_COUNTS_IN() OPT_NODE_COUNTS, ARGS_FIELD(nodes, json_t *), 0

struct command;
/* A handler gets its parsed arguments (freed by the caller) and returns an exit code. */
typedef int (*command_fn)(struct cli *c, const struct command *cmd, struct args *a);

struct command {
	const char *group;      /* first word: "knob", "status" */
	const char *name;       /* second word: "set"; "" when the group word alone is the command */
	command_fn fn;
	const char *positional; /* the positional arguments in the usage line: "ID", "" for none */
	int maxpos;             /* how many positionals are accepted; -1 for any number */
	const struct opt *opts; /* the declared options, ended by { NULL }, or NULL for none */
	const char *summary;    /* one line for the command list */
	const char *notes;      /* free text after the option list in --help (examples), or NULL */
};

/* A command whose positional usage starts with "--" or "[--]" ("[--] CMD [ARGS...]") takes options
 * only before its first positional argument: the rest is verbatim (run: the program's own "-c"
 * and all), and its usage line shows the options first. */
#define CLI_VERBATIM_POS(cmd) \
	((cmd)->positional && (!strncmp((cmd)->positional, "--", 2) || !strncmp((cmd)->positional, "[--]", 4)))

/* The global options and the environment, one table each (client/commands.c): --help, the man
 * page and the completion are printed from them. */
struct global_opt {
	const char *name;       /* "--socket"; NULL ends the table */
	const char *arg;        /* "PATH", NULL for a flag */
	const char *help;       /* one line */
};
extern const struct global_opt cli_global_opts[];
struct env_var {
	const char *name;       /* "MEMPOLICYD_SOCKET"; NULL ends the table */
	const char *help;
};
extern const struct env_var cli_env_vars[];

/* The command table (client/commands.c). */
extern const struct command cli_commands[];
extern const size_t cli_ncommands;

/* Parses argv (the words after the command) against cmd->opts, accepting "--name value" and
 * "--name=value", plus the global --json and --socket, which may also follow the command; "--"
 * ends options. Fills a (free it with cli_args_free). EXIT_OK, or EXIT_USAGE after printing why. */
int cli_args(struct cli *c, const struct command *cmd, int argc, char **argv, struct args *a);
void cli_args_free(struct args *a);

/* The remote transport (client/remote.c): checks c->url ("http://" or "https://" HOST[:PORT],
 * nothing after), reads the token from token_file (when not NULL) or $MEMPOLICYD_TOKEN into
 * c->token, and refuses a token with a plain http URL (it would cross the network in clear).
 * EXIT_OK or EXIT_USAGE after saying why. cli_remote_free wipes the token. */
int cli_remote_setup(struct cli *c, const char *token_file);
void cli_remote_free(struct cli *c);

/* The usage line's arguments after the command words, generated from the declaration. */
void cli_print_usage_args(FILE *f, const struct command *cmd);
/* `mempolicyctl GROUP NAME --help`: usage, summary, the declared options, the notes. */
void cli_command_help(FILE *f, const struct command *cmd);
extern const char cli_exit_codes[];

/* A --deadline: "500ms", "30s", "2m", or plain milliseconds (leading zeros skipped, as parse_u64
 * would); 0, or -1 for anything else, zero or too large (client/cmd_pool.c). */
int parse_deadline_ms(const char *s, int64_t *ms);

/* Prints "mempolicyctl: <message>" and the command's usage line to stderr; returns EXIT_USAGE. */
int cli_usage_error(const struct command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A positive integer ID given as text, checked like struct num; what: "a job ID". */
int cli_id(const struct command *cmd, const char *what, const char *text, uint64_t *id);
/* The finished path of q in *path, or EXIT_USAGE after saying that the arguments are too long. */
int cli_path(const struct command *cmd, const struct query *q, const char **path);

#endif
