/* Experiments (POST /v1/experiments): arms of settings (knob values, or a memory policy and CPU
 * binding for the workload) compared on one workload (a probe kind, or the caller's own program
 * run as the caller), in interleaved, balanced rounds (ABBA blocks, the order within a block drawn
 * from a recorded seed), warm-up rounds run and kept apart, every knob saved before the first
 * change and put back on every path (ops/restore.h, so a crash is put right at the next start),
 * the raw samples kept per run and metric (store/experiments.h), and each arm compared with the
 * first per metric (common/stats.h). One experiment at a time, and never beside a probe (one
 * conflict key: they would measure each other). GET /v1/advice reads the experiments back. */
#ifndef MPD_OPS_EXPERIMENTS_H
#define MPD_OPS_EXPERIMENTS_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"
#include "server/jobs/job_ctx.h"
#include "server/ops/launch.h"

struct app;
struct jobs;

#define EXP_JOB_KIND    "experiment.run"   /* the job and history kind */
#define EXP_MAX_ARMS    8
#define EXP_MAX_ROUNDS  1000
#define EXP_MAX_WARMUP  10
#define EXP_MAX_KNOBS   8    /* per arm; the union of every arm's knobs is at most RESTORE_MAX */

/* Validates body (nothing runs, nothing is recorded for a bad one) and submits the job; who is
 * the caller, whose program (a workload {"argv": [...]}) runs as them. who->conn_fd, when >= 0, is
 * a duplicate of the caller's connection that the job takes ownership of (even on failure): under
 * privilege separation the helper starts a program as the caller only while that connection is
 * open. Returns the job (owned) or NULL: 400/404/409/422 as the registry says, 409 job.conflict
 * with the running experiment's or probe's id in *conflict_id. */
json_t *experiment_start(const struct app *app, const json_t *body, const struct launch_who *who,
			 const struct job_origin *origin, int64_t *conflict_id, mp_err *e);

/* The job kind (ops/kinds.c registers it). */
extern const struct job_kind experiment_job;

/* GET /v1/experiments: the experiment jobs, newest first (limit 1..1000): [{"id", "status",
 * "summary": "experiment always vs never on sparse-touch, 10 rounds ok", "created_ns", "error"}]
 * (owned). */
json_t *experiments_list(const struct app *app, int limit, mp_err *e);
/* GET /v1/experiments/{id}: the job with its request, progress and outcome, and the comparisons
 * and per-arm summaries computed again from the stored samples (owned); 404 experiment.not_found. */
json_t *experiment_get(const struct app *app, int64_t id, mp_err *e);
/* The experiment's job as jobs_get gives it (owned); 404 experiment.not_found for an id that is
 * no job or another kind's. */
json_t *experiment_job_get(const struct app *app, int64_t id, mp_err *e);
/* GET /v1/experiments/{id}/samples: {"id", "operation_id", "samples": [...]} (owned). */
json_t *experiment_samples(const struct app *app, int64_t id, mp_err *e);

/* GET /v1/advice: floor_pct (> 0) the smallest median difference worth advising. (owned) */
json_t *advice_get(const struct app *app, double floor_pct, mp_err *e);

#endif
