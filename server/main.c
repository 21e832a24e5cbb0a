/* mempolicyd: options, start-up, signals, shutdown. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/api/api.h"
#include "server/app.h"
#include "server/jobs/jobs.h"
#include "server/jobs/scheduler.h"
#include "server/kernel/knobs.h"
#include "server/log.h"
#include "server/ops/children.h"
#include "server/ops/kinds.h"
#include "server/ops/schedules.h"
#include "server/store/db.h"
#include "server/store/history.h"

#define DEFAULT_SOCKET "/run/mempolicyd/mempolicyd.sock"
#define DEFAULT_DB     "/var/lib/mempolicyd/mempolicyd.db"

/* Every option, and the name it has in the config file (the same, without the dashes). */
struct config {
	char *socket;         /* owned (strdup), as is every string here */
	char *db;
	char *sysfs_root;
	char *procfs_root;
	char *listen_tcp;     /* NULL: no TCP listener */
	char *admin_group;    /* NULL: only root may change things */
	char *log_level;
};

static const struct option long_opts[] = {
	{ "config",      required_argument, NULL, 'c' },
	{ "socket",      required_argument, NULL, 's' },
	{ "db",          required_argument, NULL, 'd' },
	{ "sysfs-root",  required_argument, NULL, 'S' },
	{ "procfs-root", required_argument, NULL, 'P' },
	{ "listen-tcp",  required_argument, NULL, 't' },
	{ "admin-group", required_argument, NULL, 'g' },
	{ "log-level",   required_argument, NULL, 'l' },
	{ "help",        no_argument,       NULL, 'h' },
	{ "version",     no_argument,       NULL, 'V' },
	{ "list-errors", no_argument,       NULL, 'E' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mempolicyd [options]\n"
		"\n"
		"  --config PATH        key=value file with the options below (without the dashes)\n"
		"  --socket PATH        Unix socket to serve the API on (default " DEFAULT_SOCKET ")\n"
		"  --db PATH            SQLite database (default " DEFAULT_DB ")\n"
		"  --sysfs-root DIR     where sysfs is (default /sys)\n"
		"  --procfs-root DIR    where procfs is (default /proc)\n"
		"  --listen-tcp A:P     also serve read-only HTTP on a loopback address, e.g. 127.0.0.1:8700\n"
		"  --admin-group NAME   members of this group may change settings (root always may)\n"
		"  --log-level LEVEL    error, warn, info (default) or debug\n"
		"  --list-errors        every problem code the API can answer with: code, status, kind, meaning\n"
		"  --help, --version\n");
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
	case 'l': return &c->log_level;
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

/* Reads key=value lines; '#' starts a comment. Unknown keys are an error, not a silent no-op. */
static int config_file(struct config *c, const char *path)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	int lineno = 0, rc = 0;

	if (!f) {
		fprintf(stderr, "mempolicyd: cannot read config %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof line, f)) {
		char *p = trim(line), *eq, *key, *val;
		const struct option *o;
		lineno++;
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
	fclose(f);
	return rc;
}

static void config_free(struct config *c)
{
	for (const struct option *o = long_opts; o->name; o++) {
		char **slot = config_slot(c, o->val);
		if (slot)
			free(*slot);
	}
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

/* mkdir -p for the directory that will hold path (socket, database). */
static void make_parent(const char *path)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(dir, 0755);
		*p = '/';
	}
}

int main(int argc, char **argv)
{
	struct config cfg = { 0 };
	struct app app = { 0 };
	struct http *http = NULL;
	mp_err e = { 0 };
	sigset_t sigs;
	int sig, n, rc = 1;
	int64_t started_ns = store_now_ns();   /* operations older than this are a previous daemon's */

	if ((rc = parse_args(argc, argv, &cfg)) >= 0)
		goto out;
	rc = 1;
	if (!cfg.socket) cfg.socket = strdup(DEFAULT_SOCKET);
	if (!cfg.db) cfg.db = strdup(DEFAULT_DB);
	if (!cfg.sysfs_root) cfg.sysfs_root = strdup("/sys");
	if (!cfg.procfs_root) cfg.procfs_root = strdup("/proc");
	if (cfg.log_level && log_set_level(cfg.log_level) < 0) {
		fprintf(stderr, "mempolicyd: unknown log level '%s' (error, warn, info, debug)\n", cfg.log_level);
		rc = 2;
		goto out;
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

	/* Signals are taken by sigwait() in this thread only; every thread started below inherits
	 * the blocked mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	caps_detect(&app.caps, app.sysfs_root, app.procfs_root);
	if (!(app.knobs = knobs_build(app.sysfs_root, app.procfs_root))) {
		mp_fail(&e, MPE_INTERNAL_NOMEM, 0, "out of memory building the knob catalogue");
		goto fail;
	}
	make_parent(cfg.db);
	if (!(app.store = store_open(cfg.db, &e)))
		goto fail;
	make_parent(cfg.socket);
	if (!(app.jobs = jobs_open(&app, &e)))
		goto fail;
	if (ops_register_kinds(app.jobs, &e) < 0)
		goto fail;
	if (!(app.children = children_open(&app, &e)))
		goto fail;
	if (!(http = http_start(&app, cfg.socket, cfg.listen_tcp, &e)))
		goto fail;
	/* Recovery marks what a previous daemon left running "interrupted": only once the socket is
	 * ours, so that a second daemon refused on the same socket cannot touch the first one's jobs. */
	if (jobs_start(app.jobs, 2, &e) < 0)
		goto fail;
	if ((n = history_mark_unfinished(app.store, started_ns, store_now_ns(), &e)) < 0)
		goto fail;
	if (n > 0)
		log_warn("%d operation(s) left unfinished by the previous daemon: marked interrupted", n);
	/* The scheduler submits jobs: it starts after the job runner, and only once the socket is
	 * ours (a second daemon refused on the same socket must not run schedules). */
	if (!(app.scheduler = scheduler_start(&app, schedule_fire, &e)))
		goto fail;
	log_info("mempolicyd %s listening on %s%s%s (kernel %s, sysfs %s, db %s)", MPD_VERSION, cfg.socket,
		 cfg.listen_tcp ? " and " : "", cfg.listen_tcp ? cfg.listen_tcp : "", app.caps.kernel_release,
		 app.sysfs_root, cfg.db);

	for (;;) {
		if (sigwait(&sigs, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			log_info("SIGHUP: nothing to reload (the configuration is read at start)");
			continue;
		}
		log_info("signal %d: stopping", sig);
		break;
	}
	rc = 0;
	goto out;
fail:
	log_error("%s", e.detail);
out:
	http_stop(http);
	children_close(app.children);   /* after the listeners: no launch adds a child any more */
	scheduler_stop(app.scheduler);
	jobs_close(app.jobs);
	store_close(app.store);
	knobs_free(app.knobs);
	config_free(&cfg);
	return rc;
}
