/* profile.apply's pools (internal to ops/profile_apply.c): each pool target out of sync planned as a
 * resize (ops/resize.h: counts against memory, nodes against the topology) and run by the resize
 * job's own run() inside the profile.apply job, so its batches are that operation's. A run that
 * stops short compacts memory and tries again until the job's deadline, as an uneven per-node
 * split needs (PAO #279 loops 60 s for it); what is still short then is partial, with the why. */
#ifndef MPD_OPS_PROFILE_POOLS_H
#define MPD_OPS_PROFILE_POOLS_H

#include <jansson.h>
#include <stddef.h>

#include "server/app.h"
#include "server/jobs/job_ctx.h"
#include "server/ops/profile_state.h"
#include "server/ops/profiles.h"

/* Validation: every pool key out of sync planned alone against this host now. 0, or -1 with pe at
 * the key (profile.bad_value: beyond the memory there, a node without a pool). Writes nothing. */
int profile_pools_check(const struct app *app, const struct profile_checked *ck, struct prof_err *pe);

/* The job's step: resizes every pool out of sync (keys parallel to ck->doc.keys get their outcome:
 * resized, partial with why, failed), appending each resize's result to pools. Returns
 * PSR_PARTIAL_ALLOCATION and/or PSR_APPLY_FAILED; out->reason is set for a partial one; the first
 * failure's sentence goes to err (when not NULL). */
unsigned profile_pools_apply(struct job_ctx *ctx, const struct app *app, const struct profile_checked *ck,
			     struct ps_key *keys, json_t *pools, struct job_outcome *out, char *err, size_t errlen);

#endif
