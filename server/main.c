/* mempolicyd: options, start-up, signals, shutdown. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/parse.h"
#include "server/api/api.h"
#include "server/api/auth.h"
#include "server/api/conn.h"
#include "server/api/tls.h"
#include "server/app.h"
#include "server/clock.h"
#include "server/instance.h"
#include "server/jobs/jobs.h"
#include "server/jobs/maint.h"
#include "server/jobs/scheduler.h"
#include "server/kernel/knobs.h"
#include "server/kernel/priv.h"
#include "server/kernel/sandbox.h"
#include "server/log.h"
#include "server/sd.h"
#include "server/statedir.h"
#include "server/ops/children.h"
#include "server/ops/kinds.h"
#include "server/ops/probes.h"
#include "server/ops/restore.h"
#include "server/probes/probe.h"
#include "server/ops/schedules.h"
#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/metrics_seed.h"

#define DEFAULT_SOCKET "/run/mempolicyd/mempolicyd.sock"
#define DEFAULT_DB     "/var/lib/mempolicyd/mempolicyd.db"
/* Started as root, the daemon separates privileges by default; --user root is the one way to keep
 * a single process (a machine without the user, a test that needs one process). */
#define DEFAULT_USER   "mempolicyd"

/* Every option, and the name it has in the config file (the same, without the dashes). */
struct config {
	char *socket;         /* owned (strdup), as is every string here */
	char *db;
	char *sysfs_root;
	char *procfs_root;
	char *listen_tcp;     /* NULL: no TCP listener */
	char *tls_cert;       /* with tls_key: the TCP listener speaks TLS (api/tls.h) */
	char *tls_key;
	char *tls_client_ca;  /* NULL: no client certificates asked for */
	char *admin_group;    /* NULL: only root may change things */
	char *user;           /* NULL: no privilege separation (server/kernel/priv.h); set by main() */
	char *seccomp;        /* "true" or "false" as written; NULL: true (server/kernel/sandbox.h) */
	char *log_level;
	char *test_clock;     /* command line only, never from a config file (server/clock.h) */
	char *limit[6];       /* max-connections ... auth-failures-per-minute, as written; NULL: default */
	char *keep[5];        /* max-schedules, retain-*: as written; NULL: default */
	char *probe_share;    /* probe-memory-share, as written; NULL: PROBE_DEFAULT_MEM_PCT */
};

/* The numeric limits (api/conn.h): option value OPT_LIMIT + i is limit[i]. */
#define OPT_LIMIT 256
static const char *const limit_names[6] = {
	"max-connections", "max-connections-per-uid", "admin-reserve", "idle-timeout", "request-timeout",
	"auth-failures-per-minute",
};

/* The collections' caps and retention (store/retain.h): option OPT_KEEP + i is keep[i]. A value
 * of 0 switches a retain-* bound off (keep regardless); max-schedules is at least 1. */
#define OPT_KEEP 320
static const struct {
	const char *name;
	uint64_t def, min, max;
} keep_opts[5] = {
	{ "max-schedules",     1000,                      1, 100000 },
	{ "retain-days",       RETAIN_DEFAULT_DAYS,       0, 36500 },
	{ "retain-operations", RETAIN_DEFAULT_OPERATIONS, 0, 1000000000 },
	{ "retain-batches",    RETAIN_DEFAULT_BATCHES,    0, 1000000000 },
	{ "retain-jobs",       RETAIN_DEFAULT_JOBS,       0, 1000000000 },
};

/* --man and --man-conf: values no short option or other table uses. */
#define OPT_MAN 400
/* --no-seccomp: the command line's spelling of seccomp = false (no config key of its own). */
#define OPT_NO_SECCOMP 402

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
	{ "max-connections",         required_argument, NULL, OPT_LIMIT + 0 },
	{ "max-connections-per-uid", required_argument, NULL, OPT_LIMIT + 1 },
	{ "admin-reserve",           required_argument, NULL, OPT_LIMIT + 2 },
	{ "idle-timeout",            required_argument, NULL, OPT_LIMIT + 3 },
	{ "request-timeout",         required_argument, NULL, OPT_LIMIT + 4 },
	{ "auth-failures-per-minute", required_argument, NULL, OPT_LIMIT + 5 },
	{ "max-schedules",           required_argument, NULL, OPT_KEEP + 0 },
	{ "retain-days",             required_argument, NULL, OPT_KEEP + 1 },
	{ "retain-operations",       required_argument, NULL, OPT_KEEP + 2 },
	{ "retain-batches",          required_argument, NULL, OPT_KEEP + 3 },
	{ "retain-jobs",             required_argument, NULL, OPT_KEEP + 4 },
	{ "probe-memory-share", required_argument, NULL, 'M' },
	{ "help",        no_argument,       NULL, 'h' },
	{ "version",     no_argument,       NULL, 'V' },
	{ "list-errors", no_argument,       NULL, 'E' },
#ifdef MPD_TEST_HOOKS
	{ "test-clock",  required_argument, NULL, 'T' },
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
	{ "max-connections", "N", "connections per listener", CONN_DEFAULT_MAX, true },
	{ "max-connections-per-uid", "N", "Unix socket connections one user may hold, unless root or admin",
	  CONN_DEFAULT_PER_UID, true },
	{ "admin-reserve", "N", "of max-connections, kept for root and the admin group", CONN_DEFAULT_RESERVE, true },
	{ "idle-timeout", "S", "close a connection silent for S seconds", CONN_DEFAULT_IDLE_TIMEOUT, true },
	{ "request-timeout", "S", "close a connection whose request (headers and body) takes longer",
	  CONN_DEFAULT_REQUEST_TIMEOUT, true },
	{ "auth-failures-per-minute", "N", "TLS: failed authentications one peer address may make in a minute before "
	  "it is refused (429) for the rest of it", AUTH_DEFAULT_FAILS, true },
	{ "max-schedules", "N", "schedules the daemon holds at most", 1000, true },
	{ "retain-days", "N", "history, batches and finished jobs older than N days are removed (0: by count only)",
	  RETAIN_DEFAULT_DAYS, true },
	{ "retain-operations", "N", "history operations kept at most, newest first (0: no cap)",
	  RETAIN_DEFAULT_OPERATIONS, true },
	{ "retain-batches", "N", "resize batch rows kept at most (0: no cap)", RETAIN_DEFAULT_BATCHES, true },
	{ "retain-jobs", "N", "finished jobs kept at most (0: no cap)", RETAIN_DEFAULT_JOBS, true },
	{ "probe-memory-share", "PCT", "a probe may take at most this share of free memory", PROBE_DEFAULT_MEM_PCT,
	  true },
	{ "help", NULL, "this help", -1, false },
	{ "version", NULL, "the daemon's version", -1, false },
	{ "list-errors", NULL, "every problem code the API can answer with: code, status, kind, meaning", -1, false },
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
		"  --test-clock FILE    the wall clock reads FILE (ns since the epoch), again on SIGUSR2\n");
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
	fprintf(f, ".\\\" Generated by `mempolicyd --man%s` from server/main.c: do not edit.\n"
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
	fprintf(f, ".SH FILES\n.TP\n/etc/mempolicyd/mempolicyd.conf\n.TP\n%s\n.SH SEE ALSO\n.BR mempolicyctl (8),\n"
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
	case 'M': return &c->probe_share;
	case 'C': return &c->tls_cert;
	case 'K': return &c->tls_key;
	case 'A': return &c->tls_client_ca;
	case OPT_LIMIT + 0: case OPT_LIMIT + 1: case OPT_LIMIT + 2: case OPT_LIMIT + 3: case OPT_LIMIT + 4:
	case OPT_LIMIT + 5:
		return &c->limit[opt - OPT_LIMIT];
	case OPT_KEEP + 0: case OPT_KEEP + 1: case OPT_KEEP + 2: case OPT_KEEP + 3: case OPT_KEEP + 4:
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

/* The limits as numbers: defaults, then what the options and the file said. 0, or -1 with the
 * reason on stderr. */
static int config_limits(const struct config *c, struct conn_limits *l)
{
	unsigned *field[6] = { &l->max_connections, &l->max_per_uid, &l->admin_reserve, &l->idle_timeout_s,
			       &l->request_timeout_s, &l->auth_fails };
	mp_err e = { 0 };

	conn_limits_default(l);
	for (int i = 0; i < 6; i++) {
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

/* The caps and the retention rule as numbers into app. 0, or -1 with the reason on stderr. */
static int config_keep(const struct config *c, struct app *app)
{
	uint64_t v[5];

	for (int i = 0; i < 5; i++) {
		v[i] = keep_opts[i].def;
		if (c->keep[i] && (parse_u64(c->keep[i], &v[i]) < 0 || v[i] < keep_opts[i].min || v[i] > keep_opts[i].max)) {
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
	};
	return 0;
}

static void config_free(struct config *c)
{
	for (const struct option *o = long_opts; o->name; o++) {
		char **slot = config_slot(c, o->val);
		if (slot)
			free(*slot);
	}
	free(c->test_clock);
}

static int parse_args(int argc, char **argv, struct config *c)
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
		case 'T':
			free(c->test_clock);
			c->test_clock = strdup(optarg);
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

#ifdef MPD_TEST_HOOKS
/* SIGUSR2 with --test-clock: the clock takes the file's time, and the scheduler, which waits for
 * this rather than for a time, runs a pass at it and says so in the log (server/clock.h). */
static void test_clock_moved(const struct app *app, struct maint *maint)
{
	mp_err e = { 0 };

	if (clk_test_reload(&e) < 0) {
		log_error("SIGUSR2: %s; the clock stays at %lld", e.detail, (long long)clk_wall_ns());
		return;
	}
	log_info("test clock: now %lld", (long long)clk_wall_ns());
	scheduler_kick(app->scheduler);
	maint_kick(maint);
}
#endif

/* The serving side's seccomp filter, unless switched off. A kernel without seccomp filters is
 * logged and served without one: the filter narrows what a compromised serving side can reach,
 * the privilege drop before it is the boundary, and a daemon that refused to start there would
 * leave the host's pools unmanaged for a defence in depth (docs/DESIGN.md, Security). */
static int serving_sandbox(bool on, mp_err *e)
{
	int rc;

	if (!on) {
		log_warn("seccomp = false: the serving process runs without its seccomp filter");
		return 0;
	}
	if ((rc = sandbox_serving(e)) < 0)
		return -1;
	if (rc == SANDBOX_UNSUPPORTED)
		log_warn("seccomp: this kernel has no seccomp filters; serving without one");
	else
		log_info("seccomp: the serving process refuses exec, ptrace, memory policy, mounts and identity changes%s",
			 SANDBOX_KEEPS_PTRACE ? " (a sanitizer build: ptrace stays allowed for LeakSanitizer)" : "");
	return 0;
}

int main(int argc, char **argv)
{
	struct config cfg = { 0 };
	struct app app = { 0 };
	struct conn_limits lim;
	struct http *http = NULL;
	struct maint *maint = NULL;
	struct tls_files tls = { 0 };   /* owned until http_listen takes it */
	struct priv_user user;
	mp_err e = { 0 };
	sigset_t sigs;
	int sig, n, rc = 1, lock_fd = -1, unix_fd = -1;
	uint64_t watchdog_usec;

	/* A probe's child (ops/probe_child.c): the daemon's own binary, exec'd to run one workload. */
	if (argc >= 2 && !strcmp(argv[1], "--probe-child"))
		return probe_child_main(argc, argv);
	if ((rc = parse_args(argc, argv, &cfg)) >= 0)
		goto out;
	rc = 1;
	if (!cfg.socket) cfg.socket = strdup(DEFAULT_SOCKET);
	if (!cfg.db) cfg.db = strdup(DEFAULT_DB);
	if (!cfg.sysfs_root) cfg.sysfs_root = strdup("/sys");
	if (!cfg.procfs_root) cfg.procfs_root = strdup("/proc");
	if (!cfg.user && geteuid() == 0) cfg.user = strdup(DEFAULT_USER);
	if (cfg.user && !strcmp(cfg.user, "root")) {
		free(cfg.user);
		cfg.user = NULL;
	}
	if (cfg.log_level && log_set_level(cfg.log_level) < 0) {
		fprintf(stderr, "mempolicyd: unknown log level '%s' (error, warn, info, debug)\n", cfg.log_level);
		rc = 2;
		goto out;
	}
	if (cfg.seccomp && strcmp(cfg.seccomp, "true") && strcmp(cfg.seccomp, "false")) {
		fprintf(stderr, "mempolicyd: seccomp wants true or false, not '%s'\n", cfg.seccomp);
		rc = 2;
		goto out;
	}
	if (config_limits(&cfg, &lim) < 0 || config_keep(&cfg, &app) < 0) {
		rc = 2;
		goto out;
	}
	app.probe_mem_pct = PROBE_DEFAULT_MEM_PCT;
	if (cfg.probe_share) {
		uint64_t v;
		if (parse_u64(cfg.probe_share, &v) < 0 || v < 1 || v > 90) {
			fprintf(stderr, "mempolicyd: probe-memory-share wants a percentage from 1 to 90, not '%s'\n",
				cfg.probe_share);
			rc = 2;
			goto out;
		}
		app.probe_mem_pct = (unsigned)v;
	}
	app.sysfs_root = cfg.sysfs_root;
	app.procfs_root = cfg.procfs_root;
	if (cfg.admin_group) {
		struct group *g = getgrnam(cfg.admin_group);
		if (!g) {
			fprintf(stderr, "mempolicyd: no such group '%s'\n", cfg.admin_group);
			rc = 2;
			goto out;
		}
		app.have_admin_gid = true;
		app.admin_gid = g->gr_gid;
	}
#ifdef MPD_TEST_HOOKS
	if (cfg.test_clock) {
		if (clk_test_open(cfg.test_clock, &e) < 0) {
			fprintf(stderr, "mempolicyd: %s\n", e.detail);
			rc = 2;
			goto out;
		}
		log_warn("test clock: the wall clock reads %s (now %lld), again on SIGUSR2; a test build only",
			 cfg.test_clock, (long long)clk_wall_ns());
	}
#endif

	/* Signals are taken by sigwait() in this thread only; every thread started below inherits
	 * the blocked mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	if (clk_is_test())
		sigaddset(&sigs, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* The TLS files are read here, once: they may be root's only, and nothing reads them later. */
	if (cfg.tls_cert || cfg.tls_key || cfg.tls_client_ca) {
		if (!cfg.tls_cert || !cfg.tls_key || !cfg.listen_tcp) {
			mp_fail(&e, MPE_CONFIG_TLS, 0, "TLS needs --tls-cert, --tls-key and --listen-tcp together "
				"(--tls-client-ca is optional)");
			goto fail;
		}
		if (tls_files_load(&tls, cfg.tls_cert, cfg.tls_key, cfg.tls_client_ca, &e) < 0)
			goto fail;
	}
	/* Before anything opens a file: limits the daemon cannot keep are a refusal to start. */
	if (conn_raise_nofile(&lim, cfg.listen_tcp ? 2 : 1, &e) < 0)
		goto fail;
	caps_detect(&app.caps, app.sysfs_root, app.procfs_root);
	if (!(app.knobs = knobs_build(app.sysfs_root, app.procfs_root))) {
		mp_fail(&e, MPE_INTERNAL_NOMEM, 0, "out of memory building the knob catalogue");
		goto fail;
	}
	if (!strcmp(cfg.socket, cfg.db)) {   /* other spellings of one path: the socket finds a file */
		mp_fail(&e, MPE_CONFIG_SOCKET, 0, "--socket and --db are the same path %s", cfg.db);
		goto fail;
	}
	if (cfg.user) {
		if (geteuid() != 0) {
			mp_fail(&e, MPE_CONFIG_USER, EPERM, "--user %s: privilege separation needs the daemon started as root",
				cfg.user);
			goto fail;
		}
		if (priv_lookup_user(cfg.user, &user, &e) < 0 || statedir_prepare(cfg.db, DEFAULT_DB, &user, &e) < 0)
			goto fail;
		/* Before the store and before any thread: the helper is a fork of this image, holding the
		 * knob catalogue and the roots, and nothing else of the daemon. */
		if (priv_start(app.knobs, app.sysfs_root, app.procfs_root, &e) < 0)
			goto fail;
	} else {
		statedir_mkparents(cfg.db);
	}
	if ((lock_fd = instance_lock(cfg.db, &e)) < 0)
		goto fail;
	/* The socket is ours from here: a second daemon started on it is refused (by the lock above)
	 * before it can mark the first one's jobs interrupted or run its schedules. Nothing is
	 * answered yet; a client that connects now waits in the backlog until app is complete. It is
	 * made before privileges are dropped: its directory may be root's. Under systemd the socket
	 * unit's socket is taken instead (server/sd.c). */
	statedir_mkparents(cfg.socket);
	mp_err_clear(&e);
	if ((unix_fd = sd_inherited_unix(cfg.socket, &e)) < 0 && e.code)
		goto fail;
	if (!(http = http_listen(cfg.socket, unix_fd, cfg.listen_tcp, cfg.tls_cert ? &tls : NULL, &lim, &e)))
		goto fail;
	if (cfg.user) {
		if (priv_drop(&user, &e) < 0 || statedir_check(cfg.db, &user, &e) < 0)
			goto fail;
		log_info("privilege separation: serving as %s (uid %d) with no capabilities; kernel writes by the helper",
			 user.name, (int)user.uid);
		/* Before any thread starts (the store, the job runner and libmicrohttpd start theirs
		 * below): where seccomp(2) is filtered (systemd) only the calling thread can be. */
		if (serving_sandbox(!cfg.seccomp || !strcmp(cfg.seccomp, "true"), &e) < 0)
			goto fail;
	} else if (geteuid() == 0) {
		log_warn("no privilege separation (--user root): the HTTP side, decoders and store run as root; no "
			 "seccomp filter (this process launches programs and sets memory policy itself)");
	}
	sd_say("STATUS=opening and migrating the database %s", cfg.db);
	if (!(app.store = store_open(cfg.db, &e)))
		goto fail;
	/* Before anything writes history (restore, the job runner's recovery): metrics_seed.c says why. */
	if (store_metrics_seed(app.store, &e) < 0)
		goto fail;
	/* What a probe changed and a dead daemon did not put back, before anyone can ask for anything. */
	if ((n = restore_at_start(&app, &e)) < 0)
		goto fail;
	if (n > 0)
		log_warn("%d value(s) a probe of the previous daemon changed: restored (probe.restore in history)", n);
	if (!(app.jobs = jobs_open(&app, &e)))
		goto fail;
	if (ops_register_kinds(app.jobs, &e) < 0)
		goto fail;
	if (!(app.children = children_open(&app, &e)))
		goto fail;
	sd_say("STATUS=recovering what the previous daemon left unfinished");
	if (jobs_start(app.jobs, 2, &e) < 0)
		goto fail;
	if ((n = history_mark_unfinished(app.store, clk_wall_ns(), &e)) < 0)
		goto fail;
	if (n > 0)
		log_warn("%d operation(s) left unfinished by the previous daemon: marked interrupted", n);
	/* The scheduler submits jobs: it starts after the job runner. */
	if (!(app.scheduler = scheduler_start(&app, schedule_fire, &e)))
		goto fail;
	/* Retention after recovery: what recovery marks interrupted is finished, and may then age out. */
	if (!(maint = maint_start(app.store, &app.retain, &e)))
		goto fail;
	/* app is complete, and read-only from here on (server/app.h): request threads start now. */
	if (http_serve(http, &app, &e) < 0)
		goto fail;
	log_info("mempolicyd %s listening on %s%s%s%s (kernel %s, sysfs %s, db %s)", MPD_VERSION, cfg.socket,
		 cfg.listen_tcp ? " and " : "", cfg.listen_tcp ? cfg.listen_tcp : "",
		 cfg.listen_tcp ? (cfg.tls_cert ? (cfg.tls_client_ca ? " (TLS, client certificates)" : " (TLS)")
					       : " (plain, read-only)") : "", app.caps.kernel_release,
		 app.sysfs_root, cfg.db);
	/* Ready: migrated, recovered, serving. systemd orders dependants (and socket clients) after this. */
	sd_say("READY=1\nSTATUS=serving on %s%s%s", cfg.socket, cfg.listen_tcp ? " and " : "",
	       cfg.listen_tcp ? cfg.listen_tcp : "");

	/* With WatchdogSec=, the main thread pings at half the interval; it is the thread that would
	 * be stuck if shutdown or a signal handler hung. */
	watchdog_usec = sd_watchdog_usec();
	for (;;) {
		if (watchdog_usec) {
			struct timespec ts = { (time_t)(watchdog_usec / 2000000), (long)(watchdog_usec / 2 % 1000000) * 1000 };
			sig = sigtimedwait(&sigs, NULL, &ts);
			if (sig < 0) {
				if (errno == EAGAIN)
					sd_say("WATCHDOG=1");
				continue;
			}
		} else if (sigwait(&sigs, &sig) != 0) {
			continue;
		}
		if (sig == SIGHUP) {
			/* The configuration is read only at start; SIGHUP runs retention now (after an export). */
			log_info("SIGHUP: a retention pass now (the configuration is read only at start)");
			maint_kick(maint);
			continue;
		}
#ifdef MPD_TEST_HOOKS
		if (sig == SIGUSR2) {
			test_clock_moved(&app, maint);
			continue;
		}
#endif
		log_info("signal %d: stopping", sig);
		sd_say("STOPPING=1\nSTATUS=stopping (signal %d)", sig);
		break;
	}
	rc = 0;
	goto out;
fail:
	log_error("%s", e.detail);
	sd_say("STATUS=failed: %s", e.detail);
out:
	http_stop(http);
	children_close(app.children);   /* after the listeners: no launch adds a child any more */
	scheduler_stop(app.scheduler);
	maint_stop(maint);
	jobs_close(app.jobs);
	store_close(app.store);
	if (lock_fd >= 0)
		close(lock_fd);   /* after the database is closed: the next daemon may have it */
	priv_stop();   /* after everything that may still ask it something */
	knobs_free(app.knobs);
	tls_files_free(&tls);
	config_free(&cfg);
#ifdef MPD_TEST_HOOKS
	clk_test_close();
#endif
	return rc;
}
