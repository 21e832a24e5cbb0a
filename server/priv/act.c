/* The facade: each act asks the helper when privilege separation runs, and calls the kernel
 * primitive otherwise. This file is the only place that asks priv_active(). */
#include "server/priv/act.h"

#include <errno.h>
#include <stdlib.h>

#include "server/fleet/nfd.h"
#include "server/kernel/cgroup.h"
#include "server/kernel/madv.h"
#include "server/priv/priv.h"

/* The one decision: true in the serving process of privilege separation; false in a daemon run
 * as root (--user root), in the helper itself (it never starts a helper of its own) and in the
 * unit tests that start none. */
static bool by_helper(void)
{
	return priv_active();
}

bool act_helper_lost(void)
{
	return by_helper() && priv_lost();
}

const char *act_helper_state(void)
{
	return !by_helper() ? "none" : priv_lost() ? "lost" : "running";
}

uint64_t act_helper_requests(unsigned type, const char **name)
{
	return by_helper() ? priv_requests_sent(type, name) : 0;
}

pid_t act_helper_pid(void)
{
	return by_helper() ? priv_helper_pid() : -1;
}

int act_knob_write(const struct knob_catalogue *c, const struct knob *k, const char *value)
{
	return by_helper() ? priv_knob_write(c, k, value) : knob_write(c, k, value);
}

long act_knob_write_each(const struct knob_catalogue *c, const struct knob *const *ks, const char *const *values,
			 size_t n, int *rc)
{
	return by_helper() ? priv_knob_writes(c, ks, values, n, rc) : (long)knob_write_each(c, ks, values, n, rc);
}

int act_pool_write(const char *sysfs_root, uint64_t size_kb, int node, uint64_t count)
{
	return by_helper() ? priv_pool_write(size_kb, node, count) : htlb_write_nr(sysfs_root, size_kb, node, count);
}

int act_pool_open(const char *sysfs_root, uint64_t size_kb, int node, struct act_pool *p)
{
	*p = (struct act_pool){ .size_kb = size_kb, .node = node, .f = { .fd = -1 } };
	/* The helper opens (and keeps open) its own copy; it checks the pool at every run. */
	if (by_helper())
		return htlb_size_exists(sysfs_root, size_kb) ? 0 : -ENOENT;
	return htlb_open_nr(sysfs_root, size_kb, node, &p->f);
}

int act_pool_run(struct act_pool *p, uint64_t from, uint64_t goal, uint64_t batch, unsigned max, int64_t budget_ns,
		 struct htlb_step *steps, unsigned *n)
{
	if (by_helper())
		return priv_pool_run(p->size_kb, p->node, from, goal, batch, max, budget_ns, steps, n);
	return htlb_run_steps(&p->f, from, goal, batch, max, budget_ns, steps, n);
}

void act_pool_close(struct act_pool *p)
{
	kfs_close(&p->f);
}

int act_labels_write(const char *path, const char *text, size_t len)
{
	return by_helper() ? priv_labels_write(text, len) : nfd_write_file(path, text, len);
}

int act_compact(const char *procfs_root)
{
	return by_helper() ? priv_compact() : htlb_compact(procfs_root);
}

int act_proc_open(const char *procfs_root, pid_t pid, enum proc_file f)
{
	int fd;

	if (!by_helper())
		return proc_open_guarded(procfs_root, pid, f);
	fd = priv_proc_open(pid, f);
	return fd == -ENOENT ? -ESRCH : fd;
}

long act_migrate(const char *procfs_root, pid_t pid, uint64_t start_time, const struct mpol_mask *from,
		 const struct mpol_mask *to)
{
	if (by_helper())
		return priv_migrate(pid, start_time, from, to);
	return mpol_migrate_checked(procfs_root, pid, start_time, from, to);
}

long act_collapse(int pidfd, uint64_t start, uint64_t len)
{
	return by_helper() ? priv_collapse(pidfd, start, len) : madv_collapse(pidfd, start, len);
}

int act_cg_mems(int dirfd, const char *text)
{
	return by_helper() ? priv_cg_mems(dirfd, text) : cg_write_mems(dirfd, text);
}

int act_watch(const struct knob_catalogue *c, const char *sysfs_root, const char *procfs_root,
	      const struct fw_target *t, unsigned n, uint64_t *marked)
{
	if (by_helper())
		return priv_watch(t, n, marked);
	if (n < 1 || n > FW_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if (fw_target_check(c, sysfs_root, &t[i]) < 0)
			return -EINVAL;
	return fw_open(c, sysfs_root, procfs_root, t, n, marked);
}

pid_t act_spawn(const struct spawn_spec *s, enum spawn_step *step)
{
	return by_helper() ? priv_spawn(s, step) : spawn_start(s, step);
}

int act_reap(pid_t pid, int *status, bool nohang)
{
	return by_helper() ? priv_reap(pid, status, nohang) : spawn_reap(pid, status, nohang);
}

int act_reap_usage(pid_t pid, int *status, struct rusage *ru)
{
	return by_helper() ? priv_reap_usage(pid, status, false, ru) : spawn_reap_usage(pid, status, false, ru);
}

int act_kill(pid_t pid)
{
	return by_helper() ? priv_kill(pid) : spawn_kill(pid);
}

pid_t act_probe_start(const struct spawn_spec *s, const struct act_probe *p, enum spawn_step *step)
{
	struct spawn_spec local = *s;
	char *argv[5], *text = NULL;   /* owned */
	int rc;

	/* Through the helper the typed parameters travel: it checks them and builds the same
	 * command itself. */
	if (by_helper())
		return priv_probe_start(s, p->kind, p->pass, p->params, step);
	*step = SPAWN_FORK;
	if ((rc = priv_probe_text(p->kind, p->params, p->pass, p->sysfs_root, p->mem_pct, &text)) < 0 ||
	    (rc = priv_probe_argv(argv, p->kind, text)) < 0)
		goto out;
	local.argv = argv;
	rc = spawn_start(&local, step);
out:
	free(text);
	return rc;
}
