/* One run of one arm: the workload under the arm's policy and CPUs (its knobs are written by the
 * job before), timed and counted. A probe runs in its probe child (ops/probe_child.h) and gives
 * its kind's figures; a program runs as the caller (kernel/spawn.c through the helper), timed from
 * just before the spawn to its exit (its pidfd turning readable), with wait4's user and system
 * time, faults and peak RSS. Both add the deltas of the kernel's counters over the run. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/app.h"
#include "server/kernel/proc.h"
#include "server/ops/compare.h"
#include "server/ops/conditions.h"
#include "server/ops/exp.h"
#include "server/ops/probe_child.h"
#include "server/priv/act.h"

#define TICK_MS 50   /* how soon a cancel reaches a running program */

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static int run_probe(struct job_ctx *ctx, const struct exp_args *a, const struct exp_arm *arm, json_t *m,
		     char *err, size_t errlen)
{
	struct probe_child_spec cs = {
		.kind = a->kind, .pass = 0, .params = &a->typed, .sysfs_root = a->app->sysfs_root,
		.mem_pct = a->app->probe_mem_pct, .set_policy = arm->lr.mode != NULL, .policy = arm->lr.policy,
		.cpus = arm->lr.cpus, .cpus_size = arm->lr.cpus_size, .timeout_ms = a->timeout_ms,
	};
	enum probe_child_end end;
	json_t *result = NULL, *sum;
	int err_no = 0;

	mpol_mask_from(&arm->lr.nodes, &cs.nodes);
	end = probe_child_run(ctx, &cs, &result, &err_no, err, errlen);
	if (end == PCE_CANCELLED)
		return 1;
	if (end != PCE_OK)
		return -1;
	if (a->probe->summary && (sum = a->probe->summary(result))) {
		compare_flatten(m, "", sum);
		json_decref(sum);
	} else {
		compare_flatten(m, "", result);
	}
	json_decref(result);
	return 0;
}

/* Waits for the program's exit on its pidfd: 0 (t1 its exit), 1 cancelled, -1 past the bound or
 * unwatchable (killed and reaped then). */
static int wait_exit(struct job_ctx *ctx, pid_t pid, int64_t deadline_ns, int64_t *t1, char *err, size_t errlen)
{
	int pidfd = proc_pidfd(pid), rc = -1;

	if (pidfd < 0) {
		/* No pidfd (before 5.3): the reap's return is the end, later by the helper's polling. */
		snprintf(err, errlen, "no pidfd for the program (%s): the experiment needs Linux 5.3", strerror(-pidfd));
		act_kill(pid);
		act_reap(pid, NULL, false);
		return -1;
	}
	for (;;) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		int n = poll(&p, 1, TICK_MS);

		if (n > 0) {
			*t1 = mono_ns();
			rc = 0;
			break;
		}
		if (job_cancelled(ctx) || mono_ns() >= deadline_ns) {
			rc = job_cancelled(ctx) ? 1 : -1;
			if (rc < 0)
				snprintf(err, errlen, "the program ran longer than the time bound: killed");
			act_kill(pid);
			act_reap(pid, NULL, false);
			break;
		}
	}
	close(pidfd);
	return rc;
}

static int run_program(struct job_ctx *ctx, const struct exp_args *a, const struct exp_arm *arm, json_t *m,
		       char *err, size_t errlen)
{
	const struct launch_req *r = &a->prog;
	struct spawn_spec s = {
		.argv = r->argv, .envp = r->envp, .path = r->path, .cwd = r->cwd, .uid = r->uid, .gid = r->gid,
		.groups = r->groups, .ngroups = r->ngroups, .cpus = arm->lr.cpus, .cpus_size = arm->lr.cpus_size,
		.set_policy = arm->lr.mode != NULL, .policy = arm->lr.policy, .die_with_parent = true,
		.peer_fd = a->peer_fd,
	};
	enum spawn_step step;
	struct rusage ru;
	int64_t t0, t1 = 0;
	int st = 0, rc;
	pid_t pid;

	mpol_mask_from(&arm->lr.nodes, &s.nodes);
	t0 = mono_ns();
	if ((pid = act_spawn(&s, &step)) < 0) {
		snprintf(err, errlen, "starting '%.200s' failed at %s: %s%s", r->argv[0], spawn_step_name(step),
			 strerror((int)-pid), pid == -ENOTCONN ? " (the caller's connection closed: a program runs as the "
			 "caller only while the caller waits)" : "");
		return -1;
	}
	if ((rc = wait_exit(ctx, pid, t0 + a->timeout_ms * 1000000, &t1, err, errlen)) != 0)
		return rc;
	if ((rc = act_reap_usage(pid, &st, &ru)) < 0) {
		snprintf(err, errlen, "collecting the program: %s", strerror(-rc));
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		if (WIFSIGNALED(st))
			snprintf(err, errlen, "'%.200s' died of signal %d", r->argv[0], WTERMSIG(st));
		else
			snprintf(err, errlen, "'%.200s' exited with status %d", r->argv[0], WEXITSTATUS(st));
		return -1;
	}
	json_object_set_new(m, "wall_s", json_real((double)(t1 - t0) / 1e9));
	json_object_set_new(m, "user_s", json_real(tv_s(ru.ru_utime)));
	json_object_set_new(m, "sys_s", json_real(tv_s(ru.ru_stime)));
	json_object_set_new(m, "minor_faults", json_integer(ru.ru_minflt));
	json_object_set_new(m, "major_faults", json_integer(ru.ru_majflt));
	json_object_set_new(m, "max_rss_kb", json_integer(ru.ru_maxrss));
	return 0;
}

int exp_round_run(struct job_ctx *ctx, const struct exp_args *a, const struct exp_arm *arm, json_t **metrics,
		  char *err, size_t errlen)
{
	struct cond_snap *snap = cond_begin(a->app);   /* owned until cond_end */
	json_t *m = json_object(), *cond;
	int rc;

	*metrics = NULL;
	err[0] = '\0';
	rc = a->probe ? run_probe(ctx, a, arm, m, err, errlen) : run_program(ctx, a, arm, m, err, errlen);
	if (snap && (cond = cond_end(a->app, snap))) {
		if (rc == 0)
			compare_condition_metrics(m, cond);
		json_decref(cond);
	}
	if (rc == 0)
		*metrics = m;
	else
		json_decref(m);
	return rc;
}
