/* Hugetlb pool resizes (the mmtests hpagealloc method): validate a target, run it as a job that
 * grows or shrinks in batches, reads the count back after every write and records each batch. */
#ifndef MPD_OPS_RESIZE_H
#define MPD_OPS_RESIZE_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"
#include "server/jobs/jobs.h"

struct app;

/* Validates target and submits a resize job. target is the JSON the API takes for
 * PUT /v1/hugepages/{size} plus "size":
 *   {"size": "2M", "total": N}  or  {"size": "2M", "nodes": {"0": 4096, "3": 16}}
 *   optional "batch" (pages per write), "deadline_ms", "compact" (bool), "dry_run" (bool).
 * size_text, when not NULL, overrides target's "size" (the API takes it from the path).
 * Errors: 400 MPE_RESIZE_BAD_REQUEST (both/neither total and nodes, bad types, unknown fields),
 * 404 MPE_HUGEPAGES_UNKNOWN_SIZE, 422 MPE_RESIZE_BAD_NODE (unknown or memory-less node),
 * 422 MPE_RESIZE_BAD_COUNT (absurd counts), 409 MPE_JOB_CONFLICT (a resize of this size is running;
 * its id in *conflict_id). On success *job_id is the new job (0 and *plan set for dry_run). */
int resize_submit(struct app *app, const json_t *target, const char *size_text, const struct job_actor *actor,
		  const char *source, int64_t schedule_id, int64_t *job_id, int64_t *conflict_id,
		  json_t **plan, mp_err *e);

/* Registered with the runner: a resize found running at start is "interrupted"; its result is the
 * pool of that size as re-read from the kernel now. */
json_t *resize_interrupted(struct app *app, int64_t job_id, const json_t *request);

#endif
