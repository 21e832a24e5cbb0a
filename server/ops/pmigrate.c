/* process.migrate: migrate_pages(2) as a job, with the placement before and after. */
#include "server/ops/pmigrate.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/app.h"
#include "server/clock.h"
#include "server/kernel/mpol.h"
#include "server/kernel/placement.h"
#include "server/kernel/proc.h"
#include "server/kernel/topology.h"
#include "server/kernel/vmstat.h"
#include "server/ops/launch.h"
#include "server/ops/pact.h"
#include "server/ops/processes.h"
#include "server/priv/act.h"

#define KIND "process.migrate"

static const char *const counters[] = { "pgmigrate_success", "pgmigrate_fail", "thp_migration_success",
					"thp_migration_fail", "thp_migration_split" };
#define NCOUNTERS (int)(sizeof counters / sizeof counters[0])

/* ---- shared with pcollapse.c ------------------------------------------------------------------ */

/* The kernel's PTRACE_MODE_READ_REALCREDS for migrate_pages, as far as it concerns the caller
 * (a process_rule): every uid of the target is the caller's, and the target is dumpable. */
static int may_move(const struct app *app, const struct proc_caller *who, const struct placement *p, mp_err *e)
{
	int rc = pl_owned_by(app->procfs_root, p->pid, who->uid);

	if (rc == 0)
		return 0;
	if (rc == -ESRCH)
		return mp_fail(e, MPE_PROCESS_NOT_FOUND, ESRCH, "no process %d", (int)p->pid);
	return mp_fail(e, MPE_AUTH_FORBIDDEN, 0, "process %d is not yours: only root, the admin group or its own user "
		       "may move its pages", (int)p->pid);
}

int pact_target(const struct app *app, const char *pid_text, const json_t *body, const struct pact_caller *who,
		struct pact_target *t, mp_err *e)
{
	json_t *st = json_object_get(body, "start_time");
	struct proc_caller pc = { .known = who->known, .admin = who->admin, .uid = who->uid, .name = who->name };
	uint64_t expect = 0;

	memset(t, 0, sizeof *t);
	if (process_pid_parse(pid_text, &t->pid, e) < 0)
		return -1;
	if (st && (!json_is_integer(st) || json_integer_value(st) < 1))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"start_time\" is the positive integer GET /v1/processes gave");
	if (st)
		expect = (uint64_t)json_integer_value(st);
	if (!who->known)
		return mp_fail(e, MPE_AUTH_FORBIDDEN, 0, "changing a process needs a caller known from the Unix socket");
	/* The caller is judged before the placement is read (the privileged side opens it), and
	 * again after; the job judges it once more right before it acts (pact_still_theirs). */
	if (process_read_for(app, t->pid, expect, 0, &pc, may_move, &t->before, e) < 0)
		return -1;
	t->have_before = true;
	t->start_time = t->before.start_time;
	return 0;
}

int pact_still_theirs(const struct pact_args *a, int pidfd, bool after, struct job_outcome *out)
{
	int rc = proc_pidfd_alive(pidfd);

	if (rc == 0 && a->check_owner)
		rc = pl_owned_by(a->app->procfs_root, a->pid, a->owner_uid);
	if (rc == 0)
		return 0;
	out->status = "failed";
	if (rc == -EPERM) {
		/* An exec of a set-uid program keeps the pid and the start time: what was authorised at
		 * submission is not this process any more. */
		out->reason = JR_PROCESS_CHANGED;
		out->err_no = EPERM;
		snprintf(out->error, sizeof out->error, after
			 ? "process %d is no longer uid %u's (its credentials changed while it was acted on)"
			 : "process %d is no longer uid %u's (its credentials changed since the request, e.g. it "
			   "exec'd a set-uid program): nothing was done", (int)a->pid, (unsigned)a->owner_uid);
		return -1;
	}
	out->err_no = ESRCH;
	snprintf(out->error, sizeof out->error, after ? "process %d exited while it was acted on"
		 : "process %d exited or its pid was reused", (int)a->pid);
	return -1;
}

void pact_args_target(struct pact_args *a, const struct app *app, const struct pact_target *t,
		      const struct pact_caller *who)
{
	a->app = app;
	a->pid = t->pid;
	a->start_time = t->start_time;
	a->check_owner = !who->admin;
	a->owner_uid = who->uid;
}

void pact_target_free(struct pact_target *t)
{
	if (t->have_before)
		pl_free(&t->before);
	t->have_before = false;
}

json_t *pact_nodes_json(const struct placement *p)
{
	json_t *a = json_array();

	for (int i = 0; i < p->n_nodes; i++) {
		uint64_t b = p->nodes[i].base_bytes + p->nodes[i].thp_bytes + p->nodes[i].hugetlb_bytes;
		json_array_append_new(a, json_pack("{s:I, s:I, s:I, s:I}", "node", (json_int_t)p->nodes[i].id, "bytes",
						   (json_int_t)b, "pages", (json_int_t)(b / 4096), "thp_bytes",
						   (json_int_t)p->nodes[i].thp_bytes));
	}
	return a;
}

uint64_t pact_node_bytes(const struct placement *p, const idset *nodes)
{
	uint64_t sum = 0;

	for (int i = 0; i < p->n_nodes; i++)
		if (idset_has(nodes, p->nodes[i].id))
			sum += p->nodes[i].base_bytes + p->nodes[i].thp_bytes + p->nodes[i].hugetlb_bytes;
	return sum;
}

void pact_key(const void *arg, char *key, size_t len)
{
	snprintf(key, len, "process:%d", (int)((const struct pact_args *)arg)->pid);
}

/* ---- the job ---------------------------------------------------------------------------------- */

static void args_free(void *p)
{
	free(p);
}

static json_t *progress0(const void *arg)
{
	(void)arg;
	return json_pack("{s:s}", "phase", "queued");
}

static void fail_with(struct job_outcome *out, int err, const char *fmt, const char *what)
{
	out->status = "failed";
	out->err_no = err;
	snprintf(out->error, sizeof out->error, fmt, what, strerror(err));
}

static void migrate_run(struct job_ctx *ctx, void *arg, struct job_outcome *out)
{
	struct pact_args *a = arg;
	struct placement before, after;
	struct mpol_mask from, to;
	uint64_t v0[NCOUNTERS], v1[NCOUNTERS], bfrom, afrom;
	int64_t t0, el;
	long rc;
	int kr, pidfd;
	json_t *delta;

	/* The bracket: a pidfd opened before the identity check by pid, and checked to name a live
	 * process after the syscall by pid (proc.h). */
	if ((pidfd = proc_pidfd(a->pid)) < 0) {
		fail_with(out, ESRCH, "%s: %s", "the process exited or its pid was reused");
		return;
	}
	/* Nothing of it is read for a caller it is no longer the caller's (the read is the helper's). */
	if (proc_check_identity(a->app->procfs_root, a->pid, a->start_time) < 0) {
		fail_with(out, ESRCH, "%s: %s", "the process exited or its pid was reused");
		goto out;
	}
	if (pact_still_theirs(a, pidfd, false, out) < 0)
		goto out;
	job_progress(ctx, json_pack("{s:s}", "phase", "reading placement"));
	if ((kr = pl_read(a->app->procfs_root, act_proc_open, a->pid, a->start_time, &before)) < 0) {
		fail_with(out, kr == -ESTALE ? ESRCH : -kr, "%s: %s", "reading the placement before");
		goto out;
	}
	if (job_cancelled(ctx)) {
		pl_free(&before);
		out->status = "cancelled";
		goto out;
	}
	mpol_mask_from(&a->from, &from);
	mpol_mask_from(&a->to, &to);
	job_progress(ctx, json_pack("{s:s}", "phase", "migrating"));
	vmstat_read(a->app->procfs_root, counters, NCOUNTERS, v0);
	/* The pid still names the process of the request, and it is still the caller's to move,
	 * checked as late as we can. */
	if ((kr = proc_check_identity(a->app->procfs_root, a->pid, a->start_time)) < 0) {
		pl_free(&before);
		fail_with(out, ESRCH, "%s: %s", "the process exited or its pid was reused");
		goto out;
	}
	if (pact_still_theirs(a, pidfd, false, out) < 0) {
		pl_free(&before);
		goto out;
	}
	t0 = clk_mono_ns();
	/* Checked once more where it happens (by the privileged helper when one runs). */
	rc = act_migrate(a->app->procfs_root, a->pid, a->start_time, &from, &to);
	el = clk_mono_ns() - t0;
	vmstat_read(a->app->procfs_root, counters, NCOUNTERS, v1);
	if (rc < 0) {
		pl_free(&before);
		fail_with(out, rc == -ESTALE ? ESRCH : (int)-rc, "%s: %s", "migrate_pages");
		out->result = json_pack("{s:I}", "elapsed_ns", (json_int_t)el);
		goto out;
	}
	/* After: the pid named that process throughout, and it was still the caller's. */
	if (pact_still_theirs(a, pidfd, true, out) < 0) {
		pl_free(&before);
		out->result = json_pack("{s:I, s:I}", "pages_not_moved", (json_int_t)rc, "elapsed_ns", (json_int_t)el);
		goto out;
	}
	job_progress(ctx, json_pack("{s:s}", "phase", "reading placement after"));
	if ((kr = pl_read(a->app->procfs_root, act_proc_open, a->pid, a->start_time, &after)) < 0) {
		pl_free(&before);
		fail_with(out, kr == -ESTALE ? ESRCH : -kr, "%s: %s", "reading the placement after");
		goto out;
	}
	delta = json_object();
	for (int i = 0; i < NCOUNTERS; i++)
		json_object_set_new(delta, counters[i], json_integer((json_int_t)(v1[i] - v0[i])));
	bfrom = pact_node_bytes(&before, &a->from);
	afrom = pact_node_bytes(&after, &a->from);
	out->result = json_pack("{s:i, s:I, s:s, s:s, s:o, s:o, s:I, s:I, s:I, s:o}", "pid", (int)a->pid,
				"start_time", (json_int_t)a->start_time, "from", a->from_text, "to", a->to_text,
				"before", pact_nodes_json(&before), "after", pact_nodes_json(&after),
				/* what left the source nodes, in 4 KiB pages: the kernel does not count it */
				"pages_moved", (json_int_t)(bfrom > afrom ? (bfrom - afrom) / 4096 : 0),
				"pages_not_moved", (json_int_t)rc, "elapsed_ns", (json_int_t)el, "vmstat_delta", delta);
	out->status = rc == 0 ? "ok" : "partial";
	out->reason = rc == 0 ? JR_NONE : JR_NOT_MOVED;
	pl_free(&before);
	pl_free(&after);
out:
	close(pidfd);
}

const struct job_kind migrate_job = {
	.name = KIND,
	.run = migrate_run,
	.free_arg = args_free,
	.conflict_key = pact_key,
	.initial_progress = progress0,
};

/* ---- submission -------------------------------------------------------------------------------- */

json_t *migrate_submit(const struct app *app, const char *pid_text, const json_t *body, const struct pact_caller *who,
		       int64_t *conflict_id, mp_err *e)
{
	static const char *const fields[] = { "from", "to", "start_time", NULL };
	struct job_actor actor = { .has_uid = true, .uid = who->uid, .name = who->name };
	struct pact_target t = { 0 };
	struct pact_args *a = NULL;
	struct topology *topo = NULL;
	json_t *req = NULL, *job = NULL, *jf = json_object_get(body, "from"), *jt = json_object_get(body, "to");
	int kr;

	if (json_only_fields(body, "", fields, e) < 0)
		return NULL;
	if (!jf || !jt)
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "\"from\" and \"to\" (node lists) are required"), NULL;
	if (!json_is_string(jf) || !json_is_string(jt))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"from\" and \"to\" are node lists such as \"0-1\""), NULL;
	if (!(a = calloc(1, sizeof *a)) || !(topo = malloc(sizeof *topo))) {
		mp_nomem(e);
		goto out;
	}
	if (launch_parse_nodes(json_string_value(jf), "from", false, &a->from, e) < 0 ||
	    launch_parse_nodes(json_string_value(jt), "to", false, &a->to, e) < 0)
		goto out;
	if ((kr = topo_read(app->sysfs_root, topo)) < 0) {
		mp_fail(e, MPE_TOPOLOGY_UNREADABLE, -kr, "reading the topology: %s", strerror(-kr));
		goto out;
	}
	if (launch_check_nodes(topo, &a->from, "from", false, e) < 0 ||
	    launch_check_nodes(topo, &a->to, "to", true, e) < 0)
		goto out;
	if (pact_target(app, pid_text, body, who, &t, e) < 0)
		goto out;
	pact_args_target(a, app, &t, who);
	idset_format(&a->from, a->from_text, sizeof a->from_text);
	idset_format(&a->to, a->to_text, sizeof a->to_text);
	req = json_pack("{s:i, s:I, s:s, s:s}", "pid", (int)a->pid, "start_time", (json_int_t)a->start_time, "from",
			a->from_text, "to", a->to_text);
	if (!req) {
		mp_nomem(e);
		goto out;
	}
	struct job_spec spec = { .kind = &migrate_job, .arg = a, .request = req,
				 .origin = { .source = "api", .actor = &actor } };
	job = jobs_submit(app->jobs, &spec, conflict_id, e);
	a = NULL;   /* the runner's now, even on failure */
out:
	free(a);
	free(topo);
	pact_target_free(&t);
	json_decref(req);
	return job;
}
