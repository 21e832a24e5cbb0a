/* process.collapse: process_madvise(MADV_COLLAPSE) over a range or every anonymous mapping of a
 * process, with its AnonHugePages before and after. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "server/app.h"
#include "server/clock.h"
#include "server/kernel/madv.h"
#include "server/kernel/placement.h"
#include "server/kernel/proc.h"
#include "server/ops/pact.h"
#include "server/ops/pmigrate.h"
#include "server/priv/act.h"

#define KIND        "process.collapse"
#define HPAGE       (2ULL << 20)   /* MADV_COLLAPSE collapses PMD-sized, PMD-aligned ranges */
#define MAX_ERRORS  32
#define REPORT_NS   (10LL * 1000 * 1000)

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

static void args_free(void *p)
{
	free(p);
}

static json_t *progress0(const void *arg)
{
	(void)arg;
	return json_pack("{s:s}", "phase", "queued");
}

/* An anonymous (private, not hugetlb) mapping that holds at least one aligned huge page. */
static bool collapsible(const struct pl_mapping *m, uint64_t *s, uint64_t *e)
{
	if (m->huge || m->kind == PL_KIND_FILE || m->end <= m->start)
		return false;
	*s = (m->start + HPAGE - 1) & ~(HPAGE - 1);
	*e = m->end & ~(HPAGE - 1);
	return *e > *s;
}

struct crun {
	struct job_ctx *ctx;
	int pidfd;
	size_t ranges, collapsed, failed;
	int last_errno;
	json_t *errors;              /* owned */
	int64_t last_report;
};

static void one(struct crun *r, uint64_t s, uint64_t e)
{
	long rc;

	r->ranges++;
	rc = act_collapse(r->pidfd, s, e - s);
	if (rc == -EAGAIN)   /* transient (page lock, LRU isolation): once more */
		rc = act_collapse(r->pidfd, s, e - s);
	if (rc >= 0) {
		r->collapsed++;
		return;
	}
	errno = (int)-rc;
	r->failed++;
	r->last_errno = errno;
	if (json_array_size(r->errors) < MAX_ERRORS)
		json_array_append_new(r->errors, json_pack("{s:I, s:I, s:i, s:s}", "start", (json_int_t)s, "end",
							   (json_int_t)e, "errno", errno, "errno_name",
							   strerrorname_np(errno) ? strerrorname_np(errno) : "?"));
}

static void collapse_run(struct job_ctx *ctx, void *arg, struct job_outcome *out)
{
	struct pact_args *a = arg;
	struct placement before, after;
	struct crun r = { .ctx = ctx, .pidfd = -1, .errors = json_array() };
	int64_t t0 = clk_mono_ns();
	bool have_before = false, have_after = false;
	int kr;

	out->status = "failed";
	/* The pidfd pins the process: once it is open and the start time still matches, a reused pid
	 * cannot be hit. */
	if ((r.pidfd = proc_pidfd(a->pid)) < 0 ||
	    proc_check_identity(a->app->procfs_root, a->pid, a->start_time) < 0) {
		out->err_no = ESRCH;
		snprintf(out->error, sizeof out->error, "process %d exited or its pid was reused", (int)a->pid);
		goto out;
	}
	/* Collapse is for admins (the route is R_ADMIN), so check_owner is false and this checks the
	 * process lives; the rule is the one migrate uses, should the route ever open up. */
	if (pact_still_theirs(a, r.pidfd, false, out) < 0)
		goto out;
	if ((kr = pl_read(a->app->procfs_root, act_proc_open, a->pid, a->start_time, &before)) < 0) {
		out->err_no = kr == -ESTALE ? ESRCH : -kr;
		snprintf(out->error, sizeof out->error, "reading the placement before: %s", strerror(out->err_no));
		goto out;
	}
	have_before = true;
	if (a->has_range)
		one(&r, a->start, a->end);
	else
		for (size_t i = 0; i < before.n_mappings; i++) {
			uint64_t s, e;
			if (job_cancelled(ctx)) {
				out->status = "cancelled";
				break;
			}
			if (!collapsible(&before.mappings[i], &s, &e))
				continue;
			one(&r, s, e);
			if (clk_mono_ns() - r.last_report >= REPORT_NS) {
				r.last_report = clk_mono_ns();
				job_progress(ctx, json_pack("{s:s, s:I, s:I, s:I}", "phase", "collapsing", "ranges",
							    (json_int_t)r.ranges, "collapsed", (json_int_t)r.collapsed,
							    "failed", (json_int_t)r.failed));
			}
		}
	if ((kr = pl_read(a->app->procfs_root, act_proc_open, a->pid, a->start_time, &after)) == 0)
		have_after = true;
	out->result = json_pack("{s:i, s:I, s:I, s:o, s:I, s:I, s:I, s:o, s:I}", "pid", (int)a->pid, "start_time",
				(json_int_t)a->start_time, "thp_bytes_before", (json_int_t)(before.rollup_thp_kb * 1024),
				"thp_bytes_after", have_after ? json_integer((json_int_t)(after.rollup_thp_kb * 1024)) : json_null(),
				"ranges", (json_int_t)r.ranges, "collapsed", (json_int_t)r.collapsed, "failed",
				(json_int_t)r.failed, "errors", json_incref(r.errors), "elapsed_ns",
				(json_int_t)(clk_mono_ns() - t0));
	if (!strcmp(out->status, "cancelled"))
		goto out;
	if (r.failed == 0) {
		out->status = "ok";
	} else {
		out->status = r.collapsed ? "partial" : "failed";
		out->reason = r.collapsed ? JR_NOT_COLLAPSED : JR_NONE;
		out->err_no = r.last_errno;
		snprintf(out->error, sizeof out->error, "%zu of %zu ranges not collapsed (last: %s)", r.failed, r.ranges,
			 strerror(r.last_errno));
	}
out:
	if (have_before)
		pl_free(&before);
	if (have_after)
		pl_free(&after);
	if (r.pidfd >= 0)
		close(r.pidfd);
	json_decref(r.errors);
}

const struct job_kind collapse_job = {
	.name = KIND,
	.run = collapse_run,
	.free_arg = args_free,
	.conflict_key = pact_key,
	.initial_progress = progress0,
};

static int parse_range(const json_t *body, struct pact_args *a, mp_err *e)
{
	static const char *const fields[] = { "start", "length", NULL };
	json_t *rg = json_object_get(body, "range"), *s, *l;

	if (!rg)
		return 0;
	if (!json_is_object(rg) || json_only_fields(rg, "", fields, e) < 0)
		return json_is_object(rg) ? -1 : mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"range\" is {\"start\", \"length\"}");
	s = json_object_get(rg, "start");
	l = json_object_get(rg, "length");
	if (!s || !l)
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "\"range\" needs \"start\" and \"length\" (bytes)");
	if (!json_is_integer(s) || !json_is_integer(l) || json_integer_value(s) < 0 || json_integer_value(l) <= 0)
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"range.start\" and \"range.length\" are non-negative integers");
	a->start = (uint64_t)json_integer_value(s);
	a->end = a->start + (uint64_t)json_integer_value(l);
	if (a->start % 4096 || a->end < a->start || a->end > (1ULL << 57))
		return mp_fail(e, MPE_REQUEST_INVALID, 0, "\"range\" must start on a page and lie in user space");
	a->has_range = true;
	return 0;
}

json_t *collapse_submit(const struct app *app, const char *pid_text, const json_t *body, const struct pact_caller *who,
			int64_t *conflict_id, mp_err *e)
{
	static const char *const fields[] = { "range", "start_time", NULL };
	struct job_actor actor = { .has_uid = true, .uid = who->uid, .name = who->name };
	struct pact_target t = { 0 };
	struct pact_args *a = calloc(1, sizeof *a);
	json_t *req = NULL, *job = NULL;

	if (!a) {
		mp_nomem(e);
		return NULL;
	}
	if (json_only_fields(body, "", fields, e) < 0 || parse_range(body, a, e) < 0)
		goto out;
	if (!app->caps.madv_collapse) {
		mp_fail(e, MPE_PROCESS_UNSUPPORTED, EINVAL, "this kernel has no MADV_COLLAPSE (6.1): nothing to collapse with");
		goto out;
	}
	if (pact_target(app, pid_text, body, who, &t, e) < 0)
		goto out;
	pact_args_target(a, app, &t, who);
	req = a->has_range
		? json_pack("{s:i, s:I, s:{s:I, s:I}}", "pid", (int)a->pid, "start_time", (json_int_t)a->start_time,
			    "range", "start", (json_int_t)a->start, "length", (json_int_t)(a->end - a->start))
		: json_pack("{s:i, s:I, s:s}", "pid", (int)a->pid, "start_time", (json_int_t)a->start_time, "range",
			    "anonymous");
	if (!req) {
		mp_nomem(e);
		goto out;
	}
	struct job_spec spec = { .kind = &collapse_job, .arg = a, .request = req,
				 .origin = { .source = "api", .actor = &actor } };
	job = jobs_submit(app->jobs, &spec, conflict_id, e);
	a = NULL;
out:
	free(a);
	pact_target_free(&t);
	json_decref(req);
	return job;
}
