/* Starting a program under a memory policy as another user: fork, set the child up (signals,
 * session, stdio on /dev/null, CPU affinity, set_mempolicy, THP prctl, groups/gid/uid, cwd), exec.
 * The kernel lets a process set only its own policy, so the child sets it on itself before exec;
 * set_mempolicy's policy and the THP prctl are kept across execve. A step that fails is reported
 * back through a close-on-exec pipe (EOF on it means the exec succeeded), so the caller learns
 * which step the kernel refused and with which errno before it answers.
 *
 * Everything the child needs is prepared by the caller: after fork() in a threaded daemon only
 * async-signal-safe calls are allowed, so the child allocates nothing and looks nothing up. */
#ifndef MPD_KERNEL_SPAWN_H
#define MPD_KERNEL_SPAWN_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "server/kernel/mpol.h"

enum spawn_thp { SPAWN_THP_DEFAULT, SPAWN_THP_DISABLE, SPAWN_THP_EXCEPT_ADVISED };

struct spawn_spec {
	char *const *argv;           /* borrowed, NULL-terminated, argv[0] non-empty */
	char *const *envp;           /* borrowed, NULL-terminated */
	const char *path;            /* borrowed: the PATH to search when argv[0] has no '/' */
	const char *cwd;             /* borrowed, absolute; entered after the identity change */
	uid_t uid;
	gid_t gid;
	const gid_t *groups;         /* borrowed: supplementary groups */
	size_t ngroups;
	const cpu_set_t *cpus;       /* borrowed; NULL leaves the affinity alone */
	size_t cpus_size;            /* CPU_ALLOC_SIZE of cpus */
	bool set_policy;
	int policy;                  /* MPD_MPOL_* | MPD_MPOL_F_* */
	struct mpol_mask nodes;      /* empty (maxnode 0) for default/local */
	enum spawn_thp thp;
	bool die_with_parent;        /* SIGKILL when the forking thread (a daemon worker) dies */
	int stdout_fd;               /* > 0: the child's stdout (a pipe the caller reads; the child's
	                              * copy is the only one of the caller's fds that survives exec);
	                              * 0: /dev/null like stdin and stderr */
	int peer_fd;                 /* borrowed: the client's Unix connection, which the privileged
	                              * helper accepted and checks uid/gid/groups against its record
	                              * of; -1 when none (the in-process path does not need it) */
};

/* The step of the child's set-up that failed. */
enum spawn_step {
	SPAWN_OK, SPAWN_FORK, SPAWN_STDIO, SPAWN_AFFINITY, SPAWN_POLICY, SPAWN_THP, SPAWN_GROUPS,
	SPAWN_GID, SPAWN_UID, SPAWN_CWD, SPAWN_EXEC,
};
const char *spawn_step_name(enum spawn_step s);

/* Starts the child of this process (server/priv/act.h chooses between this and the privileged
 * helper). Returns its pid once it has exec'd, or -errno with *step saying which step failed (the
 * child has then been reaped). The caller reaps a started child with spawn_reap. */
pid_t spawn_start(const struct spawn_spec *s, enum spawn_step *step);
/* Collects a started child's wait status: 0, -EAGAIN when it still runs (nohang), or -errno
 * (-ECHILD: not ours). */
int spawn_reap(pid_t pid, int *status, bool nohang);
/* The same, with the child's resource usage (wait4: its own and its waited-for children's) in
 * *ru when ru is not NULL. */
struct rusage;
int spawn_reap_usage(pid_t pid, int *status, bool nohang, struct rusage *ru);
/* SIGKILL to a started child: 0 or -errno. */
int spawn_kill(pid_t pid);

#endif
