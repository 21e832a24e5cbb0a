/* A probe kind's parameters as they cross the privilege boundary: one fixed struct per kind, in
 * one union, so that no text the serving side wrote reaches the root helper or the probe child it
 * starts. The serving side packs the normalised parameters (what the kind's parse returned) into
 * it (probe_kind.pack); the helper unpacks it into its own JSON (probe_kind.unpack) and runs the
 * kind's own parse on that with the topology and free memory it reads itself (probe_recheck), so
 * it checks against the very limits the serving side used; the child gets the helper's JSON. */
#ifndef MPD_PROBES_TYPED_H
#define MPD_PROBES_TYPED_H

#include <stdint.h>

#include "common/err.h"
#include "server/probes/probe.h"
#include "server/probes/workloads.h"

/* touch (touch.c). */
struct touch_params {
	uint64_t size;               /* bytes */
	uint64_t hold_ms;
	uint32_t nthp;               /* 0: one pass; else passes of thp.enabled = thp[i] */
	uint32_t thp[PROBE_MAX_PASSES];   /* 0 always, 1 madvise, 2 never */
};

struct sparse_touch_typed {
	struct sparse_touch_params p;
	uint32_t compare_thp;        /* 0 or 1 */
	uint32_t pad;
};

/* A kind that runs inside another (fragment's "during"): any kind but fragment. */
union probe_leaf_params {
	struct touch_params touch;
	struct thp_fault_params thp_fault;
	struct hugetlb_alloc_params hugetlb_alloc;
	struct sparse_touch_typed sparse_touch;
	struct remote_access_params remote_access;
	struct numa_hinting_params numa_hinting;
};

struct fragment_typed {
	struct fragment_params own;
	uint32_t inner_kind;         /* index in probe_kinds; probe_nkinds: nothing runs inside */
	uint32_t pad;
	union probe_leaf_params inner;
};

union probe_params {
	union probe_leaf_params leaf;
	struct fragment_typed fragment;
};

/* The live facts a kind's parse checks against, from the topology: every node, and the free memory
 * the share is taken of (the nodes' MemFree). The one place both sides compute them. */
void probe_env_from(const struct topology *t, struct probe_env *env);

/* The free-memory share: 0, or -1 with 409 probe.too_large when plan needs more than pct % of
 * env's free memory. */
int probe_check_share(const struct probe_plan *plan, const struct probe_env *env, unsigned pct, mp_err *e);

/* The helper's check of typed parameters (and the in-process path's, so both start the child
 * alike): kind's unpack, then its parse against env, then the share. Returns the normalised
 * parameters for the child with "pass": the label of pass `pass` of the plan it computed (a new
 * reference), and fills plan; or NULL with e filled (an unknown kind, a field out of range, a pass
 * the plan does not have, more memory than the share). */
json_t *probe_recheck(unsigned kind, const union probe_params *p, unsigned pass, const struct probe_env *env,
		      unsigned pct, struct probe_plan *plan, mp_err *e);

#endif
