/* Hugetlb pool resizes (the mmtests hpagealloc method), in three steps:
 *   parse  the client's JSON into a resize_req, at the edge (PUT /v1/hugepages/{size}, and a
 *          schedule's action, both through one field table);
 *   plan   it against the machine now (topology, node memory, the current counts);
 *   start  the plan as a MPE_HUGEPAGES_RESIZE job that grows or shrinks in batches, reads the count
 *          back after every write and records each batch.
 * A dry run stops after the plan (resize_plan_json). */
#ifndef MPD_OPS_RESIZE_H
#define MPD_OPS_RESIZE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "server/jobs/job_ctx.h"
#include "server/kernel/topology.h"

struct app;
struct resize_args;              /* a plan (resize_plan.h); the job's argument once started */

/* Where a resize's JSON comes from, which decides the members it may have. */
enum resize_edge {
	RESIZE_PUT,                  /* PUT /v1/hugepages/{size}: the size is the URL's; "dry_run" */
	RESIZE_SCHEDULED,            /* a schedule's action.hugepages: "size" required; no "dry_run" */
};

/* A resize as the client asked for it: types checked, nothing checked against the machine yet
 * (counts against memory and nodes against the topology are the plan's). */
struct resize_req {
	uint64_t size_kb;            /* a size the kernel offers */
	bool has_total;              /* "total": one target, the global pool; else "nodes" */
	json_int_t total;
	int nnodes;
	struct { unsigned node; json_int_t pages; } nodes[TOPO_MAX_NODES]; /* as given, keys canonical */
	uint64_t batch;              /* 0: the default for the size */
	int64_t deadline_ms;         /* 0: none */
	bool compact, dry_run;
};

/* Whether a member may appear in a resize from this edge (the one field table). */
bool resize_field_ok(const char *name, enum resize_edge edge);

/* body is the JSON object; size_text the URL's size for RESIZE_PUT (NULL for RESIZE_SCHEDULED).
 * Errors: 400 MPE_RESIZE_BAD_REQUEST (both/neither total and nodes, bad types, unknown members),
 * 404 MPE_HUGEPAGES_UNKNOWN_SIZE, 422 MPE_RESIZE_BAD_NODE (a node key that is not a node id in
 * canonical decimal), MPE_RESIZE_BAD_BATCH, MPE_RESIZE_BAD_DEADLINE. */
int resize_parse(const struct app *app, const json_t *body, const char *size_text, enum resize_edge edge,
		 struct resize_req *r, mp_err *e);

/* The plan (owned by the caller: resize_plan_free), or NULL: 422 MPE_RESIZE_BAD_NODE (not online,
 * or no memory), 422 MPE_RESIZE_BAD_COUNT (beyond what the memory could hold), 500 when the
 * topology or the pool cannot be read. Writes nothing. */
struct resize_args *resize_plan(const struct app *app, const struct resize_req *r, mp_err *e);
void resize_plan_free(struct resize_args *p);
/* A dry run's answer: {"dry_run": true, "request": {...}, "targets": [...]} (owned). */
json_t *resize_plan_json(const struct resize_args *p);

/* Starts the plan (stolen, even on failure) as a job; returns it as GET /v1/jobs/{id} shows it
 * (owned). 409 MPE_JOB_CONFLICT when a resize of this size is queued or running (its id in
 * *conflict_id) — unless origin names a schedule: then it queues behind a few. */
/* True when every target already has its size and no resize of this page size is queued or
 * running: a PUT that would change nothing (it then starts no job and records nothing). */
bool resize_unchanged(const struct app *app, const struct resize_args *p);

json_t *resize_start(const struct app *app, struct resize_args *p, const struct job_origin *origin,
		     int64_t *conflict_id, mp_err *e);

/* The conflict key of a resize of this size ("hugepages:2048kB"): what another job acting on the
 * pool holds meanwhile (job_hold_key). */
void resize_conflict_key(uint64_t size_kb, char *key, size_t len);

/* The job kind (server/ops/kinds.c registers it). */
extern const struct job_kind resize_job;

#endif
