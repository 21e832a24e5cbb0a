/* The probe workloads: the measurements of kernel-interfaces.md Part 2, each the method of one seed
 * experiment, written as plain functions that run in a probe's child process (never in the
 * daemon's address space: they map and fault memory, start threads, set their own policy and CPU
 * binding and write THP, numa_balancing and pool knobs). The probe framework (the probe table, the
 * child runner, restore rows) forks the child, binds it as the request asks, calls run() there and
 * ships the result JSON back; it records the changes a workload declares (PW_CHANGES_*) before the
 * child starts and puts them back however the child ends. A workload also puts back what it
 * changed itself when it ends normally, so the framework's restore is the safety net for a child
 * that is killed (cancel, deadline) or crashes.
 *
 * Each workload has the same four parts (struct probe_workload):
 *   parse  the kind's own members of the request (the framework strips "policy", "cpus", "during"
 *          and its other common members first) into a typed argument, checked against the
 *          topology read by the daemon: 400 request.unknown_field / request.wrong_type,
 *          422 probe.bad_param / probe.bad_node. Runs in the daemon; touches nothing.
 *   bytes  how much memory the run will touch at most, for the framework's free-memory bound.
 *   run    the measurement, in the child: 0 with *result (owned) filled, or -1 with e filled.
 *   free   releases the argument.
 * Units in results: seconds as doubles ("_s"), milliseconds ("_ms"), nanoseconds ("_ns"), MiB/s,
 * and page counts; node keys are decimal node ids. */
#ifndef MPD_PROBES_WORKLOADS_H
#define MPD_PROBES_WORKLOADS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "server/kernel/topology.h"

/* What a workload sees of the daemon. All borrowed. In the probe child (an exec of the daemon's
 * binary) the roots are "/sys" and "/proc" and the topology is read there. */
struct pw_env {
	const char *sysfs_root;      /* knobs, pools, node files */
	const char *procfs_root;     /* vmstat, buddyinfo */
	const struct topology *topo;
	int64_t deadline_ns;         /* CLOCK_MONOTONIC; 0: none. A workload stops between steps
	                              * past it and reports what it measured (the daemon also kills a
	                              * child that overstays) */
};

/* ---- the typed arguments (also what tests and the bench driver fill directly) ---------------- */

struct thp_fault_params {
	uint64_t size_mib;           /* the region; whole 2 MiB chunks */
	uint32_t loops;              /* passes; 0 when duration_s decides */
	uint32_t duration_s;         /* stop after the pass that crosses it; 0 when loops decides */
};
int probe_thp_fault(const struct pw_env *env, const struct thp_fault_params *p, json_t **result, mp_err *e);
int thp_fault_parse(const json_t *params, struct thp_fault_params *p, mp_err *e);
json_t *thp_fault_params_json(const struct thp_fault_params *p);

struct hugetlb_alloc_params {
	uint64_t size_kb;            /* the page size */
	int node;                    /* -1: the global pool */
	uint64_t target;             /* grow to this many pages (above the current count) */
	uint32_t batch;              /* pages per write */
	uint32_t timeout_s;          /* give up a batch that makes no progress for this long */
};
int probe_hugetlb_alloc(const struct pw_env *env, const struct hugetlb_alloc_params *p, json_t **result,
			mp_err *e);
int hugetlb_alloc_parse(const json_t *params, const struct topology *t, struct hugetlb_alloc_params *p, mp_err *e);
json_t *hugetlb_alloc_params_json(const struct hugetlb_alloc_params *p);

struct sparse_touch_params {
	uint64_t size_mib;           /* the whole region, shared out among the threads */
	uint32_t threads;
	uint32_t touches;            /* bytes touched per 2 MiB (spread 4 KiB apart, < 512) */
	uint32_t passes;             /* how often each thread walks its share */
};
int probe_sparse_touch(const struct pw_env *env, const struct sparse_touch_params *p, json_t **result,
		       mp_err *e);
/* compare_thp: two passes, thp.enabled=always then never (the framework sets them). */
int sparse_touch_parse(const json_t *params, struct sparse_touch_params *p, bool *compare_thp, mp_err *e);
json_t *sparse_touch_params_json(const struct sparse_touch_params *p, bool compare_thp);

struct remote_access_params {
	uint64_t size_mib;           /* buffer per node pair */
	uint32_t passes;             /* bandwidth: sequential read passes; the best is kept */
	uint32_t chase_steps;        /* latency: dependent loads per pair (pointer chase) */
};
int probe_remote_access(const struct pw_env *env, const struct remote_access_params *p, json_t **result,
			mp_err *e);
int remote_access_parse(const json_t *params, struct remote_access_params *p, mp_err *e);
json_t *remote_access_params_json(const struct remote_access_params *p);

struct numa_hinting_params {
	uint64_t size_mib;
	uint32_t threads;
	int mem_node;                /* A: where the memory is first placed */
	int cpu_node;                /* B: where the threads run */
	uint32_t duration_s;
};
/* One pass under the kernel.numa_balancing in force (the framework runs it with 1, then 0). */
int probe_numa_hinting(const struct pw_env *env, const struct numa_hinting_params *p, json_t **result,
		       mp_err *e);
int numa_hinting_parse(const json_t *params, const struct topology *t, struct numa_hinting_params *p, mp_err *e);
json_t *numa_hinting_params_json(const struct numa_hinting_params *p);

/* fragment: takes the memory and leaves it fragmented; probe_fragment_release() frees it. */
struct fragment_params {
	int node;
	uint32_t share_pct;          /* of the node's free memory to take in base pages */
	uint64_t max_mib;            /* and never more than this */
};
struct fragment_hold {
	void *base;                  /* owned mapping */
	uint64_t len;
};
int probe_fragment(const struct pw_env *env, const struct fragment_params *p, struct fragment_hold *h,
		   json_t **result, mp_err *e);
void probe_fragment_release(struct fragment_hold *h);
/* extra: NULL-terminated members the caller takes itself ("during"), or NULL. */
int fragment_parse(const json_t *params, const struct topology *t, const char *const *extra,
		   struct fragment_params *p, mp_err *e);
json_t *fragment_params_json(const struct fragment_params *p);
uint64_t fragment_bytes(const struct fragment_params *p, const struct topology *t);

#endif
