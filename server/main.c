/* mempolicyd: options, start-up, signals, shutdown. */
#include <errno.h>
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
#include "server/api/conn.h"
#include "server/api/tls.h"
#include "server/app.h"
#include "server/clock.h"
#include "server/config.h"
#include "server/fleet/nfd.h"
#include "server/instance.h"
#include "server/jobs/jobs.h"
#include "server/jobs/maint.h"
#include "server/jobs/scheduler.h"
#include "server/kernel/knobs.h"
#include "server/kernel/mmcounters.h"
#include "server/priv/priv.h"
#include "server/kernel/sandbox.h"
#include "server/kernel/topology.h"
#include "server/log.h"
#include "server/sd.h"
#include "server/statedir.h"
#include "server/ops/children.h"
#include "server/ops/kinds.h"
#include "server/ops/labels.h"
#include "server/ops/probes.h"
#include "server/ops/drift.h"
#include "server/ops/profile_boot.h"
#include "server/ops/profile_reload.h"
#include "server/ops/profile_state.h"
#include "server/ops/profiles.h"
#include "server/ops/restore.h"
#include "server/probes/probe.h"
#include "server/ops/schedules.h"
#include "server/metrics.h"
#include "server/observe.h"
#include "server/store/db.h"
#include "server/store/events.h"
#include "server/store/history.h"
#include "server/store/metrics_seed.h"

_Static_assert(CONN_FDS_SELF == 128 + KNOBS_HELD_MAX, "api/conn.h counts the knob files kernel/knobs.h holds");

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
	labels_changed();   /* a refresh due at the new time is written now */
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

/* How long a daemon whose helper is lost keeps answering before it stops (changes 503 priv.lost,
 * /v1/health and /metrics say degraded): long enough for a client or a scrape to see why, short
 * enough that the service manager's restart comes soon. */
#define LOST_HOLD_S 5
/* The exit status then: non-zero, so that Restart=on-failure starts the daemon again. */
#define EXIT_HELPER_LOST 3

/* The helper is lost (priv_on_lost): only the main thread takes SIGUSR1, so this wakes it. */
static void wake_main(void)
{
	kill(getpid(), SIGUSR1);
}

/* The next signal of sigs, pinging the watchdog (if any) at half its interval; timeout_s > 0
 * bounds the wait (0 returned when it passes). */
static int next_signal(const sigset_t *sigs, uint64_t watchdog_usec, int64_t timeout_s)
{
	int64_t deadline = clk_mono_ns() + timeout_s * 1000000000LL;
	int sig;

	for (;;) {
		int64_t left = timeout_s > 0 ? deadline - clk_mono_ns() : INT64_MAX, wd = (int64_t)watchdog_usec * 500;
		int64_t wait = watchdog_usec && wd < left ? wd : left;
		struct timespec ts = { (time_t)(wait / 1000000000LL), (long)(wait % 1000000000LL) };
		if (left <= 0)
			return 0;
		if (wait == INT64_MAX) {
			if (sigwait(sigs, &sig) == 0)
				return sig;
			continue;
		}
		if ((sig = sigtimedwait(sigs, NULL, &ts)) > 0)
			return sig;
		if (errno == EAGAIN && watchdog_usec)
			sd_say("WATCHDOG=1");
	}
}

/* Fail closed: the helper is lost. Changes are refused already (R_PRIV, act_helper_lost); the
 * daemon goes on answering for LOST_HOLD_S (SIGTERM or SIGINT end it sooner), then stops as on
 * SIGTERM, answering what is in flight. */
static void lost_hold(const sigset_t *sigs, uint64_t watchdog_usec)
{
	int sig;

	sd_say("STATUS=degraded: the privileged helper is lost; changes are refused; stopping in %d s", LOST_HOLD_S);
	log_error("the privileged helper is lost: serving degraded for %d s, then stopping (exit status %d)",
		  LOST_HOLD_S, EXIT_HELPER_LOST);
	while ((sig = next_signal(sigs, watchdog_usec, LOST_HOLD_S)) != 0 && sig != SIGTERM && sig != SIGINT)
		;
	sd_say("STOPPING=1\nSTATUS=stopping: the privileged helper is lost");
}

/* The start-time apply's wait pings the watchdog (WatchdogSec= holds before READY=1 too), and
 * ends when a SIGTERM or SIGINT waits (blocked: taken by the main loop right after). */
static bool ping_watchdog(void)
{
	sigset_t pending;

	if (sd_watchdog_usec())
		sd_say("WATCHDOG=1");
	return sigpending(&pending) < 0 || (!sigismember(&pending, SIGTERM) && !sigismember(&pending, SIGINT));
}

/* The job runner's workers: 2; a test build may say otherwise (--test-job-workers, 1..8). */
static int job_workers(const struct config *cfg)
{
#ifdef MPD_TEST_HOOKS
	uint64_t v;

	if (cfg->test_job_workers && parse_u64(cfg->test_job_workers, &v) == 0)   /* checked at start */
		return (int)v;
#else
	(void)cfg;
#endif
	return 2;
}

int main(int argc, char **argv)
{
	struct config cfg = { 0 };
	struct app app = { 0 };
	struct conn_limits lim;
	struct http *http = NULL;
	struct maint *maint = NULL;
	struct drift_watcher *drift = NULL;   /* owned */
	unsigned drift_check_s;
	struct profile_reload *reload = NULL;
	struct profile_boot_ctx boot = { .app = &app };
	struct reload_hooks hooks;
	char boot_status[256];
	struct tls_files tls = { 0 };   /* owned until http_listen takes it */
	struct priv_user user;
	mp_err e = { 0 };
	sigset_t sigs;
	int sig, n, rc = 1, lock_fd = -1, unix_fd = -1;
	uint64_t watchdog_usec;

	/* A probe's child (ops/probe_child.c): the daemon's own binary, exec'd to run one workload. */
	if (argc >= 2 && !strcmp(argv[1], "--probe-child"))
		return probe_child_main(argc, argv);
	if ((rc = config_parse_args(argc, argv, &cfg)) >= 0)
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
	/* Now, before any sandbox: the journal's socket is connected once, by path. */
	if (log_set_format(cfg.log_format ? cfg.log_format : "auto") < 0) {
		if (cfg.log_format && strcmp(cfg.log_format, "journal"))
			fprintf(stderr, "mempolicyd: unknown log format '%s' (auto, text, json, journal)\n", cfg.log_format);
		else
			fprintf(stderr, "mempolicyd: log format journal: %s: %s\n", "/run/systemd/journal/socket",
				strerror(errno));
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
	drift_check_s = DRIFT_CHECK_DEFAULT_S;
	if (cfg.drift_check) {
		uint64_t v;
		if (parse_u64(cfg.drift_check, &v) < 0 || v < DRIFT_CHECK_MIN_S || v > DRIFT_CHECK_MAX_S) {
			fprintf(stderr, "mempolicyd: drift-check-interval wants seconds from %d to %d, not '%s'\n",
				DRIFT_CHECK_MIN_S, DRIFT_CHECK_MAX_S, cfg.drift_check);
			rc = 2;
			goto out;
		}
		drift_check_s = (unsigned)v;
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
#ifdef MPD_TEST_HOOKS
	{
		uint64_t v;
		if (cfg.test_job_workers && (parse_u64(cfg.test_job_workers, &v) < 0 || v < 1 || v > 8)) {
			fprintf(stderr, "mempolicyd: --test-job-workers wants 1 to 8, not '%s'\n", cfg.test_job_workers);
			rc = 2;
			goto out;
		}
	}
#endif
	app.sysfs_root = cfg.sysfs_root;
	app.procfs_root = cfg.procfs_root;
	app.profiles_dir_default = !cfg.profiles_dir;
	if (!cfg.profiles_dir) cfg.profiles_dir = strdup(DEFAULT_PROFILES_DIR);
	app.profiles_dir = cfg.profiles_dir;
	if (cfg.profile && !prof_name_ok(cfg.profile)) {
		fprintf(stderr, "mempolicyd: profile wants a profile name ([A-Za-z0-9_-] then [A-Za-z0-9._-]), not '%s'\n",
			cfg.profile);
		rc = 2;
		goto out;
	}
	app.profile = cfg.profile;
	if (cfg.node_labels_file && !nfd_path_ok(cfg.node_labels_file)) {
		fprintf(stderr, "mempolicyd: node-labels-file wants a path whose name does not start with a dot (Node "
			"Feature Discovery skips dot files), not '%s'\n", cfg.node_labels_file);
		rc = 2;
		goto out;
	}
	/* Before the job runner: a profile.apply job installs into it. */
	if (!(app.profile_state = profile_state_new(app.profile))) {
		fprintf(stderr, "mempolicyd: out of memory (the profile state)\n");
		goto out;
	}
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
	app.started_ns = clk_wall_ns();   /* after the test clock: the same clock as every _ns */

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
	/* Their files are opened by the first launch and the first recorded operation, in the serving
	 * process (after the fork below). */
	if (!(app.node_masks = topo_held_new(app.sysfs_root)) ||
	    !(app.mm_files = mmc_files_new(app.procfs_root, app.sysfs_root))) {
		mp_fail(&e, MPE_INTERNAL_NOMEM, 0, "out of memory");
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
		/* This process accepts on the Unix socket; the helper keeps a copy of the listener only
		 * to know its file, so that a launch is for a client of this socket as the kernel says,
		 * never as the serving side says (server/priv/identity.h). */
		struct priv_api api = { .listen_fd = http_unix_listener(http), .serving_uid = user.uid };
		/* The helper writes the labels file (it alone may, in a root-owned directory): the path
		 * is fixed before the fork, never sent. */
		priv_set_labels_file(cfg.node_labels_file);
		/* Before the store and before any thread (http_listen starts none): the helper is a fork
		 * of this image, holding the knob catalogue, the roots and the listener, and nothing else
		 * of the daemon. */
		if (priv_start(app.knobs, app.sysfs_root, app.procfs_root, app.probe_mem_pct, &api, &e) < 0)
			goto fail;
		/* The helper's exit (SIGCHLD: it is this process's only child then) and a broken channel
		 * (wake_main) come to the main thread; blocked after the fork, so the helper does not
		 * inherit them blocked, and before any thread starts. */
		priv_on_lost(wake_main);
		sigaddset(&sigs, SIGCHLD);
		sigaddset(&sigs, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &sigs, NULL);
		/* The helper's copy was made by the fork: from now on this side's catalogue says that
		 * another, privileged process writes (what a knob's "writable" reports). */
		knobs_set_writer_privileged(app.knobs);
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
	/* The store reports its commits to GET /metrics' registry and the operations' log without
	 * including either (server/observe.h). */
	store_set_events(app.store, &observe_store_events);
	/* Before anything writes history (restore, the job runner's recovery): metrics_seed.c says why. */
	metrics_reset();
	observe_reset();
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
	if (jobs_start(app.jobs, job_workers(&cfg), &e) < 0)
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
	/* The profiles as this (serving) process can read them; an invalid one is logged, never fatal. */
	profiles_log_start(&app);
	/* Verification of the profile in force, from its first apply on; without it the daemon serves
	 * unverified (logged). */
	drift = drift_start(&app, drift_check_s);
	if (cfg.node_labels_file && labels_start(&app, cfg.node_labels_file, &e) < 0)
		goto fail;
	/* app is complete, and read-only from here on (server/app.h): request threads start now. */
	if (http_serve(http, &app, &e) < 0)
		goto fail;
	log_info("mempolicyd %s listening on %s%s%s%s (kernel %s, sysfs %s, db %s)", MPD_VERSION, cfg.socket,
		 cfg.listen_tcp ? " and " : "", cfg.listen_tcp ? cfg.listen_tcp : "",
		 cfg.listen_tcp ? (cfg.tls_cert ? (cfg.tls_client_ca ? " (TLS, client certificates)" : " (TLS)")
					       : " (plain, read-only)") : "", app.caps.kernel_release,
		 app.sysfs_root, cfg.db);
	/* The watch first: a file changed during the start-time apply is reloaded after it. */
	profile_boot_hooks(&boot, &hooks);
	mp_err_clear(&e);
	if (!(reload = profile_reload_start(&app, &hooks, &e)) && e.code)
		goto fail;
	/* The profile before READY=1 (a kubelet ordered after this unit reads the pools once, when it
	 * starts); the API answers meanwhile (GET /v1/profile says applying). ops/profile_boot.h. */
	sd_say("STATUS=applying the profile at start");
	profile_boot_apply(&app, 0, ping_watchdog, boot_status, sizeof boot_status);
	/* Ready: migrated, recovered, the profile applied, serving. systemd orders dependants (the
	 * kubelet, socket clients) after this. */
	sd_say("READY=1\nSTATUS=serving on %s%s%s; %s", cfg.socket, cfg.listen_tcp ? " and " : "",
	       cfg.listen_tcp ? cfg.listen_tcp : "", boot_status);

	/* With WatchdogSec=, the main thread pings at half the interval; it is the thread that would
	 * be stuck if shutdown or a signal handler hung. */
	watchdog_usec = sd_watchdog_usec();
	for (;;) {
		sig = next_signal(&sigs, watchdog_usec, 0);
		if (sig == SIGCHLD || sig == SIGUSR1) {
			if (!priv_check_helper())
				continue;   /* a SIGUSR1 from outside: nothing is lost */
			lost_hold(&sigs, watchdog_usec);
			rc = EXIT_HELPER_LOST;
			goto out;
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
	profile_reload_stop(reload);   /* first: it may activate a profile, which needs the job runner */
	http_stop(http);
	labels_stop();   /* after the listeners: no request changes what it shows any more */
	children_close(app.children);   /* after the listeners: no launch adds a child any more */
	scheduler_stop(app.scheduler);
	maint_stop(maint);
	drift_stop(drift);   /* before the jobs and the state it reads and the store it records in */
	jobs_close(app.jobs);
	profile_state_free(app.profile_state);   /* after the jobs: none installs into it any more */
	store_close(app.store);
	if (lock_fd >= 0)
		close(lock_fd);   /* after the database is closed: the next daemon may have it */
	priv_stop();   /* after everything that may still ask it something */
	knobs_free(app.knobs);
	topo_held_free(app.node_masks);
	mmc_files_free(app.mm_files);
	tls_files_free(&tls);
	config_free(&cfg);
#ifdef MPD_TEST_HOOKS
	clk_test_close();
#endif
	return rc;
}
