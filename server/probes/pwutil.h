/* What the probe workloads share: their parameter parsing (one strict rule for every kind), the
 * clock, /proc/vmstat counter deltas, a page's node and the process's own policy. Workload code
 * only; the daemon calls the parsers, the child calls the rest. */
#ifndef MPD_PROBES_PWUTIL_H
#define MPD_PROBES_PWUTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "server/kernel/topology.h"
#include "server/probes/workloads.h"

#define MIB (1024ull * 1024ull)
#define HPAGE_2M (2ull * MIB)

/* ---- parsing (daemon side) ---------------------------------------------------------------- */

/* params must be an object whose members are all in names (NULL-terminated): else 400
 * request.not_an_object / request.unknown_field naming the known ones. */
int pp_fields(const json_t *params, const char *const *names, mp_err *e);
/* An integer member in [min, max]; absent: dflt. 400 request.wrong_type, 422 probe.bad_param. */
int pp_int(const json_t *params, const char *name, int64_t min, int64_t max, int64_t dflt, int64_t *out,
	   mp_err *e);
/* A region size: an integer of bytes or a string with a unit ("64M", "1G"), a whole number of
 * unit_mib MiB, within [min_mib, max_mib]; absent: dflt_mib. Out in MiB. */
int pp_size_mib(const json_t *params, const char *name, uint64_t unit_mib, uint64_t min_mib, uint64_t max_mib,
		uint64_t dflt_mib, uint64_t *out_mib, mp_err *e);
/* Whether the member is present at all. */
bool pp_has(const json_t *params, const char *name);
int pp_bool(const json_t *params, const char *name, bool dflt, bool *out, mp_err *e);
/* A node id that is online, with memory (need_mem) or CPUs (need_cpu): 422 probe.bad_node. */
int pp_node(const json_t *params, const char *name, const struct topology *t, bool need_mem, bool need_cpu,
	    int dflt, int *out, mp_err *e);

/* ---- in the child ------------------------------------------------------------------------- */

int64_t pw_now_ns(void);                 /* CLOCK_MONOTONIC */
bool pw_past(const struct pw_env *env);

/* A snapshot of named /proc/vmstat counters (absent ones read 0). */
#define PW_VMSTAT_MAX 24
struct pw_vmstat {
	int n;
	const char *const *names;            /* borrowed: a static list */
	uint64_t v[PW_VMSTAT_MAX];
};
int pw_vmstat_read(const char *procfs_root, const char *const *names, struct pw_vmstat *s);
/* {"name": after - before, ...} (owned). */
json_t *pw_vmstat_delta(const struct pw_vmstat *before, const struct pw_vmstat *after);

/* The node of the page at addr (move_pages query mode), or -errno (-ENOENT: not present). */
int pw_page_node(void *addr);
/* Nodes of n pages in one call: status[i] is a node or -errno. 0 or -errno. */
int pw_pages_nodes(void **pages, unsigned long n, int *status);

/* The calling thread's policy as {"mode": "preferred", "nodes": "1"} (owned), and its nodes. */
json_t *pw_policy_json(idset *nodes, int *mode);
/* The CPU and node the caller runs on now, as {"cpu": C, "node": N} (owned). */
json_t *pw_where_json(void);

/* Binds the calling thread to the CPUs of a node (0 or -errno). */
int pw_bind_thread_to_node(const struct topology *t, unsigned node);
/* An /sys or /proc integer knob read and written through the kernel layer (0 or -errno). */
int pw_thp_enabled_read(const char *sysfs_root, char *buf, size_t len);
int pw_thp_enabled_write(const char *sysfs_root, const char *value);

/* ---- the probe table's side (probe.h) ---------------------------------------------------- */

/* In the probe child: the real roots ("/sys", "/proc") and the topology read now (static: one
 * child runs one workload). 0, or -1 with err filled. */
int pw_child_env(struct pw_env *env, char *err, size_t errlen);
/* Writes a workload's failure into err ("detail (ERRNO_NAME)") and returns -1. */
int pw_child_fail(const mp_err *e, char *err, size_t errlen);
/* Adds {"<prefix><node>": count} for every member of a {"node": count} object to s. */
void pw_summary_counts(json_t *s, const json_t *counts, const char *prefix);
/* Adds "node<N>_<field>" for every {"N": {field: v}} of nodes to s. */
void pw_summary_nodes(json_t *s, const json_t *nodes, const char *field);

#endif
