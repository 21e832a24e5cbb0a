/* The probe table: one entry per probe kind (POST /v1/probes/{kind}). A probe is a measurement
 * that runs in a child process, never in the daemon's address space: the daemon (ops/probes.c)
 * validates the request, records what the probe will change, then for each pass sets the pass's
 * knobs and runs the kind's workload in `mempolicyd --probe-child KIND PARAMS` — a fresh exec of
 * the daemon's own binary under the requested memory policy and CPU binding (kernel/spawn.c, as
 * POST /v1/processes starts programs) — reads its result as JSON from a pipe, and puts back what
 * it changed on every path (docs/reference/probes.md).
 *
 * This directory is the code that runs inside that child: workloads touch memory and read the
 * kernel's files themselves, because they measure the process they run in. Nothing here runs in
 * the daemon except the parsers and plans (pure functions of the request). How to add a probe:
 * docs/DESIGN.md, "How to add a probe". */
#ifndef MPD_PROBES_PROBE_H
#define MPD_PROBES_PROBE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define PROBE_MAX_PASSES   4
#define PROBE_MAX_SETTINGS 4
#define PROBE_MAX_SAVES    8

/* A knob a pass sets before its workload runs (a name from the knob catalogue, kernel text). The
 * framework saves the knob's value first and restores it after the last pass. */
struct probe_setting {
	const char *knob;            /* static */
	const char *value;           /* static */
};

/* One run of the workload. A kind with one pass and no settings needs no plan at all. */
struct probe_pass {
	const char *label;           /* static: "always", "never", ...; NULL for a lone pass */
	int nset;
	struct probe_setting set[PROBE_MAX_SETTINGS];
};

/* Something the workload itself changes (hugetlb-alloc grows a pool): saved in a pending-restore
 * row before the first pass and restored after the last, also after a crash. */
enum probe_save_what { PROBE_SAVE_KNOB, PROBE_SAVE_POOL };
struct probe_save {
	enum probe_save_what what;
	const char *knob;            /* PROBE_SAVE_KNOB: static catalogue name */
	uint64_t size_kb;            /* PROBE_SAVE_POOL */
	int node;                    /* PROBE_SAVE_POOL: -1 for the global pool */
};

struct probe_plan {
	int npasses;                 /* >= 1 */
	struct probe_pass pass[PROBE_MAX_PASSES];
	int nsaves;
	struct probe_save save[PROBE_MAX_SAVES];
	uint64_t bytes;              /* memory the workload will take at most: checked against the
	                              * configured share of free memory (409 probe.too_large) */
};

/* What the framework hands a kind's parser: the live facts it may check against. */
struct topology;

struct probe_env {
	const struct topology *topo; /* the live topology (nodes, CPUs, memory, hugetlb sizes) */
	int n_nodes;
	unsigned nodes[64];          /* online node ids */
	uint64_t mem_available;      /* bytes: the nodes' MemFree (probe_env_from, typed.h) */
};

union probe_params;              /* typed.h */
/* The JSON type of a kind's own parameter, as GET /v1/probes lists it (so a client such as
 * mempolicyctl can type NAME=VALUE text: "compare_thp=true" is the boolean true). */
enum probe_param_type {
	PROBE_PARAM_INTEGER,         /* a JSON integer */
	PROBE_PARAM_SIZE,            /* an integer of bytes or a string with a unit ("64M") */
	PROBE_PARAM_BOOLEAN,         /* true or false */
	PROBE_PARAM_STRING,          /* a string */
	PROBE_PARAM_LIST,            /* an array */
	PROBE_PARAM_OBJECT,          /* an object */
};

struct probe_param {
	const char *name;            /* static; NULL ends a table */
	enum probe_param_type type;
};

/* "integer", "size", "boolean", "string", "list", "object". */
const char *probe_param_type_name(enum probe_param_type t);
/* Fails (400 request.unknown_field, naming the known ones) on a member not in the table, as
 * pp_fields does with names; the table is the one GET /v1/probes lists. */
int probe_params_only(const json_t *params, const struct probe_param *table, mp_err *e);

struct probe_kind {
	const char *name;            /* the URL's {kind}: "thp-fault" */
	const char *job;             /* the job and history kind: "probe.thp-fault" */
	/* The kind's own parameters (not the framework's policy, cpus, cpunodes, timeout_s): the
	 * parser refuses any other member through this table, and GET /v1/probes lists it. */
	const struct probe_param *params;
	/* Validates the kind's own members of the request (the framework has taken out policy, cpus,
	 * cpunodes and timeout_s), strictly: an unknown member is 400. Returns the normalised
	 * parameters (owned by the caller: what the child gets and history records) and fills plan,
	 * or NULL with e filled (4xx, nothing changed). */
	json_t *(*parse)(const json_t *params, const struct probe_env *env, struct probe_plan *plan, mp_err *e);
	/* What parse returned, as the kind's fixed struct that crosses the privilege boundary (the
	 * kind's member of union probe_params, typed.h); 0, or -1 with e filled. */
	int (*pack)(const json_t *norm, const struct probe_env *env, union probe_params *out, mp_err *e);
	/* Back: parameters (a new object) that parse takes to the same normalised ones; NULL when out
	 * of memory. */
	json_t *(*unpack)(const union probe_params *p);
	/* Runs in the child (already under the policy and CPU binding), once per pass. params is what
	 * parse returned, plus "pass": the pass's label when it has one. Returns 0 with *result a
	 * JSON object (owned by the caller), or -1 with err filled. */
	int (*workload)(const json_t *params, json_t **result, char *err, size_t errlen);
	/* The figures history compare lines up, from one pass's result: a new object of numbers
	 * ("mib_per_s": ...). NULL: every top-level number of the result. */
	json_t *(*summary)(const json_t *result);
};

/* The table (table.c): every kind, in the order GET lists them. */
extern const struct probe_kind *const probe_kinds[];
extern const size_t probe_nkinds;
/* Exact-name lookup; NULL for anything not in the table. */
const struct probe_kind *probe_find(const char *name);

/* The child's entry point: `mempolicyd --probe-child KIND PARAMS-JSON` (main() calls it first
 * thing). Writes {"ok": true, "result": {...}} or {"ok": false, "error": "..."} on stdout, which
 * the daemon made a pipe. Returns the exit status. */
int probe_child_main(int argc, char **argv);

/* ---- helpers for parsers: strict members, 400/422 with the member's name ------------------- */

/* An integer member in [min, max]; def when absent. 400 wrong_type, 422 probe.bad_param. */
int probe_u64(const json_t *params, const char *key, uint64_t min, uint64_t max, uint64_t def, uint64_t *out,
	      mp_err *e);
/* A size member: an integer of bytes or a string with a unit ("64M", "2048kB", "1G"), in
 * [min, max] bytes; def when absent. */
int probe_size(const json_t *params, const char *key, uint64_t min, uint64_t max, uint64_t def, uint64_t *out,
	       mp_err *e);
/* A boolean member; def when absent. */
int probe_bool(const json_t *params, const char *key, int def, int *out, mp_err *e);

#endif
