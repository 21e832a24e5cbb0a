/* Probes (POST /v1/probes/{kind}): measurements that run as jobs, one job kind per entry of the
 * probe table (server/probes/probe.h). probe_start validates everything before anything runs (a
 * bad request starts nothing and records nothing) and submits the job; the job saves what the
 * probe will change (ops/restore.h), runs each pass of the workload in a child
 * (ops/probe_child.h), and restores on every path. */
#ifndef MPD_OPS_PROBES_H
#define MPD_OPS_PROBES_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"
#include "server/jobs/job_ctx.h"

struct app;
struct jobs;

#define PROBE_DEFAULT_MEM_PCT 25     /* the share of free memory a probe may take, by default */
#define PROBE_DEFAULT_TIMEOUT_S 60   /* per pass */
#define PROBE_MAX_TIMEOUT_S 600

/* Starts a probe of kind (the URL's text) with body (the request). Returns the job as GET
 * /v1/jobs/{id} shows it (owned), or NULL: 404 probe.unknown, 400/422 for bad members, 409
 * probe.too_large (beyond the share of free memory), 409 job.conflict (another probe runs; its id
 * in *conflict_id). */
json_t *probe_start(const struct app *app, const char *kind, const json_t *body, const struct job_origin *origin,
		    int64_t *conflict_id, mp_err *e);

/* Registers one job kind per probe (ops/kinds.c calls it). */
int probes_register(struct jobs *j, mp_err *e);

/* The probe table as GET /v1/probes lists it: [{"kind", "job"}] (owned). */
json_t *probes_list(void);

#endif
