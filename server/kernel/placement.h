/* Where a process's memory really is: /proc/PID/numa_maps (per mapping: policy, pages per node,
 * page size), smaps (per mapping: end address, AnonHugePages), smaps_rollup (AnonHugePages in
 * all; skipped when /proc/meminfo's AnonHugePages is 0) and status (Mems_allowed_list), parsed
 * into one struct and summed per node.
 *
 * The parsers are pure functions of the text (pl_parse_*), so fixtures can test every form the
 * kernel prints (kernel-interfaces.md §4.10); pl_read() reads the files of a live process and
 * checks that the pid still names the same process afterwards.
 *
 * Units: numa_maps counts pages of kernelpagesize_kB each. For ordinary and THP mappings that is
 * base pages (a PMD THP adds 512); for hugetlb mappings each huge page counts 1 and the page size
 * is the huge size. Bytes = pages × kernelpagesize_kB × 1024 in all three cases.
 *
 * THP per node: numa_maps does not say which of a mapping's pages are huge, smaps says how much
 * of a mapping is THP but not on which node. A mapping whose pages all sit on one node gives its
 * AnonHugePages to that node exactly; the THP of a mapping spread over several nodes is counted
 * in thp_unattributed_bytes (and stays in those nodes' base_bytes) rather than guessed. */
#ifndef MPD_KERNEL_PLACEMENT_H
#define MPD_KERNEL_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/parse.h"
#include "server/kernel/proc.h"

/* Policy modes as mpol_to_str() prints them. PL_UNKNOWN: the kernel's own "unknown", or a mode
 * word a newer kernel added; the text is kept. */
enum pl_mode {
	PL_DEFAULT,
	PL_PREFER,
	PL_BIND,
	PL_INTERLEAVE,
	PL_LOCAL,
	PL_PREFER_MANY,
	PL_WEIGHTED_INTERLEAVE,
	PL_UNKNOWN,
};
#define PL_F_STATIC    0x1u
#define PL_F_RELATIVE  0x2u
#define PL_F_BALANCING 0x4u

/* The name the API uses for a mode ("preferred-many", "weighted-interleave", ...). */
const char *pl_mode_name(enum pl_mode m);

/* show_numa_map() formats the policy into a 64-byte buffer: a node list that does not fit is cut
 * at 63 characters and a longer text is impossible, so a 63-character policy may be cut. */
#define PL_POLICY_TEXT 64

struct pl_policy {
	enum pl_mode mode;
	unsigned flags;                /* PL_F_* */
	idset nodes;                   /* the nodes the policy names; empty for default and local */
	bool maybe_truncated;          /* 63 characters: nodes may be a prefix of the real list */
	char text[PL_POLICY_TEXT];     /* as the kernel printed it, e.g. "prefer (many)=static:0-1" */
	bool names_nodes;              /* nodes is not empty: locality means something */
	/* Summary (pl_summarise): */
	uint64_t mappings, bytes, local_bytes; /* governed, resident bytes, of them on its nodes */
};

/* Parses one policy text ("bind=static|balancing:0-1"). 0 or -EINVAL. */
int pl_parse_policy(const char *text, struct pl_policy *p);

enum pl_kind { PL_KIND_ANON, PL_KIND_FILE, PL_KIND_HEAP, PL_KIND_STACK };
const char *pl_kind_name(enum pl_kind k);

struct pl_count {
	uint32_t node;
	uint64_t pages;                /* in the mapping's page_kb */
};

struct pl_mapping {
	uint64_t start;
	uint64_t end;                  /* from smaps/maps; 0 when the VMA changed between reads */
	uint32_t policy;               /* index into placement.policies */
	enum pl_kind kind;
	bool huge;                     /* a hugetlb mapping ("huge") */
	uint32_t path;                 /* offset into placement.strings, file mappings; else 0 */
	uint64_t page_kb;              /* kernelpagesize_kB; 0 when nothing is resident */
	uint64_t anon, dirty, mapmax, swapcache, writeback;
	uint64_t pages;                /* sum of the N<node>= counts */
	uint64_t thp_kb;               /* AnonHugePages from smaps (0 when smaps was not read) */
	uint32_t first_count, n_counts; /* placement.counts[first_count ..] */
};

#define PL_MAX_NODES 64
#define PL_MAX_HSIZES 4

struct pl_node {
	unsigned id;
	uint64_t base_bytes;           /* non-hugetlb bytes not attributed to THP */
	uint64_t thp_bytes;            /* AnonHugePages of mappings wholly on this node */
	uint64_t hugetlb_bytes;
	uint64_t hugetlb_pages[PL_MAX_HSIZES]; /* per placement.hsize_kb[i] */
};

struct placement {
	pid_t pid;
	uint64_t start_time;           /* /proc/PID/stat field 22, clock ticks after boot */
	char name[64];                 /* status "Name:" (comm, at most 15 bytes + escapes) */
	long uid, euid, suid;          /* status "Uid:" real, effective, saved; -1 when unread */
	idset mems_allowed;            /* status Mems_allowed_list */
	bool have_mems_allowed;
	bool zombie;                   /* status "State: Z" */

	struct pl_mapping *mappings;   /* owned, in address order */
	size_t n_mappings, cap_mappings;
	struct pl_policy *policies;    /* owned: the distinct policies, first-seen order */
	size_t n_policies, cap_policies;
	struct pl_count *counts;       /* owned */
	size_t n_counts, cap_counts;
	char *strings;                 /* owned: NUL-terminated paths; offset 0 is "" */
	size_t n_strings, cap_strings;

	/* Summary (pl_summarise): */
	int n_nodes;                   /* ascending id; only nodes with pages */
	struct pl_node nodes[PL_MAX_NODES];
	int n_hsizes;
	uint64_t hsize_kb[PL_MAX_HSIZES];
	uint64_t resident_bytes;       /* every node, every kind */
	uint64_t thp_bytes;            /* the mappings' AnonHugePages in smaps, or the rollup's (one-node summary) */
	uint64_t thp_unattributed_bytes;
	uint64_t rollup_thp_kb;        /* smaps_rollup AnonHugePages */
	bool smaps_read;               /* per-mapping AnonHugePages and ends came from smaps */
	uint64_t policy_bytes;         /* bytes in mappings whose policy names nodes */
	uint64_t policy_local_bytes;   /* ... of which on those nodes */

	int bad_line;                  /* the 1-based line a parser refused, 0 when none */
};

void pl_init(struct placement *p);
void pl_free(struct placement *p);

/* Appends the mappings of a numa_maps text (len bytes, need not be NUL-terminated). Every line
 * must have the shape of §4.10; unknown key=value tokens are refused, so a format change is seen,
 * not misread. 0, -EINVAL (p->bad_line says where), -ENOMEM, -E2BIG (node id or count too big). */
int pl_parse_numa_maps(struct placement *p, const char *text, size_t len);

/* smaps or maps text: each header "start-end ..." sets the end of the mapping with that start,
 * and (smaps) "AnonHugePages: N kB" its thp_kb. Mappings it does not list keep end 0 (the VMA
 * changed between the reads); it may list mappings numa_maps did not. 0 or -EINVAL. */
int pl_parse_smaps(struct placement *p, const char *text, size_t len);

/* The same, a line at a time (no '\n'), for streaming a live process's files. bad_line counts
 * the lines given to one placement (numa_maps) or one reader (smaps). */
int pl_parse_numa_maps_line(struct placement *p, const char *line, size_t len);
struct pl_smaps_reader {
	struct placement *p;           /* borrowed */
	size_t next;                   /* first mapping not yet matched */
	long cur;                      /* the mapping of the last header; -1: not in numa_maps */
	int line;
};
void pl_smaps_begin(struct pl_smaps_reader *r, struct placement *p);
int pl_parse_smaps_line(struct pl_smaps_reader *r, const char *line, size_t len);

/* "AnonHugePages:" of smaps_rollup. 0 or -EINVAL. */
int pl_parse_rollup_thp(const char *text, uint64_t *kb);

/* Name, State (zombie), Uid and Mems_allowed_list from status. 0 or -EINVAL. */
int pl_parse_status(struct placement *p, const char *text);

/* Sums the mappings into nodes, THP and locality. -E2BIG for more than PL_MAX_NODES nodes or
 * PL_MAX_HSIZES hugetlb sizes. */
int pl_summarise(struct placement *p);

/* Bytes of mapping m on each node: n_counts entries of placement.counts. */
static inline uint64_t pl_count_bytes(const struct pl_mapping *m, const struct pl_count *c)
{
	return c->pages * m->page_kb * 1024;
}

/* Reads and summarises pid's placement from procfs_root: stat (start time), status, numa_maps
 * while a second thread reads smaps_rollup and maps (ends only: maps does not walk page tables),
 * then smaps when the rollup shows THP (per-mapping AnonHugePages), then stat again. 0; -ESRCH when there is no
 * such process or it exited while being read (a zombie's files are empty); -ESTALE when the pid
 * named another process by the end; -EINVAL for text that does not parse; -ENOMEM; -E2BIG.
 * If expect_start is non-zero the process must have that start time (else -ESTALE). The files
 * that need ptrace access (numa_maps, smaps_rollup, maps, smaps) are opened by open. */
int pl_read(const char *procfs_root, proc_open_fn open, pid_t pid, uint64_t expect_start, struct placement *p);
/* pl_read with flags. PL_NO_ENDS: the mappings' ends and their own AnonHugePages are not needed
 * (a summary without the mapping list), so maps is not read; they stay 0 unless smaps was read
 * for THP, and smaps is not read either when every resident base page is on one node (the
 * rollup's THP is then that node's, smaps_read false). */
#define PL_NO_ENDS 0x1u
int pl_read_opts(const char *procfs_root, proc_open_fn open, pid_t pid, uint64_t expect_start, unsigned flags,
		 struct placement *p);

/* Who may see the guarded files (numa_maps, smaps, smaps_rollup, maps: the ones the privileged
 * helper opens under separation). may() is called with p's stat and status read (pid, start
 * time, name, uids), before any guarded file is opened, so that a caller who may not see the
 * process costs no privileged open; and again on status read once more after them, so that a
 * process that exec'd a set-uid program in between is not shown. 0 goes on; PL_REFUSED stops
 * the read, which returns PL_REFUSED (the gate keeps its own reason). */
#define PL_REFUSED 1
struct pl_gate {
	int (*may)(void *arg, const struct placement *p);
	void *arg;                     /* borrowed */
};
/* Whether uid may act on pid as the kernel's PTRACE_MODE_READ_REALCREDS would let it, uid part:
 * every uid of the process (real, effective, saved) is uid, and it is dumpable (procfs gives a
 * non-dumpable process's directory to root). 0, -EPERM when not (an exec of a set-uid program
 * makes it so), -ESRCH when there is no such process, another -errno. */
int pl_owned_by(const char *procfs_root, pid_t pid, uid_t uid);

/* pl_read_opts behind a gate (NULL: the daemon's own read, no caller to check). */
int pl_read_gated(const char *procfs_root, proc_open_fn open, pid_t pid, uint64_t expect_start, unsigned flags,
		  const struct pl_gate *gate, struct placement *p);

#endif
