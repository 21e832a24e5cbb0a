/* The facade of the privileged acts: the one place that decides whether the privileged helper
 * acts or this process does. ops/, api/ and the job runner call these names, and cannot tell which
 * side ran them: with privilege separation (priv_active(), server/priv/priv.h) each is a request
 * of the closed set (server/priv/proto.h), checked again by the helper; without it (--user root,
 * the unit tests) the kernel primitive of server/kernel/ runs here. Each returns what the
 * primitive returns: 0 (or a count, a pid, an fd) or -errno; -EPIPE once the helper is gone.
 *
 * The arrows point down: api -> ops -> act -> (priv client | kernel); the helper -> kernel. */
#ifndef MPD_PRIV_ACT_H
#define MPD_PRIV_ACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/kernel/fanwatch.h"
#include "server/kernel/hugetlb.h"
#include "server/kernel/knobs.h"
#include "server/kernel/mpol.h"
#include "server/kernel/proc.h"
#include "server/kernel/spawn.h"

union probe_params;   /* server/probes/typed.h */

/* Fail closed (priv.h): true once the helper is lost; always false without one. Callers above
 * refuse changes with 503 priv.lost then, rather than report the helper's absence as the
 * kernel's refusal. */
bool act_helper_lost(void);
/* "running", "lost", or "none" (no privilege separation): what /v1/health and /metrics say. */
const char *act_helper_state(void);

/* How many requests of type (enum priv_type, 1 .. PRIV_TYPE_END - 1) the helper was sent, and the
 * type's name; 0 without a helper or for a type out of the set (*name then untouched). */
uint64_t act_helper_requests(unsigned type, const char **name);

/* The helper's pid while one runs, else -1: its writes are the daemon's own (the drift watcher). */
pid_t act_helper_pid(void);

/* knob_write (kernel/knobs.h). */
int act_knob_write(const struct knob_catalogue *c, const struct knob *k, const char *value);
/* knob_write_each (kernel/knobs.h): a transaction's writes, in one message to the helper. How many
 * were attempted (rc[] each one's result), or -errno when none was. */
long act_knob_write_each(const struct knob_catalogue *c, const struct knob *const *ks, const char *const *values,
			 size_t n, int *rc);
/* htlb_write_nr: nr_hugepages once (a restore). */
int act_pool_write(const char *sysfs_root, uint64_t size_kb, int node, uint64_t count);

/* A resize's pool: opened once, then runs of steps (htlb_run_steps), done where the privilege is
 * (in the helper, which keeps its own copy open, so no socket round trip falls between or inside
 * steps). */
struct act_pool {
	uint64_t size_kb;
	int node;
	struct kfs_file f;      /* owned; unused (fd -1) through the helper */
};
int act_pool_open(const char *sysfs_root, uint64_t size_kb, int node, struct act_pool *p);
int act_pool_run(struct act_pool *p, uint64_t from, uint64_t goal, uint64_t batch, unsigned max, int64_t budget_ns,
		 struct htlb_step *steps, unsigned *n);
void act_pool_close(struct act_pool *p);

/* nfd_write_file of the node labels file (server/fleet/nfd.h): the helper writes the path it was
 * given at start after checking the text; in this process, path (borrowed). */
int act_labels_write(const char *path, const char *text, size_t len);

/* htlb_compact: compact_memory once. */
int act_compact(const char *procfs_root);
/* proc_open_guarded: a proc_open_fn for the placement readers (kernel/placement.h). */
int act_proc_open(const char *procfs_root, pid_t pid, enum proc_file f);
/* mpol_migrate_checked: pages not moved, or -errno (-ESTALE: pid names another process now). */
long act_migrate(const char *procfs_root, pid_t pid, uint64_t start_time, const struct mpol_mask *from,
		 const struct mpol_mask *to);
/* madv_collapse through pidfd (borrowed): bytes advised. */
long act_collapse(int pidfd, uint64_t start, uint64_t len);
/* cg_write_mems in the cgroup directory dirfd (borrowed). */
int act_cg_mems(int dirfd, const char *text);

/* fw_open: a fanotify group (owned by the caller) with marks on the files of the n targets, made
 * where CAP_SYS_ADMIN is; *marked has bit i set for target i marked. The fd, or -errno. */
int act_watch(const struct knob_catalogue *c, const char *sysfs_root, const char *procfs_root,
	      const struct fw_target *t, unsigned n, uint64_t *marked);

/* spawn_start, spawn_reap, spawn_kill (kernel/spawn.h): a child started by act_spawn or
 * act_probe_start is reaped and killed with these. s->peer_fd is the client's connection. */
pid_t act_spawn(const struct spawn_spec *s, enum spawn_step *step);
int act_reap(pid_t pid, int *status, bool nohang);
/* A blocking act_reap that also gives the child's resource usage (wait4, where the child is). */
struct rusage;
int act_reap_usage(pid_t pid, int *status, struct rusage *ru);
int act_kill(pid_t pid);
/* A probe child: pass `pass` of probe table entry kind with its typed parameters, under s's
 * policy and CPUs, stdout s->stdout_fd; s->argv is not read (the command line is built from kind
 * and the parameters, which are checked again first: priv_probe_text). sysfs_root and mem_pct
 * serve the in-process check; the helper uses its own, given at start. */
struct act_probe {
	unsigned kind;                       /* index in probe_kinds */
	unsigned pass;                       /* of the kind's plan */
	const union probe_params *params;    /* borrowed */
	const char *sysfs_root;              /* borrowed */
	unsigned mem_pct;
};
pid_t act_probe_start(const struct spawn_spec *s, const struct act_probe *p, enum spawn_step *step);

#endif
