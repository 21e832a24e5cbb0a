/* The helper's handlers of the launches: PRIV_SPAWN, PRIV_REAP, PRIV_PROBE_START, PRIV_KILL (the
 * serving side's are in client_spawn.c).
 *
 * The daemon packs the spawn_spec into the fixed-size message (counted strings, typed policy and
 * CPUs) and sends the client's connection along; the helper unpacks it, checking every count
 * and string again, takes the identity from that socket as the kernel describes it (identity.c:
 * a descriptor that is not a live connection of the API socket, or a uid the client may not be,
 * gets -errno), and forks through the same spawn_start (kernel/spawn.c) the in-process path uses. The helper never blocks a channel on a child: PRIV_REAP is a WNOHANG wait, and the
 * daemon's watcher asks once the child's pidfd says it exited (ops/children.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/priv/helper.h"
#include "server/priv/identity.h"
#include "server/priv/priv.h"
#include "server/kernel/topology.h"
#include "server/log.h"
#include "server/probes/probe.h"
#include "server/probes/typed.h"

extern char **environ;

/* The CPU mask of a message as a cpu_set_t (owned by the caller, CPU_FREE), or NULL with -ENOMEM. */
static cpu_set_t *cpus_of(const uint64_t *bits, size_t *size)
{
	cpu_set_t *cpus = CPU_ALLOC(IDSET_MAX);

	if (!cpus)
		return NULL;
	*size = CPU_ALLOC_SIZE(IDSET_MAX);
	CPU_ZERO_S(*size, cpus);
	for (unsigned c = 0; c < IDSET_MAX; c++)
		if (bits[c / 64] >> (c % 64) & 1)
			CPU_SET_S(c, *size, cpus);
	return cpus;
}

/* Splits n NUL-terminated strings off *p (bounded by end) into out; -EBADMSG when they run past. */
static int take_strs(const char **p, const char *end, uint32_t n, char **out)
{
	for (uint32_t i = 0; i < n; i++) {
		const char *nul = memchr(*p, '\0', (size_t)(end - *p));
		if (!nul)
			return -EBADMSG;
		out[i] = (char *)*p;
		*p = nul + 1;
	}
	return 0;
}

int priv_check_spawn(const struct helper *h, const void *msg)
{
	const struct priv_spawn *m = msg;
	struct priv_ident who;
	int rc;

	/* Counts that must add up, before anything is read. */
	if (m->argc < 1 || m->argc > PRIV_SPAWN_ARGS || m->envc > PRIV_SPAWN_ARGS || m->ngroups > PRIV_SPAWN_GROUPS ||
	    m->data_len < 1 || m->data_len > PRIV_SPAWN_DATA || m->thp > SPAWN_THP_EXCEPT_ADVISED ||
	    m->set_policy > 1 || m->has_cpus > 1 || m->maxnode > IDSET_MAX + 1)
		return -EINVAL;
	if ((rc = priv_identity(h->in_fd, &who)) < 0)
		return rc;
	/* Who may be who: a client is itself, with its own groups at most; root may be anyone. */
	for (uint32_t i = 0; i < m->ngroups && who.uid != 0; i++) {
		size_t j = 0;
		while (j < who.ngroups && who.groups[j] != m->groups[i])
			j++;
		if (j == who.ngroups)
			return -EPERM;
	}
	if (who.uid != 0 && (m->uid != who.uid || m->gid != who.gid))
		return -EPERM;
	return 0;
}

/* The strings are checked as they are unpacked: -EBADMSG or -EINVAL before anything is started. */
int priv_do_spawn(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_spawn *m = msg;
	gid_t groups[PRIV_SPAWN_GROUPS];
	char **argv = NULL, **envp = NULL;   /* owned arrays; the strings are borrowed from m */
	const char *p = m->data, *end, *path = NULL;
	cpu_set_t *cpus = NULL;              /* owned */
	struct spawn_spec s = { 0 };
	enum spawn_step step = SPAWN_FORK;
	int rc;

	(void)h;
	(void)fd_out;
	rep->value = SPAWN_FORK;
	for (uint32_t i = 0; i < m->ngroups; i++)
		groups[i] = m->groups[i];
	end = m->data + m->data_len;
	if (!(argv = calloc(m->argc + 1, sizeof *argv)) || !(envp = calloc(m->envc + 1, sizeof *envp))) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = take_strs(&p, end, m->argc, argv)) < 0 || (rc = take_strs(&p, end, m->envc, envp)) < 0)
		goto out;
	/* The cwd is the last string and ends exactly at data_len. */
	if (p >= end || !memchr(p, '\0', (size_t)(end - p)) || p + strlen(p) + 1 != end) {
		rc = -EBADMSG;
		goto out;
	}
	if (!argv[0][0] || p[0] != '/' || strlen(p) >= PATH_MAX) {
		rc = -EINVAL;
		goto out;
	}
	for (uint32_t i = 0; i < m->envc; i++) {
		const char *eq = strchr(envp[i], '=');
		if (!eq || eq == envp[i]) {
			rc = -EINVAL;
			goto out;
		}
		if (!strncmp(envp[i], "PATH=", 5))
			path = envp[i] + 5;
	}
	if (m->has_cpus && !(cpus = cpus_of(m->cpus, &s.cpus_size))) {
		rc = -ENOMEM;
		goto out;
	}
	s.argv = argv;
	s.envp = envp;
	s.path = path;
	s.cwd = p;
	s.uid = m->uid;
	s.gid = m->gid;
	s.groups = groups;
	s.ngroups = m->ngroups;
	s.cpus = cpus;
	s.set_policy = m->set_policy;
	s.policy = m->policy;
	s.nodes.maxnode = m->maxnode;
	memcpy(s.nodes.bits, m->nodes, sizeof s.nodes.bits);
	s.thp = (enum spawn_thp)m->thp;
	s.peer_fd = -1;
	rc = spawn_start(&s, &step);
	rep->value = step;
out:
	free(argv);
	free(envp);
	if (cpus)
		CPU_FREE(cpus);
	return rc;
}

/* PRIV_REAP and PRIV_KILL name a child by its pid alone; that it is one of the helper's children
 * is the act's own question (waitpid, waitid: ECHILD). */
_Static_assert(sizeof(struct priv_reap) == sizeof(struct priv_kill) &&
	       offsetof(struct priv_reap, pid) == offsetof(struct priv_kill, pid) &&
	       offsetof(struct priv_reap, pad) == offsetof(struct priv_kill, pad), "one check for both");
int priv_check_child(const struct helper *h, const void *msg)
{
	const struct priv_reap *m = msg;

	(void)h;
	return m->pid <= 0 || m->pad ? -EINVAL : 0;
}

/* The probe children started and not collected yet: the helper kills them when it ends (their own
 * PR_SET_PDEATHSIG is the second line: it names the helper thread that forked them). Atomic
 * slots, 0 free, so that the signal handler (start.c) may walk them. A pid stays the child's
 * until it is collected, so a slot never names another process. */
#define PROBE_SLOTS 64
static _Atomic pid_t probes[PROBE_SLOTS];

static void probe_track(pid_t pid)
{
	for (int i = 0; i < PROBE_SLOTS; i++) {
		pid_t free_slot = 0;
		if (atomic_compare_exchange_strong(&probes[i], &free_slot, pid))
			return;
	}
	log_warn("privileged helper: more than %d probe children; probe %d dies by PR_SET_PDEATHSIG only",
		 PROBE_SLOTS, (int)pid);
}

static void probe_untrack(pid_t pid)
{
	for (int i = 0; i < PROBE_SLOTS; i++) {
		pid_t p = pid;
		if (atomic_compare_exchange_strong(&probes[i], &p, 0))
			return;
	}
}

void priv_kill_probes(void)
{
	for (int i = 0; i < PROBE_SLOTS; i++) {
		pid_t p = atomic_load(&probes[i]);
		if (p > 0)
			kill(p, SIGKILL);
	}
}

int priv_do_reap(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_reap *m = msg;
	struct rusage ru;
	int st = 0;
	pid_t r;

	(void)h;
	(void)fd_out;
	/* The helper's only children are the programs it started: anything else is ECHILD. */
	do
		r = wait4(m->pid, &st, WNOHANG, &ru);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -EAGAIN;
	probe_untrack(r);
	rep->value = (uint64_t)(unsigned)st;
	rep->ru = (struct priv_rusage){
		.utime_us = (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec,
		.stime_us = (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec,
		.minflt = (uint64_t)ru.ru_minflt, .majflt = (uint64_t)ru.ru_majflt, .maxrss_kb = (uint64_t)ru.ru_maxrss,
	};
	return 0;
}

int priv_probe_argv(char *argv[5], unsigned kind, const char *text)
{
	if (kind >= probe_nkinds)
		return -EINVAL;
	argv[0] = "/proc/self/exe";
	argv[1] = "--probe-child";
	argv[2] = (char *)probe_kinds[kind]->name;
	argv[3] = (char *)text;
	argv[4] = NULL;
	return 0;
}

int priv_probe_text(unsigned kind, const union probe_params *p, unsigned pass, const char *sysfs_root, unsigned pct,
		    char **text)
{
	struct topology *t = malloc(sizeof *t);   /* owned: too large for a thread's stack */
	struct probe_env env;
	struct probe_plan plan;
	json_t *norm = NULL;
	mp_err e = { 0 };
	int rc;

	*text = NULL;
	if (!t)
		return -ENOMEM;
	if ((rc = topo_read(sysfs_root, t)) < 0)
		goto out;
	probe_env_from(t, &env);
	if (!(norm = probe_recheck(kind, p, pass, &env, pct, &plan, &e))) {
		log_warn("privileged helper: refused a probe start: %s", e.detail);
		rc = e.code == MPE_PROBE_TOO_LARGE ? -E2BIG : e.code == MPE_INTERNAL_NOMEM ? -ENOMEM : -EINVAL;
		goto out;
	}
	rc = (*text = json_dumps(norm, JSON_COMPACT)) ? 0 : -ENOMEM;
out:
	json_decref(norm);
	free(t);
	return rc;
}

int priv_check_probe_start(const struct helper *h, const void *msg)
{
	const struct priv_probe_start *m = msg;
	struct stat sb;
	int fl;

	if (m->kind >= probe_nkinds || m->pass >= PROBE_MAX_PASSES || m->set_policy > 1 || m->has_cpus > 1 || m->pad ||
	    m->maxnode > IDSET_MAX + 1)
		return -EINVAL;
	/* The answer pipe, and only its write end: the child's stdout is nothing else. */
	if (h->in_fd < 0)
		return -EBADF;
	if (fstat(h->in_fd, &sb) < 0 || !S_ISFIFO(sb.st_mode) || (fl = fcntl(h->in_fd, F_GETFL)) < 0 ||
	    (fl & O_ACCMODE) != O_WRONLY)
		return -EINVAL;
	return 0;
}

int priv_do_probe_start(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_probe_start *m = msg;
	char *argv[5], *text = NULL;   /* owned: the parameters made here from the typed ones */
	cpu_set_t *cpus = NULL;        /* owned */
	struct spawn_spec s = { 0 };
	enum spawn_step step = SPAWN_FORK;
	int rc;

	(void)fd_out;
	/* The typed parameters through the kind's own parser, with this process's view of the
	 * machine and its share of free memory: refused here, nothing is started. */
	if ((rc = priv_probe_text(m->kind, &m->params, m->pass, h->sysfs_root, h->probe_mem_pct, &text)) < 0 ||
	    (rc = priv_probe_argv(argv, m->kind, text)) < 0)
		goto out;
	if (m->has_cpus && !(cpus = cpus_of(m->cpus, &s.cpus_size))) {
		rc = -ENOMEM;
		goto out;
	}
	s.argv = argv;
	s.envp = environ;
	s.cwd = "/";
	s.uid = getuid();
	s.gid = getgid();
	s.cpus = cpus;
	s.set_policy = m->set_policy;
	s.policy = m->policy;
	s.nodes.maxnode = m->maxnode;
	memcpy(s.nodes.bits, m->nodes, sizeof s.nodes.bits);
	s.stdout_fd = h->in_fd;
	s.die_with_parent = true;   /* with the helper's thread, and so with the daemon */
	s.peer_fd = -1;
	if ((rc = spawn_start(&s, &step)) > 0)
		probe_track(rc);
	rep->value = step;   /* 0 (no step) when refused before */
out:
	free(text);
	if (cpus)
		CPU_FREE(cpus);
	return rc;
}

int priv_do_kill(struct helper *h, const void *msg, struct priv_reply *rep, int *fd_out)
{
	const struct priv_kill *m = msg;
	siginfo_t si;

	(void)h;
	(void)rep;
	(void)fd_out;
	/* Only a child not collected yet: its pid cannot name another process. */
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)m->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return -errno;
	return kill(m->pid, SIGKILL) < 0 ? -errno : 0;
}
