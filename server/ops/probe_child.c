/* The parent's side of a probe child: spawn, read the answer, enforce the bounds. */
#include "server/ops/probe_child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/jobs/job_ctx.h"
#include "server/kernel/spawn.h"
#include "server/priv/act.h"

#define ANSWER_MAX (4 * 1024 * 1024)   /* a result larger than this is a workload bug */
#define TICK_MS    50                  /* how soon a cancel reaches the child */

extern char **environ;

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reap(pid_t pid, int *status)
{
	act_reap(pid, status, false);
}

enum probe_child_end probe_child_run(struct job_ctx *ctx, const struct probe_child_spec *s, json_t **result,
				     int *err_no, char *err, size_t errlen)
{
	struct act_probe ap = { .kind = s->kind, .pass = s->pass, .params = s->params, .sysfs_root = s->sysfs_root,
				.mem_pct = s->mem_pct };
	char *buf = NULL;                                          /* owned: the answer */
	size_t len = 0, cap = 0;
	enum probe_child_end end = PCE_FAILED;
	enum spawn_step step;
	int p[2] = { -1, -1 }, status = 0;
	int64_t deadline;
	json_t *ans = NULL;
	json_error_t je;
	pid_t pid;

	*result = NULL;
	*err_no = 0;
	if (pipe2(p, O_CLOEXEC) < 0) {
		*err_no = errno;
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto out;
	}
	/* The exec'd child is this binary, its command line built from the kind (act_probe_start). */
	struct spawn_spec sp = {
		.envp = environ, .cwd = "/", .uid = geteuid(), .gid = getegid(),
		.cpus = s->cpus, .cpus_size = s->cpus_size, .set_policy = s->set_policy, .policy = s->policy,
		.nodes = s->nodes, .stdout_fd = p[1],
		/* A probe is the daemon's measurement: it does not outlive a daemon that dies. */
		.die_with_parent = true, .peer_fd = -1,
	};
	/* Under --user the helper starts it (its workload writes knobs and pools itself), from the
	 * kind's index in the probe table and its typed parameters: no command line travels. */
	pid = act_probe_start(&sp, &ap, &step);
	close(p[1]);
	p[1] = -1;
	if (pid < 0) {
		*err_no = (int)-pid;
		snprintf(err, errlen, "starting the probe child: %s: %s", spawn_step_name(step), strerror((int)-pid));
		goto out;
	}
	deadline = mono_ms() + s->timeout_ms;
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	for (;;) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		ssize_t n;

		if (job_cancelled(ctx) || mono_ms() >= deadline) {
			end = job_cancelled(ctx) ? PCE_CANCELLED : PCE_TIMEOUT;
			act_kill(pid);
			reap(pid, &status);
			snprintf(err, errlen, end == PCE_CANCELLED ? "cancelled: the probe child was killed"
				 : "the pass took longer than %lld ms: the probe child was killed", (long long)s->timeout_ms);
			goto out;
		}
		if (poll(&pfd, 1, TICK_MS) <= 0)
			continue;
		if (len + 65536 > cap) {
			char *nb;
			if (cap >= ANSWER_MAX || !(nb = realloc(buf, cap ? cap * 2 : 65536))) {
				act_kill(pid);
				reap(pid, &status);
				snprintf(err, errlen, "the probe child's answer is larger than %d bytes", ANSWER_MAX);
				goto out;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		n = read(p[0], buf + len, cap - len - 1);
		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		break;   /* EOF: the child has closed stdout (it is exiting) */
	}
	reap(pid, &status);
	buf[len] = '\0';
	if (!(ans = json_loads(buf, 0, &je)) || !json_is_object(ans)) {
		if (WIFSIGNALED(status))
			snprintf(err, errlen, "the probe child died of signal %d", WTERMSIG(status));
		else
			snprintf(err, errlen, "the probe child's answer is not JSON (exit status %d)", WEXITSTATUS(status));
		goto out;
	}
	if (!json_is_true(json_object_get(ans, "ok")) || !json_is_object(json_object_get(ans, "result"))) {
		const char *why = json_string_value(json_object_get(ans, "error"));
		snprintf(err, errlen, "%s", why ? why : "the probe child failed without saying why");
		goto out;
	}
	*result = json_incref(json_object_get(ans, "result"));
	end = PCE_OK;
out:
	if (p[0] >= 0)
		close(p[0]);
	json_decref(ans);
	free(buf);
	return end;
}
