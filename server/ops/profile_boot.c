/* The profile at start and on a change of the profiles directory (profile_boot.h). */
#include "server/ops/profile_boot.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "server/clock.h"
#include "server/jobs/jobs.h"
#include "server/log.h"
#include "server/ops/profile_apply.h"
#include "server/ops/profile_state.h"
#include "server/ops/profiles.h"
#include "server/store/jobs.h"

#define PING_MS 1000

/* The newest profile.apply the job runner marked interrupted at this start (the previous
 * daemon's): its id and profile into name; 0 when there is none. */
static int64_t interrupted_apply(const struct app *app, char *name, size_t len)
{
	mp_err e = { 0 };
	json_t *l = jobs_db_list(app->store, "profile.apply", "interrupted", 0, 0, 1, &e), *j = NULL;
	json_t *first = l ? json_array_get(l, 0) : NULL;
	int64_t id = 0;

	/* Recovery finished it at this start, so after started_ns; an older one was dealt with then. */
	if (first && json_integer_value(json_object_get(first, "finished_ns")) >= app->started_ns &&
	    (j = jobs_db_get(app->store, json_integer_value(json_object_get(first, "id")), &e))) {
		const char *p = json_string_value(json_object_get(json_object_get(j, "request"), "profile"));
		if (p && prof_name_ok(p)) {
			snprintf(name, len, "%s", p);
			id = json_integer_value(json_object_get(j, "id"));
		}
	}
	if (e.code)
		log_error("start-time apply: reading the previous daemon's interrupted applies: %s", e.detail);
	json_decref(j);
	json_decref(l);
	return id;
}

/* Waits for job id's apply to end, up to wait_ms, pinging; true when it ended. */
static bool wait_apply(const struct app *app, int64_t id, int64_t wait_ms, bool (*ping)(void))
{
	int64_t end = clk_mono_ns() + wait_ms * 1000000LL;

	for (;;) {
		int64_t left = (end - clk_mono_ns()) / 1000000LL;
		if (profile_state_wait(app->profile_state, id, left < PING_MS ? (left > 0 ? left : 0) : PING_MS))
			return true;
		if (left <= PING_MS || (ping && !ping()))
			return false;
	}
}

static const struct job_origin START = { .source = "start" }, RELOAD = { .source = "reload" };

void profile_boot_apply(const struct app *app, int64_t deadline_ms, bool (*ping)(void), char *status, size_t len)
{
	char prev[PROF_NAME_MAX] = "", reasons[160] = "";
	const char *name = app->profile;
	struct prof_err pe = { 0 };
	struct ps_snapshot s = { 0 };
	int64_t prev_job = interrupted_apply(app, prev, sizeof prev), id, busy = 0;
	int64_t wait_ms = (deadline_ms ? deadline_ms : PROFILE_POOL_DEADLINE_MS) + PROFILE_BOOT_SLACK_MS;
	json_t *job = NULL;

	snprintf(status, len, "no profile to apply");
	if (prev_job && name && strcmp(prev, name))
		log_warn("start-time apply: the previous daemon's apply of %s (job %lld) was interrupted; the configured "
			 "profile %s is applied instead", prev, (long long)prev_job, name);
	else if (prev_job)
		log_warn("start-time apply: the previous daemon's apply of %s (job %lld) was interrupted: applying it again "
			 "to complete it", prev, (long long)prev_job);
	if (!name && prev_job)
		name = prev;
	if (!name)
		return;
	if (profile_activate(app, name, &START, false, deadline_ms, &job, &busy, &pe) < 0) {
		log_error("start-time apply of %s: %s; nothing applied", name, pe.e.detail);
		snprintf(status, len, "profile %s not applied: %s", name, pe.e.detail);
		return;
	}
	id = json_integer_value(json_object_get(job, "id"));
	json_decref(job);
	log_info("start-time apply of %s: job %lld; ready once it ends (at most %lld s)", name, (long long)id,
		 (long long)(wait_ms / 1000));
	if (!wait_apply(app, id, wait_ms, ping)) {
		log_warn("start-time apply of %s (job %lld) did not end within %lld s: ready now, the job goes on "
			 "(GET /v1/jobs/%lld)", name, (long long)id, (long long)(wait_ms / 1000), (long long)id);
		snprintf(status, len, "profile %s still applying (job %lld)", name, (long long)id);
		return;
	}
	if (profile_state_snapshot(app->profile_state, &s) == 0) {
		for (int b = 0; b < PS_NREASONS; b++)
			if (s.reasons & (1u << b))
				snprintf(reasons + strlen(reasons), sizeof reasons - strlen(reasons), "%s%s",
					 reasons[0] ? ", " : " (", ps_reason_name(b));
		if (reasons[0])
			snprintf(reasons + strlen(reasons), sizeof reasons - strlen(reasons), ")");
		log_info("start-time apply of %s (job %lld) ended: %s%s", name, (long long)id, ps_state_name(s.state),
			 reasons);
		snprintf(status, len, "profile %s %s%s", s.name[0] ? s.name : name, ps_state_name(s.state), reasons);
		ps_snapshot_free(&s);
	}
}

/* ---- the reload's hooks ---------------------------------------------------------------------- */

/* The profile in force, or the one being activated (an activation not yet installed is what the
 * admin asked for last: a change of its files is reloaded too). */
static void hook_active(void *ctx, char *buf, size_t len)
{
	const struct profile_boot_ctx *c = ctx;
	struct ps_snapshot s = { 0 };
	mp_err e = { 0 };
	json_t *j = NULL;
	const char *p;

	profile_state_name(c->app->profile_state, buf, len);
	if (profile_state_snapshot(c->app->profile_state, &s) < 0 || !s.applying_job)
		goto out;
	if ((j = jobs_db_get(c->app->store, s.applying_job, &e)) &&
	    (p = json_string_value(json_object_get(json_object_get(j, "request"), "profile"))) && prof_name_ok(p))
		snprintf(buf, len, "%s", p);
out:
	json_decref(j);
	ps_snapshot_free(&s);
}

static int64_t hook_valid(void *ctx, const struct prof_dir *dir, const struct reload_verdict *v)
{
	const struct profile_boot_ctx *c = ctx;
	struct prof_err pe = { 0 };
	int64_t busy = 0;
	json_t *job = NULL;

	(void)dir;
	if (!v->activate[0])
		return 0;
	if (profile_activate(c->app, v->activate, &RELOAD, false, c->deadline_ms, &job, &busy, &pe) == 0) {
		log_info("profiles reload: %s activated again (job %lld)", v->activate,
			 (long long)json_integer_value(json_object_get(job, "id")));
		json_decref(job);
		return 0;
	}
	if (pe.e.code == MPE_JOB_CONFLICT && busy > 0)
		return busy;
	log_error("profiles reload: activating %s: %s", v->activate, pe.e.detail);
	return 0;
}

static bool hook_wait(void *ctx, int64_t job_id, int ms)
{
	const struct profile_boot_ctx *c = ctx;

	return profile_state_wait(c->app->profile_state, job_id, ms);
}

static void hook_invalid(void *ctx, const struct prof_dir *dir, const struct reload_verdict *v)
{
	const struct profile_boot_ctx *c = ctx;
	char active[PROF_NAME_MAX] = "";

	/* The profile in force is named when its own files fail (reason invalid_profile: it can no longer be
	 * applied as written); another profile's error is recorded under that profile's name. */
	profile_state_name(c->app->profile_state, active, sizeof active);
	if (active[0] && v->invalid[0] && strcmp(v->invalid, active)) {
		struct profile_checked ck;
		struct prof_err pe = { 0 };
		int bad = profiles_check_in(c->app, dir, active, &ck, &pe);
		profiles_checked_free(&ck);
		if (bad < 0) {
			profile_state_reject(c->app->profile_state, active, mp_code_name(pe.e.code), pe.e.detail,
					     pe.loc.line ? &pe.loc : NULL, 0);
			return;
		}
	}
	profile_state_reject(c->app->profile_state, v->invalid[0] ? v->invalid : active, mp_code_name(v->err.e.code),
			     v->err.e.detail, v->err.loc.line ? &v->err.loc : NULL, 0);
}

void profile_boot_hooks(struct profile_boot_ctx *c, struct reload_hooks *h)
{
	h->ctx = c;
	h->active = hook_active;
	h->valid = hook_valid;
	h->wait = hook_wait;
	h->invalid = hook_invalid;
}
