/* The plan of a resize: the targets (global or per node) and options, parsed from the client's
 * JSON (resize_parse), checked against the machine (plan_targets) and turned back into JSON for the
 * job, its progress and its result. Internal to ops/resize.c and ops/resize_plan.c. */
#ifndef MPD_OPS_RESIZE_PLAN_H
#define MPD_OPS_RESIZE_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "server/kernel/topology.h"

struct app;

struct resize_target {
	int node;                    /* < 0: the global nr_hugepages */
	uint64_t goal;
	uint64_t from, now;          /* read when the job starts, and as it goes */
	uint64_t moved;              /* pages gained (grow) or freed (shrink) */
	int64_t elapsed_ns;          /* sum over this target's writes */
	int batches;
	const char *stop;            /* NULL while running; "target", "no_progress", "deadline", ... */
};

struct resize_args {
	const struct app *app;       /* borrowed */
	uint64_t size_kb;
	uint64_t batch;
	int64_t deadline_ms;         /* 0: none */
	bool compact;
	int64_t seq;                 /* batches this operation recorded before the run (it numbers on from
	                              * here, and leaves its last number): 0 but for a run of several
	                              * resizes in one operation (profile.apply) */
	int n;
	struct resize_target t[TOPO_MAX_NODES];
};

struct resize_req;
/* "total" or "nodes" of r against the topology: counts within memory, nodes online and with a
 * pool; fills a->t in ascending node order. a->app and a->size_kb must be set. */
int plan_targets(const struct resize_req *r, struct resize_args *a, const struct topology *t, mp_err *e);
/* The normalised request stored with the job and in history. */
json_t *plan_request_json(const struct resize_args *a);
/* Per target: node, from, target, current, achieved; with done also asked, got, batches,
 * elapsed_ns, latency_per_page_ns, stopped. */
json_t *plan_targets_json(const struct resize_args *a, bool done);

#endif
