/* Running one pass of a probe's workload in a child process: `mempolicyd --probe-child KIND
 * PARAMS` exec'd from the daemon's own binary (/proc/self/exe) by kernel/spawn.c (through the
 * privileged helper under privilege separation, PARAMS made from the typed parameters), under the
 * request's memory policy and CPU binding, with its stdout a pipe. The parent reads the child's
 * one JSON document, and kills the child (SIGKILL, then reaps it) when the job is cancelled or the
 * pass outlives its time bound. */
#ifndef MPD_OPS_PROBE_CHILD_H
#define MPD_OPS_PROBE_CHILD_H

#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/kernel/mpol.h"

struct job_ctx;

union probe_params;

struct probe_child_spec {
	unsigned kind;               /* index in the probe table */
	unsigned pass;               /* of the kind's plan */
	const union probe_params *params;   /* borrowed: the kind's typed parameters */
	const char *sysfs_root;      /* borrowed: for the in-process check (priv/act.h) */
	unsigned mem_pct;            /* ditto */
	bool set_policy;
	int policy;                  /* MPD_MPOL_* | flags */
	struct mpol_mask nodes;
	const cpu_set_t *cpus;       /* borrowed; NULL: the daemon's affinity */
	size_t cpus_size;
	int64_t timeout_ms;          /* > 0 */
};

/* How a pass ended. */
enum probe_child_end { PCE_OK, PCE_FAILED, PCE_CANCELLED, PCE_TIMEOUT };

/* Runs the pass. PCE_OK: *result is the workload's result (owned by the caller). Otherwise err
 * says why (the workload's own error, the spawn step the kernel refused, a malformed answer), and
 * *err_no the errno when there is one. The child is always reaped before this returns. */
enum probe_child_end probe_child_run(struct job_ctx *ctx, const struct probe_child_spec *s, json_t **result,
				     int *err_no, char *err, size_t errlen);

#endif
