/* Activating a profile: the one entry point (POST /v1/profile, the start-time apply, the ConfigMap
 * reload). profile_activate validates the whole merged profile against this host (server/ops/
 * profiles.c, and every pool target against memory as a resize would plan it) and, unless it is a
 * dry run, starts the profile.apply job, which
 *   1. writes the knobs out of sync as one transaction (ops/knobs.c: written in order, read back,
 *      rolled back on a refusal; recorded as its knobs.set operation, linked from the result),
 *   2. sets the cgroups' mems (ops/cgroups.c, each its cgroup.mems operation),
 *   3. resizes the pools out of sync (ops/resize.c's run, inline: its batches are this operation's),
 *      compacting and retrying until the deadline, ending allocated or partial with why,
 * then reads every key back and installs the result as the profile in force (ops/profile_state.h).
 * Keys already in sync (an alternative, a '>=' or '<=' that holds) are not written; keys this
 * kernel lacks are reported unsupported, and a required one makes the state degraded. The job holds
 * the document it validated: a profile file that changes before the first write fails the job with
 * nothing written (profile.changed); one that changes during the apply leaves the validated
 * version applied whole, and the state says stale until the next apply (docs/reference/profiles.md). */
#ifndef MPD_OPS_PROFILE_APPLY_H
#define MPD_OPS_PROFILE_APPLY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/app.h"
#include "server/jobs/job_ctx.h"
#include "server/profiles/profile.h"

/* How long the pools may take, compacting and retrying, unless the caller says (PAO #279's 60 s). */
#define PROFILE_POOL_DEADLINE_MS 60000
#define PROFILE_DEADLINE_MAX_MS  (3600LL * 1000)

/* name: a profile of the directory; origin: who asks (source "api", "start", "reload"...);
 * deadline_ms: 0 for PROFILE_POOL_DEADLINE_MS. dry_run: *out is the diff (GET .../diff's answer),
 * nothing is started. Else *out is the job as GET /v1/jobs/{id} shows it (its id is "id"), and
 * profile_state_wait(app->profile_state, id, ...) waits for it.
 * -1 with pe: the profile's error with its file:line:column (nothing applied, the profile in force
 * unchanged; the state records it), profile.not_found, 409 job.conflict while another activation is
 * queued or running (its id in *conflict_id), or the runner's 503. */
int profile_activate(const struct app *app, const char *name, const struct job_origin *origin, bool dry_run,
		     int64_t deadline_ms, json_t **out, int64_t *conflict_id, struct prof_err *pe);

/* The job kind (server/ops/kinds.c registers it). */
extern const struct job_kind profile_apply_job;

#endif
