/* NUMA memory policy: the modes and flags the kernel takes (include/uapi/linux/mempolicy.h, spelled
 * out here because the installed headers may predate weighted interleave), the raw syscalls with
 * the kernel's maxnode rule, and a start-up probe of what this kernel accepts. The probe runs in a
 * forked child, because set_mempolicy and prctl(PR_SET_THP_DISABLE) would change the daemon. */
#ifndef MPD_KERNEL_MPOL_H
#define MPD_KERNEL_MPOL_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/parse.h"

#define MPD_MPOL_DEFAULT             0
#define MPD_MPOL_PREFERRED           1
#define MPD_MPOL_BIND                2
#define MPD_MPOL_INTERLEAVE          3
#define MPD_MPOL_LOCAL               4   /* 3.8 */
#define MPD_MPOL_PREFERRED_MANY      5   /* 5.15 */
#define MPD_MPOL_WEIGHTED_INTERLEAVE 6   /* 6.9 */

#define MPD_MPOL_F_STATIC_NODES   (1 << 15)
#define MPD_MPOL_F_RELATIVE_NODES (1 << 14)
#define MPD_MPOL_F_NUMA_BALANCING (1 << 13)

#define MPD_PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1)   /* 6.18 */

/* How a mode takes nodes. */
enum mpol_nodes { MPOL_NODES_NONE, MPOL_NODES_OPTIONAL, MPOL_NODES_REQUIRED };

struct mpol_mode {
	const char *name;            /* the API's name: "bind", "preferred-many", ... */
	int mode;                    /* MPD_MPOL_* */
	enum mpol_nodes nodes;
	bool flags_ok;               /* static/relative allowed (not with default/local) */
};

/* The mode called name, or NULL. */
const struct mpol_mode *mpol_mode_by_name(const char *name);
/* The API's name of a kernel mode number, or NULL. */
const char *mpol_mode_name(int mode);

/* What the probe found this kernel to accept (kernel-interfaces.md §2.1, §4.1). */
struct mpol_caps {
	bool probed;                 /* false when the probe itself could not run */
	bool preferred_many;
	bool weighted_interleave;
	bool balancing_bind;         /* MPOL_F_NUMA_BALANCING with bind (5.12) */
	bool balancing_preferred_many; /* ... and with preferred-many (about 6.10) */
	bool thp_except_advised;     /* PR_THP_DISABLE_EXCEPT_ADVISED (6.18) */
};

/* Forks a child that tries each mode and flag on itself and reports by its exit status. Call
 * before any thread starts. */
void mpol_probe(struct mpol_caps *c);

/* A node mask in the kernel's format: maxnode is what to pass to set_mempolicy/migrate_pages
 * (the highest node bit + 2, since the kernel reads maxnode - 1 bits). */
#define MPOL_MASK_WORDS (IDSET_MAX / 64)
struct mpol_mask {
	unsigned long bits[MPOL_MASK_WORDS];
	unsigned long maxnode;
};
void mpol_mask_from(const idset *nodes, struct mpol_mask *m);

/* Raw syscalls: 0 / pages not moved, or -errno. Async-signal-safe (used in a forked child). */
int mpol_set(int mode_and_flags, const struct mpol_mask *m);
long mpol_migrate_pages(pid_t pid, const struct mpol_mask *from, const struct mpol_mask *to);
/* migrate_pages(2) of the process that pid names if it still started at start_time (-ESTALE,
 * -ESRCH otherwise), by this process, inside a pidfd bracket: -ESRCH also when the process exited
 * by the end of the call (which process the pid named at the syscall cannot be told then). Pages
 * not moved, or -errno. */
long mpol_migrate_checked(const char *procfs_root, pid_t pid, uint64_t start_time, const struct mpol_mask *from,
			  const struct mpol_mask *to);

#endif
