#include "server/kernel/mpol.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/kernel/proc.h"

static const struct mpol_mode modes[] = {
	{ "default",             MPD_MPOL_DEFAULT,             MPOL_NODES_NONE,     false },
	{ "local",               MPD_MPOL_LOCAL,               MPOL_NODES_NONE,     false },
	{ "preferred",           MPD_MPOL_PREFERRED,           MPOL_NODES_OPTIONAL, true },
	{ "bind",                MPD_MPOL_BIND,                MPOL_NODES_REQUIRED, true },
	{ "interleave",          MPD_MPOL_INTERLEAVE,          MPOL_NODES_REQUIRED, true },
	{ "preferred-many",      MPD_MPOL_PREFERRED_MANY,      MPOL_NODES_REQUIRED, true },
	{ "weighted-interleave", MPD_MPOL_WEIGHTED_INTERLEAVE, MPOL_NODES_REQUIRED, true },
};

const struct mpol_mode *mpol_mode_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
		if (!strcmp(modes[i].name, name))
			return &modes[i];
	return NULL;
}

const char *mpol_mode_name(int mode)
{
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
		if (modes[i].mode == mode)
			return modes[i].name;
	return NULL;
}

void mpol_mask_from(const idset *nodes, struct mpol_mask *m)
{
	int high = -1;

	memset(m, 0, sizeof *m);
	for (unsigned i = 0; i < IDSET_MAX; i++)
		if (idset_has(nodes, i)) {
			m->bits[i / 64] |= 1UL << (i % 64);
			high = (int)i;
		}
	/* The kernel decrements maxnode before reading (get_nodes), so one more than the bits. */
	m->maxnode = high < 0 ? 0 : (unsigned long)high + 2;
}

int mpol_set(int mode_and_flags, const struct mpol_mask *m)
{
	if (syscall(SYS_set_mempolicy, mode_and_flags, m && m->maxnode ? m->bits : NULL,
		    m ? m->maxnode : 0UL) < 0)
		return -errno;
	return 0;
}

long mpol_migrate_pages(pid_t pid, const struct mpol_mask *from, const struct mpol_mask *to)
{
	unsigned long maxnode = from->maxnode > to->maxnode ? from->maxnode : to->maxnode;
	long rc = syscall(SYS_migrate_pages, pid, maxnode, from->bits, to->bits);

	return rc < 0 ? -errno : rc;
}

long mpol_migrate_checked(const char *procfs_root, pid_t pid, uint64_t start_time, const struct mpol_mask *from,
			  const struct mpol_mask *to)
{
	long rc;
	int pidfd;

	/* migrate_pages(2) takes a pid, not a pidfd: the bracket (proc.h) is what makes the start
	 * time checked before it name the process moved. Checked once before the pidfd too, so that
	 * a pid reused is -ESTALE whether or not its new process still runs. */
	if ((rc = proc_check_identity(procfs_root, pid, start_time)) < 0)
		return rc;
	if ((pidfd = proc_pidfd(pid)) < 0)
		return pidfd;
	if ((rc = proc_check_identity(procfs_root, pid, start_time)) == 0) {
		rc = mpol_migrate_pages(pid, from, to);
		/* It exited in between: the pid may have named another process by the syscall. */
		if (proc_pidfd_alive(pidfd) < 0)
			rc = -ESRCH;
	}
	close(pidfd);
	return rc;
}

/* ---- the probe ------------------------------------------------------------------------------ */

enum { P_PREFERRED_MANY = 1, P_WEIGHTED = 2, P_BAL_BIND = 4, P_BAL_PMANY = 8, P_EXCEPT_ADVISED = 16,
       P_RAN = 32 };

/* In the child: one allowed node (the lowest of Mems_allowed), then each mode in turn. */
static int probe_child(void)
{
	unsigned long allowed[MPOL_MASK_WORDS] = { 0 };
	struct mpol_mask one = { .maxnode = 0 };
	int bits = P_RAN;

	if (syscall(SYS_get_mempolicy, NULL, allowed, (unsigned long)IDSET_MAX + 1, NULL, 4 /* MEMS_ALLOWED */) < 0)
		return bits;
	for (unsigned i = 0; i < IDSET_MAX; i++)
		if (allowed[i / 64] & (1UL << (i % 64))) {
			one.bits[i / 64] = 1UL << (i % 64);
			one.maxnode = i + 2;
			break;
		}
	if (mpol_set(MPD_MPOL_PREFERRED_MANY, &one) == 0)
		bits |= P_PREFERRED_MANY;
	if (mpol_set(MPD_MPOL_WEIGHTED_INTERLEAVE, &one) == 0)
		bits |= P_WEIGHTED;
	if (mpol_set(MPD_MPOL_BIND | MPD_MPOL_F_NUMA_BALANCING, &one) == 0)
		bits |= P_BAL_BIND;
	if (mpol_set(MPD_MPOL_PREFERRED_MANY | MPD_MPOL_F_NUMA_BALANCING, &one) == 0)
		bits |= P_BAL_PMANY;
	/* Before 6.18 any non-zero third argument is EINVAL: the probe kernel-interfaces.md §2.1 gives. */
	if (prctl(PR_SET_THP_DISABLE, 1, MPD_PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) == 0)
		bits |= P_EXCEPT_ADVISED;
	return bits;
}

void mpol_probe(struct mpol_caps *c)
{
	int st, bits;
	pid_t pid;

	memset(c, 0, sizeof *c);
	if ((pid = fork()) < 0)
		return;
	if (pid == 0)
		_exit(probe_child());
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return;
	if (!WIFEXITED(st) || !((bits = WEXITSTATUS(st)) & P_RAN))
		return;
	c->probed = true;
	c->preferred_many = bits & P_PREFERRED_MANY;
	c->weighted_interleave = bits & P_WEIGHTED;
	c->balancing_bind = bits & P_BAL_BIND;
	c->balancing_preferred_many = bits & P_BAL_PMANY;
	c->thp_except_advised = bits & P_EXCEPT_ADVISED;
}
