/* The privileged helper's wire format: what the unprivileged daemon may ask the helper to do.
 * The closed set of request types is one table, priv_requests[] (helper.c): each type's name,
 * exact size, the descriptors it may carry, what the helper checks and what it does; docs/DESIGN.md
 * lists it (a unit test holds the two together).
 *
 * The set is closed and every request is typed: the helper builds every path itself from numbers
 * and enums (a knob is its index in the catalogue both processes built before the fork, a pool is
 * a page size and a node), so no message carries a path or a command. Each message is one
 * SOCK_SEQPACKET datagram of exactly the size of its struct, header included; the helper refuses
 * anything else (other size, unknown type, a field out of range) with -EBADMSG or -EINVAL and goes
 * on serving. The client, in turn, closes a channel for good on an answer that is not the one to
 * its request (server/priv/client.c). Both ends are the same binary, so the structs are not
 * versioned; the header's magic catches a stray writer. */
#ifndef MPD_PRIV_PROTO_H
#define MPD_PRIV_PROTO_H

#include <stdint.h>

#include "server/kernel/fanwatch.h"
#include "server/kernel/hugetlb.h"
#include "server/kernel/mpol.h"
#include "server/kernel/proc.h"
#include "server/fleet/nfd.h"
#include "server/probes/typed.h"

#define PRIV_MAGIC 0x6d706431u   /* "mpd1" */
/* Larger than any message: a datagram that fills it is oversized, never silently truncated. The
 * largest is a spawn with its strings (below the socket's default send buffer, wmem_default). */
#define PRIV_MSG_MAX (128 * 1024)

enum priv_type {
	PRIV_KNOB_WRITE = 1,   /* write a catalogue knob */
	PRIV_POOL_WRITE,       /* write nr_hugepages once (restore) */
	PRIV_POOL_RUN,         /* a run of resize steps (write, read back), timed by the helper */
	PRIV_COMPACT,          /* write 1 to compact_memory */
	PRIV_PROC_OPEN,        /* open a ptrace-guarded procfs file of a pid: the fd comes back */
	PRIV_MIGRATE,          /* migrate_pages(2) of a pid checked against its start time */
	PRIV_COLLAPSE,         /* process_madvise(MADV_COLLAPSE) through the pidfd sent with it */
	PRIV_CG_MEMS,          /* write cpuset.mems in the cgroup directory whose fd is sent with it */
	PRIV_SPAWN,            /* start a program as the client on the connection whose fd is sent with it */
	PRIV_REAP,             /* collect the exit status of a program the helper started */
	PRIV_PROBE_START,      /* start a probe child (a kind of the probe table) writing to the pipe sent */
	PRIV_KILL,             /* SIGKILL a child the helper started and has not collected */
	PRIV_WATCH,            /* a fanotify group with marks on managed knob and pool files: the fd comes back */
	PRIV_LABELS_WRITE,     /* write the node labels file named at start (h-fleet) */
	PRIV_KNOB_WRITES,      /* a knob transaction's writes in order, each read back, in one message */
	PRIV_TYPE_END,
};

/* A reply's header is its request's: the same type and seq (0 and 0 when the request was too
 * short to have a header), which the client checks before it believes anything in it. */
struct priv_hdr {
	uint32_t magic;
	uint32_t type;         /* enum priv_type */
	uint32_t len;          /* the whole message, header included */
	uint32_t seq;          /* the client's count of requests on this channel, from 1 */
};

#define PRIV_KNOB_VALUE 64
struct priv_knob_write {
	struct priv_hdr h;
	uint32_t index;        /* in the knob catalogue */
	char value[PRIV_KNOB_VALUE];   /* canonical text, NUL-terminated inside the field */
	uint32_t pad;
};

/* PRIV_KNOB_WRITES: the writes of one knob transaction (ops/knobs.c) in one message instead of one
 * round trip each. Entries 0 .. n-1 are each checked exactly as a PRIV_KNOB_WRITE is, all before
 * any is written (one refused: the whole message is, -EINVAL, nothing written); the entries past
 * n are zero. Then the helper writes them in order, reading each back, and stops at the first the
 * kernel refuses or shows otherwise (kernel/knobs.h, knob_write_each): the answer's value is how
 * many it attempted and knob_rc[i] each one's result (0, 1: taken but reads otherwise, -errno).
 * Rolling back is the daemon's, with single writes, as before. */
#define PRIV_KNOB_BATCH 32
struct priv_knob_entry {
	uint32_t index;        /* in the knob catalogue */
	char value[PRIV_KNOB_VALUE];   /* canonical text, NUL-terminated inside the field */
	uint32_t pad;
};
struct priv_knob_writes {
	struct priv_hdr h;
	uint32_t n;            /* 1 .. PRIV_KNOB_BATCH */
	uint32_t pad;
	struct priv_knob_entry e[PRIV_KNOB_BATCH];
};

/* PRIV_POOL_WRITE. */
struct priv_pool {
	struct priv_hdr h;
	uint64_t size_kb;      /* a hugetlb size the kernel has */
	int32_t node;          /* -1: the global pool; else a node with a pool of this size */
	uint32_t pad;
	uint64_t count;        /* nr_hugepages to write */
};

/* PRIV_POOL_RUN: htlb_run_steps on the pool's nr_hugepages (the helper keeps the file open
 * across runs of the same pool); the steps come back in the reply. */
struct priv_pool_run {
	struct priv_hdr h;
	uint64_t size_kb;      /* as in priv_pool */
	int32_t node;
	uint32_t max_steps;    /* 1 .. HTLB_RUN_MAX */
	uint64_t from, goal;   /* from != goal, both <= INT64_MAX */
	uint64_t batch;        /* 1 .. INT64_MAX */
	int64_t budget_ns;     /* 0 .. PRIV_RUN_BUDGET_MAX */
};
#define PRIV_RUN_BUDGET_MAX (1000LL * 1000 * 1000)

struct priv_compact {
	struct priv_hdr h;
};

struct priv_proc_open {
	struct priv_hdr h;
	int32_t pid;           /* 1 .. PROC_PID_MAX */
	uint32_t file;         /* enum proc_file (kernel/proc.h): the guarded files only */
};

struct priv_migrate {
	struct priv_hdr h;
	int32_t pid;
	uint32_t pad;
	uint64_t start_time;   /* the pid's start time the caller saw; the helper checks it again */
	uint64_t maxnode;      /* 1 .. IDSET_MAX + 1 */
	uint64_t from[MPOL_MASK_WORDS], to[MPOL_MASK_WORDS];
};

/* Carries the target's pidfd (SCM_RIGHTS), which the daemon opened and checked against the start
 * time; the helper checks that it is a pidfd. Any other request carrying an fd is refused. */
struct priv_collapse {
	struct priv_hdr h;
	uint64_t start;        /* page-aligned user address */
	uint64_t len;          /* page-aligned, > 0, start + len in the user address space */
};

/* Carries the cgroup directory's fd (SCM_RIGHTS), which the daemon walked to with O_NOFOLLOW from
 * the cpuset mount (kernel/cgroup.c); the helper checks it is a directory of a cgroup file system
 * (or, with a generated tree, under the helper's own cgroup mount) and writes the list it formats
 * itself from the mask. */
struct priv_cg_mems {
	struct priv_hdr h;
	uint64_t nodes[IDSET_MAX / 64];   /* empty: inherit (v2) */
};

/* PRIV_SPAWN carries the client's connection (SCM_RIGHTS): the helper acts only when the kernel
 * says it is a connection accepted on the API socket whose client is still connected, and takes
 * the identity from that socket's credentials (server/priv/identity.h), never from the daemon's
 * word. A non-root client gets exactly its own
 * uid and gid and a subset of its own groups; only a root client may name another user (as the
 * API allows). The strings are counted: data holds argc argument, envc
 * "NAME=value" entries and the cwd, each NUL-terminated, filling exactly data_len bytes. The policy
 * and CPUs are typed and applied by the child on itself before exec (kernel/spawn.c). */
#define PRIV_SPAWN_DATA   (96 * 1024)
#define PRIV_SPAWN_ARGS   4096
#define PRIV_SPAWN_GROUPS 1024
struct priv_spawn {
	struct priv_hdr h;
	uint32_t uid, gid;
	uint32_t ngroups;      /* 0 .. PRIV_SPAWN_GROUPS */
	uint32_t argc;         /* 1 .. PRIV_SPAWN_ARGS, argv[0] non-empty */
	uint32_t envc;         /* 0 .. PRIV_SPAWN_ARGS */
	uint32_t data_len;     /* 1 .. PRIV_SPAWN_DATA */
	uint32_t thp;          /* enum spawn_thp */
	uint32_t set_policy;   /* 0 or 1 */
	int32_t policy;        /* MPD_MPOL_* | MPD_MPOL_F_*: the kernel checks it in the child */
	uint32_t has_cpus;     /* 0 or 1 */
	uint64_t maxnode;      /* 0 .. IDSET_MAX + 1 */
	uint64_t nodes[MPOL_MASK_WORDS];
	uint64_t cpus[IDSET_MAX / 64];
	uint32_t groups[PRIV_SPAWN_GROUPS];
	char data[PRIV_SPAWN_DATA];
};

/* Answered with rc 0 and value the wait status once the program exited, -EAGAIN while it runs,
 * -ECHILD when the pid is not one the helper started (or was collected already). */
struct priv_reap {
	struct priv_hdr h;
	int32_t pid;
	uint32_t pad;
};

/* PRIV_PROBE_START carries the write end of the pipe the probe child answers on (SCM_RIGHTS).
 * The parameters are typed: the kind's fixed struct (server/probes/typed.h). The helper unpacks
 * them into its own JSON and runs the kind's own parser on it against the topology and free memory
 * it reads itself, with the share of free memory it was given at start (probe_recheck: the limits
 * the serving side used, not a copy); a refusal starts nothing. It then builds the command itself:
 * its own binary, --probe-child, the name of probe table entry `kind`, its own normalised JSON
 * with the label of pass `pass` of the plan it computed. The child runs as the helper (uid 0, its
 * capabilities), because a probe's workload writes knobs and pools itself; it parses no text the
 * serving side wrote. */
struct priv_probe_start {
	struct priv_hdr h;
	uint32_t kind;         /* index in probe_kinds */
	uint32_t pass;         /* 0 .. PROBE_MAX_PASSES - 1, and a pass of the kind's plan */
	uint32_t set_policy;   /* 0 or 1 */
	int32_t policy;
	uint64_t maxnode;      /* 0 .. IDSET_MAX + 1 */
	uint64_t nodes[MPOL_MASK_WORDS];
	uint32_t has_cpus;     /* 0 or 1 */
	uint32_t pad;
	uint64_t cpus[IDSET_MAX / 64];
	union probe_params params;
};

/* SIGKILL to a child the helper started and has not collected yet (so the pid cannot have been
 * reused); anything else is -ECHILD. */
struct priv_kill {
	struct priv_hdr h;
	int32_t pid;
	uint32_t pad;
};

/* PRIV_WATCH: a new fanotify group (FAN_CLASS_NOTIF, FAN_REPORT_PIDFD where the kernel has it)
 * with FAN_MODIFY | FAN_CLOSE_WRITE marks on the files of targets t[0 .. n-1] — catalogue knobs by
 * index, hugetlb pools by size and node — which the helper builds itself (kernel/fanwatch.h): no
 * path crosses, so no other file can be watched. Entries past n are zero. Answered with rc 0, the
 * group (SCM_RIGHTS) and value bit i set when target i's own file was marked. The serving side
 * cannot add marks to it: its seccomp filter denies fanotify_mark (DESIGN, Security). */
struct priv_watch {
	struct priv_hdr h;
	uint32_t n;            /* 1 .. FW_MAX */
	uint32_t pad;
	struct fw_target t[FW_MAX];
};

/* PRIV_LABELS_WRITE: the NFD labels file's whole text (server/fleet/nfd.h), len bytes of text.
 * The one request whose text the helper parses: it checks every line against the file's grammar
 * and the Kubernetes label syntax (nfd_text_check) and writes only to the path it was given
 * before the fork (priv_set_labels_file), never one from the message. */
struct priv_labels_write {
	struct priv_hdr h;
	uint32_t len;          /* 1 .. NFD_TEXT_MAX */
	uint32_t pad;
	char text[NFD_TEXT_MAX];
};

/* Every answer. rc is 0 or -errno, except PRIV_SPAWN and PRIV_PROBE_START: rc the pid (not
 * collected until a PRIV_REAP, so the pid keeps naming it and the daemon reads its start time
 * itself), or rc -errno and value the enum spawn_step that failed. A count is never in rc, always
 * in value. A PRIV_PROC_OPEN or PRIV_WATCH answer with rc 0 carries the fd (SCM_RIGHTS). */
struct priv_reply {
	struct priv_hdr h;     /* type and seq: the request's (both 0 when it had no header) */
	int64_t rc;            /* 0, a pid (spawn, probe), or -errno */
	uint64_t value;        /* migrate: pages not moved; collapse: bytes; spawn, probe: the failed step;
	                        * reap: the wait status; watch: the targets marked */
	uint32_t nsteps;       /* PRIV_POOL_RUN: steps done (also when rc < 0: those before the error) */
	uint32_t pad;
	struct htlb_step steps[HTLB_RUN_MAX];   /* PRIV_POOL_RUN */
	struct priv_rusage {   /* PRIV_REAP with rc 0: wait4's usage of the child (an experiment's round) */
		uint64_t utime_us, stime_us, minflt, majflt, maxrss_kb;
	} ru;
	int32_t knob_rc[PRIV_KNOB_BATCH];   /* PRIV_KNOB_WRITES: entry i's result, for i < value */
};

_Static_assert(sizeof(struct priv_migrate) < PRIV_MSG_MAX, "every message fits the helper's buffer");
_Static_assert(sizeof(struct priv_cg_mems) < PRIV_MSG_MAX, "every message fits the helper's buffer");
_Static_assert(sizeof(struct priv_spawn) < PRIV_MSG_MAX, "every message fits the helper's buffer");
_Static_assert(sizeof(struct priv_probe_start) < PRIV_MSG_MAX, "every message fits the helper's buffer");
_Static_assert(sizeof(struct priv_labels_write) < PRIV_MSG_MAX, "every message fits the helper's buffer");

#endif
