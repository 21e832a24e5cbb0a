/* Private to the experiment files (exp_parse.c: the request; exp_run.c: the job; exp_round.c: one
 * run of one arm; exp_stats.c: the comparisons; advice.c). */
#ifndef MPD_OPS_EXP_H
#define MPD_OPS_EXP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/jobs/job_ctx.h"
#include "server/ops/experiments.h"
#include "server/ops/launch.h"
#include "server/probes/probe.h"
#include "server/probes/typed.h"

struct knob;

struct exp_arm {
	char name[48];
	int nknobs;
	struct {
		const struct knob *k;    /* the catalogue's */
		char value[64];          /* kernel text */
	} knob[EXP_MAX_KNOBS];
	struct launch_req lr;        /* owned: only mode/policy/nodes and the CPUs are used */
};

struct exp_args {
	const struct app *app;       /* borrowed */
	int narms;
	struct exp_arm arm[EXP_MAX_ARMS];
	int rounds, warmup;
	uint64_t seed;
	int64_t timeout_ms;          /* per run */
	/* the workload: a probe kind, or the caller's program */
	const struct probe_kind *probe;   /* static; NULL for a program */
	unsigned kind;               /* probe's index in the probe table */
	union probe_params typed;
	json_t *params;              /* owned: the probe's normalised parameters */
	struct launch_req prog;      /* owned: the program (argv, env, cwd, identity) */
	int peer_fd;                 /* owned: the caller's connection (a program under the helper); -1 */
	json_t *request;             /* owned: as recorded */
	json_t *host;                /* owned: {"kernel_release", "topology"}: what advice matches on */
};

void exp_args_free(void *arg);
/* The request into a (zeroed, app set, peer_fd set): 0 or -1 with e (4xx), nothing changed. */
int exp_parse(struct exp_args *a, const json_t *body, const struct launch_who *who, mp_err *e);
/* Adds knob `name` = v (a string or an integer) to arm, checked as "knobs" are: a knob of the
 * catalogue this kernel has, a value it takes, not one the arm already sets. where prefixes the
 * detail after "arm NAME: " ("" or "profile:3:1: "). 0, or -1 with e. */
int exp_arm_knob(const struct app *app, struct exp_arm *arm, const char *where, const char *name, const json_t *v,
		 mp_err *e);
/* An arm's "profile": a fragment in the profile syntax whose [knobs] keys are added to arm as
 * exp_arm_knob adds them (exp_profile.c). What an arm cannot set is refused at its line:column. */
int exp_arm_profile(const struct app *app, const json_t *text, struct exp_arm *arm, mp_err *e);
/* {"kernel_release", "topology": "0:cpus 0-1 mem 8G; ..."} of this host now (owned), or NULL. */
json_t *exp_host(const struct app *app);

/* One run of arm under its settings (already written): *metrics {name: number} (owned). 0; -1
 * with err (the workload failed: its error), or 1 when cancelled. */
int exp_round_run(struct job_ctx *ctx, const struct exp_args *a, const struct exp_arm *arm, json_t **metrics,
		  char *err, size_t errlen);

/* From samples (store/experiments.h's rows; warm-ups left out) and the arm names in order:
 * {"comparisons": [...], "summary": {arm: {metric: {n, median, mean, sd, min, max}}}} (owned), or
 * NULL when out of memory. */
json_t *exp_compare(const json_t *samples, const json_t *arm_names, uint64_t seed);
/* Is a lower value of metric better (-1), a higher (+1), or neither known (0: counters)? *primary:
 * it is what a setting is chosen for (times, rates), not only what it costs (faults, memory). */
int exp_metric_direction(const char *metric, bool *primary);

#endif
