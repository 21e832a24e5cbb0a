/* mempolicyd's options (server/config.h): getopt's table, their documentation (--help, the man
 * pages), the config file reader and the numbers the limits and retention options become. */
#include "server/config.h"

#include "server/ops/drift.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/api/api.h"
#include "server/api/auth.h"
#include "server/jobs/reasons.h"
#include "server/ops/drift.h"
#include "server/ops/kinds.h"
#include "server/ops/probes.h"
#include "server/oplog.h"
#include "server/store/retain.h"

/* The numeric limits (api/conn.h): option value OPT_LIMIT + i is limit[i]. */
#define OPT_LIMIT 256
static const char *const limit_names[7] = {
	"max-connections", "max-connections-per-uid", "admin-reserve", "idle-timeout", "request-timeout",
	"auth-failures-per-minute", "max-connections-per-address",
};

/* The collections' caps and retention (store/retain.h): option OPT_KEEP + i is keep[i]. A value
 * of 0 switches a retain-* bound off (keep regardless); max-schedules is at least 1. A size is
 * written as parse_size_kb takes it ("512M", "2G", plain bytes in whole kB) and kept in bytes. */
#define OPT_KEEP 320
#define NKEEP 6
static const struct {
	const char *name;
	uint64_t def, min, max;
	bool size;
} keep_opts[NKEEP] = {
	{ "max-schedules",     1000,                      1, 100000,     false },
	{ "retain-days",       RETAIN_DEFAULT_DAYS,       0, 36500,      false },
	{ "retain-operations", RETAIN_DEFAULT_OPERATIONS, 0, 1000000000, false },
	{ "retain-batches",    RETAIN_DEFAULT_BATCHES,    0, 1000000000, false },
	{ "retain-jobs",       RETAIN_DEFAULT_JOBS,       0, 1000000000, false },
	{ "retain-bytes",      RETAIN_DEFAULT_BYTES,      RETAIN_MIN_BYTES, 1ULL << 40, true },
};

/* --man and --man-conf: values no short option or other table uses. */
#define OPT_MAN 400
/* --no-seccomp: the command line's spelling of seccomp = false (no config key of its own). */
#define OPT_NO_SECCOMP 402
/* --list-kinds and --list-reasons: the daemon's other registries, printed like --list-errors. */
#define OPT_LIST 410
/* --drift-check-interval (h-drift). */
#define OPT_DRIFT 420

static const struct option long_opts[] = {
	{ "config",      required_argument, NULL, 'c' },
	{ "socket",      required_argument, NULL, 's' },
	{ "db",          required_argument, NULL, 'd' },
	{ "sysfs-root",  required_argument, NULL, 'S' },
	{ "procfs-root", required_argument, NULL, 'P' },
	{ "listen-tcp",  required_argument, NULL, 't' },
	{ "tls-cert",    required_argument, NULL, 'C' },
	{ "tls-key",     required_argument, NULL, 'K' },
	{ "tls-client-ca", required_argument, NULL, 'A' },
	{ "admin-group", required_argument, NULL, 'g' },
	{ "user",        required_argument, NULL, 'u' },
	{ "seccomp",     required_argument, NULL, 'Z' },
	{ "no-seccomp",  no_argument,       NULL, OPT_NO_SECCOMP },
	{ "log-level",   required_argument, NULL, 'l' },
	{ "log-format",  required_argument, NULL, 'F' },
	{ "max-connections",         required_argument, NULL, OPT_LIMIT + 0 },
	{ "max-connections-per-uid", required_argument, NULL, OPT_LIMIT + 1 },
	{ "admin-reserve",           required_argument, NULL, OPT_LIMIT + 2 },
	{ "idle-timeout",            required_argument, NULL, OPT_LIMIT + 3 },
	{ "request-timeout",         required_argument, NULL, OPT_LIMIT + 4 },
	{ "auth-failures-per-minute", required_argument, NULL, OPT_LIMIT + 5 },
	{ "max-connections-per-address", required_argument, NULL, OPT_LIMIT + 6 },
	{ "max-schedules",           required_argument, NULL, OPT_KEEP + 0 },
	{ "retain-days",             required_argument, NULL, OPT_KEEP + 1 },
	{ "retain-operations",       required_argument, NULL, OPT_KEEP + 2 },
	{ "retain-batches",          required_argument, NULL, OPT_KEEP + 3 },
	{ "retain-jobs",             required_argument, NULL, OPT_KEEP + 4 },
	{ "retain-bytes",            required_argument, NULL, OPT_KEEP + 5 },
	{ "probe-memory-share", required_argument, NULL, 'M' },
	{ "profiles-dir", required_argument, NULL, 'D' },
	{ "profile",     required_argument, NULL, 'p' },
	{ "drift-check-interval", required_argument, NULL, OPT_DRIFT },
	{ "node-labels-file", required_argument, NULL, 'N' },
	{ "help",        no_argument,       NULL, 'h' },
	{ "version",     no_argument,       NULL, 'V' },
	{ "list-errors", no_argument,       NULL, 'E' },
	{ "list-kinds",  no_argument,       NULL, OPT_LIST },
	{ "list-reasons", no_argument,      NULL, OPT_LIST + 1 },
	{ "list-message-ids", no_argument,  NULL, OPT_LIST + 2 },
#ifdef MPD_TEST_HOOKS
	{ "test-clock",  required_argument, NULL, 'T' },
	{ "test-job-workers", required_argument, NULL, 'J' },
#endif
	{ "man",         no_argument,       NULL, OPT_MAN },   /* not in --help: the build's man pages */
	{ "man-conf",    no_argument,       NULL, OPT_MAN + 1 },
	{ NULL, 0, NULL, 0 },
};

/* What --help, the man page mempolicyd(8) and mempolicyd.conf(5) say about each option, in
 * long_opts' order; def >= 0 is a numeric default printed after the text. conf: a setting the
 * config file may hold (the option without its dashes). */
static const struct opt_doc {
	const char *name, *arg, *help;
	int def;
	bool conf;
} opt_docs[] = {
	{ "config", "PATH", "key=value file with the options below (without the dashes)", -1, false },
	{ "socket", "PATH", "Unix socket to serve the API on (default " DEFAULT_SOCKET "); under systemd, "
	  "the socket unit's socket at this path is taken instead", -1, true },
	{ "db", "PATH", "SQLite database (default " DEFAULT_DB ")", -1, true },
	{ "sysfs-root", "DIR", "where sysfs is (default /sys)", -1, true },
	{ "procfs-root", "DIR", "where procfs is (default /proc)", -1, true },
	{ "listen-tcp", "A:P", "also serve HTTP on TCP: without TLS read-only and on a loopback address only (e.g. "
	  "127.0.0.1:8700); with --tls-cert and --tls-key HTTPS on any address, every request with a bearer token",
	  -1, true },
	{ "tls-cert", "PATH", "PEM certificate (chain) of the TCP listener; read once at start", -1, true },
	{ "tls-key", "PATH", "PEM private key of --tls-cert; read once at start", -1, true },
	{ "tls-client-ca", "PATH", "PEM CA(s): TLS clients must also present a certificate they signed (mutual TLS)",
	  -1, true },
	{ "admin-group", "NAME", "members of this group may change settings (root always may)", -1, true },
	{ "user", "NAME", "privilege separation: serve as this unprivileged user with no capabilities, the kernel "
	  "writes done by a privileged helper (default " DEFAULT_USER " when started as root; root: one process, "
	  "no separation; the database's directory must be the user's)", -1, true },
	{ "seccomp", "BOOL", "true (default) or false: under privilege separation the serving process loads a seccomp "
	  "filter after dropping its privileges, refusing with EPERM exec, ptrace, memory policy, mounts and "
	  "namespaces, module and kexec loading, identity changes and sockets other than Unix and IP; false is for "
	  "debugging (a kernel without seccomp filters is logged and served without)", -1, true },
	{ "no-seccomp", NULL, "the same as --seccomp false", -1, false },
	{ "log-level", "LEVEL", "error, warn, info (default) or debug", -1, true },
	{ "log-format", "FORMAT", "auto (default: journal when stderr is the journal's stream, else text), text, "
	  "json (one JSON object per line on stderr) or journal (the native journal protocol, each operation with "
	  "MESSAGE_ID and MPD_* fields)", -1, true },
	{ "max-connections", "N", "connections per listener", CONN_DEFAULT_MAX, true },
	{ "max-connections-per-uid", "N", "Unix socket connections one user may hold, unless root or admin",
	  CONN_DEFAULT_PER_UID, true },
	{ "admin-reserve", "N", "of max-connections, kept for root and the admin group", CONN_DEFAULT_RESERVE, true },
	{ "idle-timeout", "S", "close a connection silent for S seconds", CONN_DEFAULT_IDLE_TIMEOUT, true },
	{ "request-timeout", "S", "close a connection whose request (headers and body) takes longer",
	  CONN_DEFAULT_REQUEST_TIMEOUT, true },
	{ "auth-failures-per-minute", "N", "TLS: failed authentications one peer address may make in a minute before "
	  "it is refused (429) for the rest of it", AUTH_DEFAULT_FAILS, true },
	{ "max-connections-per-address", "N", "TCP: connections one peer address may hold; more are refused (503)",
	  CONN_DEFAULT_PER_ADDRESS, true },
	{ "max-schedules", "N", "schedules the daemon holds at most", 1000, true },
	{ "retain-days", "N", "history, batches and finished jobs older than N days are removed (0: by count only)",
	  RETAIN_DEFAULT_DAYS, true },
	{ "retain-operations", "N", "history operations kept at most, newest first (0: no cap)",
	  RETAIN_DEFAULT_OPERATIONS, true },
	{ "retain-batches", "N", "resize batch rows kept at most (0: no cap)", RETAIN_DEFAULT_BATCHES, true },
	{ "retain-jobs", "N", "finished jobs kept at most (0: no cap)", RETAIN_DEFAULT_JOBS, true },
	{ "retain-bytes", "SIZE", "the database's pages in use kept under SIZE (bytes, or with k, M or G; 1M at "
	  "least; default 1G): beyond it the oldest operations and finished jobs go, as many as the excess "
	  "takes and a tenth more (0: no cap)", -1, true },
	{ "probe-memory-share", "PCT", "a probe may take at most this share of free memory", PROBE_DEFAULT_MEM_PCT,
	  true },
	{ "profiles-dir", "DIR", "the profiles directory, one NAME.conf each (default " DEFAULT_PROFILES_DIR "; "
	  "a missing default directory holds no profiles); read at start and on every API read, and watched "
	  "(inotify): a change of a valid set activates the profile in force again; may be a Kubernetes "
	  "ConfigMap volume (reloaded once per ..data swap)", -1, true },
	{ "profile", "NAME", "the profile applied at start, NAME.conf in the profiles directory: READY=1 is "
	  "sent once its apply ended (at most the pools' 60 s deadline and 30 s more); without it, an apply "
	  "the previous daemon left interrupted is completed", -1, true },
	{ "drift-check-interval", "S", "the profile in force is checked on writes to its files (fanotify) as they "
	  "happen; what the kernel changes with no write (the hugetlb pools, vm.min_free_kbytes) and what has no "
	  "mark is read every S seconds (1 to 86400)", DRIFT_CHECK_DEFAULT_S, true },
	{ "node-labels-file", "PATH", "write the node's state as a Node Feature Discovery local feature file here "
	  "(e.g. /etc/kubernetes/node-feature-discovery/features.d/mempolicyd): mempolicyd.io/NAME=VALUE labels of "
	  "the THP settings, the profile and its state, each pool's size per page size and node and the kernel's capabilities, "
	  "expiring 300 s ahead and written again every 120 s and after every change, through a dot file renamed "
	  "over it (docs/reference/fleet.md); the name must not start with a dot", -1, true },
	{ "help", NULL, "this help", -1, false },
	{ "version", NULL, "the daemon's version", -1, false },
	{ "list-errors", NULL, "every problem code the API can answer with: code, status, kind, meaning", -1, false },
	{ "list-kinds", NULL, "every operation kind history records: kind, job or record, summary or no-summary", -1,
	  false },
	{ "list-reasons", NULL, "every reason a job can end with: reason, meaning", -1, false },
	{ "list-message-ids", NULL, "the journal MESSAGE_ID of each operation kind's log event: kind, id (* for a "
	  "kind without its own)", -1, false },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: mempolicyd [options]\n\n");
	for (size_t i = 0; i < sizeof opt_docs / sizeof opt_docs[0]; i++) {
		const struct opt_doc *d = &opt_docs[i];
		char left[64];
		snprintf(left, sizeof left, "--%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
		fprintf(f, strlen(left) > 20 ? "  %s\n%23s" : "  %-20s ", left, "");
		fprintf(f, d->def >= 0 ? "%s (default %d)\n" : "%s\n", d->help, d->def);
	}
#ifdef MPD_TEST_HOOKS
	fprintf(f, "\nThis build has test hooks (never install it):\n"
		"  --test-clock FILE    the wall clock reads FILE (ns since the epoch), again on SIGUSR2\n"
		"  --test-job-workers N the job runner's workers (1..8, default 2): with 1, a job queues behind a held one\n");
#endif
}

static void roff(FILE *f, const char *s)
{
	for (; *s; s++)
		fputs(*s == '-' ? "\\-" : *s == '\\' ? "\\e" : (char[2]){ *s, 0 }, f);
}
/* mempolicyd(8) (conf false) or mempolicyd.conf(5) (conf true), from opt_docs. */
static void man(FILE *f, bool conf)
{
	fprintf(f, ".\\\" Generated by `mempolicyd --man%s` from server/config.c: do not edit.\n"
		   ".TH %s %d \"\" \"mempolicyd %s\" \"%s\"\n.SH NAME\n", conf ? "-conf" : "",
		conf ? "MEMPOLICYD.CONF" : "MEMPOLICYD", conf ? 5 : 8, MPD_VERSION,
		conf ? "File Formats" : "System Administration");
	if (conf)
		fputs("mempolicyd.conf \\- configuration of mempolicyd\n.SH DESCRIPTION\n"
		      "One setting per line, \\fIkey\\fR = \\fIvalue\\fR; '#' starts a comment. The keys are "
		      "the daemon's options without the dashes; an option on the command line overrides the "
		      "file. An unknown key, a line longer than 1023 bytes or a line with a NUL byte is an "
		      "error: the daemon does not start.\n.SH SETTINGS\n", f);
	else
		fputs("mempolicyd \\- NUMA memory\\-placement control plane\n.SH SYNOPSIS\n.B mempolicyd\n"
		      "[\\fIoptions\\fR]\n.SH DESCRIPTION\nControls THP settings and hugetlb pools through a "
		      "REST API on a Unix socket, recording every change in an SQLite database. Under "
		      "systemd it takes the socket of mempolicyd.socket and reports readiness (Type=notify). "
		      "\\fBGET /metrics\\fR serves Prometheus metrics.\n.SH OPTIONS\n", f);
	for (size_t i = 0; i < sizeof opt_docs / sizeof opt_docs[0]; i++) {
		const struct opt_doc *d = &opt_docs[i];
		if (conf && !d->conf)
			continue;
		fprintf(f, ".TP\n\\fB%s", conf ? "" : "\\-\\-");
		roff(f, d->name);
		fputs("\\fR", f);
		if (d->arg) {
			fputs(conf ? " = \\fI" : " \\fI", f);
			roff(f, d->arg);
			fputs("\\fR", f);
		}
		fputc('\n', f);
		roff(f, d->help);
		if (d->def >= 0)
			fprintf(f, " (default %d)", d->def);
		fputc('\n', f);
	}
	fprintf(f, ".SH FILES\n.TP\n/etc/mempolicyd/mempolicyd.conf\n.TP\n%s\n.SH SEE ALSO\n.BR mempolicyctl (1),\n"
		   ".BR %s (%d)\n", DEFAULT_DB, conf ? "mempolicyd" : "mempolicyd.conf", conf ? 8 : 5);
}

static char **config_slot(struct config *c, int opt)
{
	switch (opt) {
	case 's': return &c->socket;
	case 'd': return &c->db;
	case 'S': return &c->sysfs_root;
	case 'P': return &c->procfs_root;
	case 't': return &c->listen_tcp;
	case 'g': return &c->admin_group;
	case 'u': return &c->user;
	case 'Z': return &c->seccomp;
	case 'l': return &c->log_level;
	case 'F': return &c->log_format;
	case 'M': return &c->probe_share;
	case 'D': return &c->profiles_dir;
	case 'p': return &c->profile;
	case OPT_DRIFT: return &c->drift_check;
	case 'N': return &c->node_labels_file;
	case 'C': return &c->tls_cert;
	case 'K': return &c->tls_key;
	case 'A': return &c->tls_client_ca;
	case OPT_LIMIT + 0: case OPT_LIMIT + 1: case OPT_LIMIT + 2: case OPT_LIMIT + 3: case OPT_LIMIT + 4:
	case OPT_LIMIT + 5: case OPT_LIMIT + 6:
		return &c->limit[opt - OPT_LIMIT];
	case OPT_KEEP + 0: case OPT_KEEP + 1: case OPT_KEEP + 2: case OPT_KEEP + 3: case OPT_KEEP + 4:
	case OPT_KEEP + 5:
		return &c->keep[opt - OPT_KEEP];
	default:  return NULL;
	}
}

static void config_set(struct config *c, int opt, const char *val)
{
	char **slot = config_slot(c, opt);
	free(*slot);
	*slot = strdup(val);
}

static char *trim(char *s)
{
	char *end;
	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

#define CONFIG_LINE_MAX 1023

/* Reads key=value lines; '#' starts a comment. Unknown keys are an error, not a silent no-op.
 * Lines are read whole: a line longer than CONFIG_LINE_MAX (comments too) or holding a NUL is
 * refused, never split, because the tail of a split line would be read as a setting. */
static int config_file(struct config *c, const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;     /* owned, grown by getline */
	size_t cap = 0;
	ssize_t n;
	int lineno = 0, rc = 0;

	if (!f) {
		fprintf(stderr, "mempolicyd: cannot read config %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		char *p, *eq, *key, *val;
		const struct option *o;
		lineno++;
		if (memchr(line, '\0', (size_t)n)) {
			fprintf(stderr, "mempolicyd: %s:%d: the line holds a NUL byte\n", path, lineno);
			rc = -1;
			continue;
		}
		if (n - (line[n - 1] == '\n') > CONFIG_LINE_MAX) {
			fprintf(stderr, "mempolicyd: %s:%d: the line is longer than %d bytes\n", path, lineno,
				CONFIG_LINE_MAX);
			rc = -1;
			continue;
		}
		p = trim(line);
		if (!*p || *p == '#')
			continue;
		if (!(eq = strchr(p, '='))) {
			fprintf(stderr, "mempolicyd: %s:%d: expected key = value\n", path, lineno);
			rc = -1;
			continue;
		}
		*eq = '\0';
		key = trim(p);
		val = trim(eq + 1);
		for (o = long_opts; o->name; o++)
			if (!strcmp(o->name, key) && config_slot(c, o->val))
				break;
		if (!o->name) {
			fprintf(stderr, "mempolicyd: %s:%d: unknown setting '%s'\n", path, lineno, key);
			rc = -1;
			continue;
		}
		config_set(c, o->val, val);
	}
	free(line);
	fclose(f);
	return rc;
}

int config_limits(const struct config *c, struct conn_limits *l)
{
	unsigned *field[7] = { &l->max_connections, &l->max_per_uid, &l->admin_reserve, &l->idle_timeout_s,
			       &l->request_timeout_s, &l->auth_fails, &l->max_per_address };
	mp_err e = { 0 };

	conn_limits_default(l);
	for (int i = 0; i < 7; i++) {
		uint64_t v;
		if (!c->limit[i])
			continue;
		if (parse_u64(c->limit[i], &v) < 0 || v > 1000000) {
			fprintf(stderr, "mempolicyd: %s wants a number up to 1000000, not '%s'\n", limit_names[i],
				c->limit[i]);
			return -1;
		}
		*field[i] = (unsigned)v;
	}
	if (conn_limits_check(l, &e) < 0) {
		fprintf(stderr, "mempolicyd: %s\n", e.detail);
		return -1;
	}
	return 0;
}

/* A size option's value in bytes: "0" (off), or what parse_size_kb takes. 0 or -1. */
static int keep_size(const char *text, uint64_t *bytes)
{
	uint64_t kb;

	if (!strcmp(text, "0")) {
		*bytes = 0;
		return 0;
	}
	if (parse_size_kb(text, &kb) < 0 || kb > UINT64_MAX / 1024)
		return -1;
	*bytes = kb * 1024;
	return 0;
}

int config_keep(const struct config *c, struct app *app)
{
	uint64_t v[NKEEP];

	for (int i = 0; i < NKEEP; i++) {
		v[i] = keep_opts[i].def;
		if (!c->keep[i])
			continue;
		if (keep_opts[i].size) {
			if (keep_size(c->keep[i], &v[i]) < 0 || (v[i] && (v[i] < keep_opts[i].min || v[i] > keep_opts[i].max))) {
				fprintf(stderr, "mempolicyd: %s wants 0 or a size from 1M to 1024G (bytes, or with k, M "
					"or G), not '%s'\n", keep_opts[i].name, c->keep[i]);
				return -1;
			}
		} else if (parse_u64(c->keep[i], &v[i]) < 0 || v[i] < keep_opts[i].min || v[i] > keep_opts[i].max) {
			fprintf(stderr, "mempolicyd: %s wants a number from %llu to %llu, not '%s'\n", keep_opts[i].name,
				(unsigned long long)keep_opts[i].min, (unsigned long long)keep_opts[i].max, c->keep[i]);
			return -1;
		}
	}
	app->max_schedules = (int64_t)v[0];
	app->retain = (struct retention){
		.max_age_ns = (int64_t)v[1] * 86400 * 1000000000LL,
		.max_operations = (int64_t)v[2],
		.max_batches = (int64_t)v[3],
		.max_jobs = (int64_t)v[4],
		.max_bytes = (int64_t)v[5],
	};
	return 0;
}

void config_free(struct config *c)
{
	for (const struct option *o = long_opts; o->name; o++) {
		char **slot = config_slot(c, o->val);
		if (slot)
			free(*slot);
	}
	free(c->test_clock);
	free(c->test_job_workers);
}

int config_parse_args(int argc, char **argv, struct config *c)
{
	int opt;

	/* First pass: only --config, so that the command line overrides the file. */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1)
		if (opt == 'c' && config_file(c, optarg) < 0)
			return 2;
	optind = 1;
	opterr = 1;
	while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("mempolicyd %s\n", MPD_VERSION);
			return 0;
		case 'E':
			return api_list_errors(stdout) < 0 ? 1 : 0;
		case OPT_LIST:
			return ops_list_kinds(stdout) < 0 ? 1 : 0;
		case OPT_LIST + 1:
			return job_reasons_list(stdout) < 0 ? 1 : 0;
		case OPT_LIST + 2:
			return oplog_list_ids(stdout) < 0 ? 1 : 0;
		case 'T':
			free(c->test_clock);
			c->test_clock = strdup(optarg);
			break;
		case 'J':
			free(c->test_job_workers);
			c->test_job_workers = strdup(optarg);
			break;
		case OPT_NO_SECCOMP:
			config_set(c, 'Z', "false");
			break;
		case OPT_MAN:
		case OPT_MAN + 1:
			man(stdout, opt == OPT_MAN + 1);
			return ferror(stdout) ? 1 : 0;
		case '?':
			usage(stderr);
			return 2;
		default:
			config_set(c, opt, optarg);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mempolicyd: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	return -1;
}

