/* mempolicyd's options: the one table behind the command line, the config file, --help and the
 * man pages mempolicyd(8) and mempolicyd.conf(5), so none of them can drift from the others. */
#ifndef MPD_SERVER_CONFIG_H
#define MPD_SERVER_CONFIG_H

#include "server/api/conn.h"
#include "server/app.h"

#define DEFAULT_SOCKET "/run/mempolicyd/mempolicyd.sock"
#define DEFAULT_DB     "/var/lib/mempolicyd/mempolicyd.db"
/* Started as root, the daemon separates privileges by default; --user root is the one way to keep
 * a single process (a machine without the user, a test that needs one process). */
#define DEFAULT_USER   "mempolicyd"
#define DEFAULT_PROFILES_DIR "/etc/mempolicyd/profiles.d"

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
	char *user;           /* NULL: no privilege separation (server/priv/priv.h); set by main() */
	char *seccomp;        /* "true" or "false" as written; NULL: true (server/kernel/sandbox.h) */
	char *log_level;
	char *log_format;
	char *test_clock;     /* command line only, never from a config file (server/clock.h) */
	char *test_job_workers; /* test builds, command line only: the job runner's workers; NULL: 2 */
	char *limit[7];       /* max-connections ... max-connections-per-address, as written; NULL: default */
	char *keep[6];        /* max-schedules, retain-*: as written; NULL: default */
	char *probe_share;    /* probe-memory-share, as written; NULL: PROBE_DEFAULT_MEM_PCT */
	char *profiles_dir;   /* NULL: DEFAULT_PROFILES_DIR (set by main()) */
	char *profile;        /* the active profile's name; NULL: none */
	char *drift_check;    /* drift-check-interval, as written; NULL: DRIFT_CHECK_DEFAULT_S */
};

/* The command line, and the file named by --config under it (the command line wins). Returns -1
 * to go on and start, or the exit code when it is done (--help, --version, --man, a usage error:
 * 2, said on stderr). */
int config_parse_args(int argc, char **argv, struct config *c);
/* The connection limits as numbers: defaults, then what the options and the file said. 0, or -1
 * with the reason on stderr. */
int config_limits(const struct config *c, struct conn_limits *l);
/* The caps and the retention rule as numbers into app. 0, or -1 with the reason on stderr. */
int config_keep(const struct config *c, struct app *app);
void config_free(struct config *c);

#endif
