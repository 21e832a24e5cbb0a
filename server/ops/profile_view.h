/* The profile in force as readers see it: GET /v1/profile, /v1/health's "profile", /metrics'
 * mempolicyd_profile_* families. Each read takes the state's snapshot (ops/profile_state.h) and
 * reads every managed key's file again, so "actual" is the kernel's value now and a key that
 * changed since the apply shows as drift even before the drift watcher reported it. */
#ifndef MPD_OPS_PROFILE_VIEW_H
#define MPD_OPS_PROFILE_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "server/app.h"
#include "server/ops/profile_state.h"

/* The snapshot with every key read now: keys' actual, in_sync and drifting refreshed, and the
 * drift reason (state degraded) when a managed key that was in sync after the apply differs now.
 * 0, or -1 when out of memory (*s empty). ps_snapshot_free it. */
int profile_view_read(const struct app *app, struct ps_snapshot *s);

/* GET /v1/profile: {"name", "state", "reasons", "operation_id", "job_id", "applied_ns",
 * "applying_job", "stale", "error", "summary", "keys": [{key, kind, comparator, values, expected,
 * actual, verdict, outcome, why, on_drift, required, managed, drifting, source, paths}]}. Owned;
 * NULL when out of memory. */
json_t *profile_view_json(const struct app *app);
/* One key as GET /v1/profile shows it (and the profile.apply job's result); the reasons' names.
 * New references. */
json_t *profile_view_key(const struct ps_key *pk);
json_t *profile_view_reasons(unsigned reasons);
/* {"name", "state", "reasons"}: /v1/health's member. */
json_t *profile_view_summary(const struct app *app);
/* mempolicyd_profile_state{profile,state}, mempolicyd_profile_degraded{reason} and
 * mempolicyd_profile_pool_target_pages{size,node}. */
void profile_view_metrics(const struct app *app, FILE *f);

#endif
