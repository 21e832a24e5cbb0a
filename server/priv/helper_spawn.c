/* Launching through the privileged helper: PRIV_SPAWN and PRIV_REAP, both sides.
 *
 * The daemon packs the spawn_spec into the fixed-size message (counted strings, typed policy and
 * CPUs) and sends the client's connection with it; the helper unpacks it, checking every count and
 * string again, takes the identity from SO_PEERCRED/SO_PEERGROUPS of that connection (a daemon
 * that lies about the uid gets -EPERM), and forks through the same spawn_local the in-process path
 * uses. The helper never blocks a channel on a child: PRIV_REAP is a WNOHANG wait, and the
 * daemon's watcher asks once the child's pidfd says it exited (ops/children.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/kernel/priv.h"
#include "server/kernel/priv_spawn.h"
#include "server/probes/probe.h"

extern char **environ;

/* ---- the daemon's side ------------------------------------------------------------------------ */

/* Appends s with its NUL; false when the data field is full. */
static bool put_str(struct priv_spawn *m, const char *s)
{
	size_t n = strlen(s) + 1;

	if (n > PRIV_SPAWN_DATA - m->data_len)
		return false;
	memcpy(m->data + m->data_len, s, n);
	m->data_len += (uint32_t)n;
	return true;
}

/* The spec's CPU set as the messages carry it (a mask of IDSET_MAX bits, zeroed by the caller):
 * 1 when there is one, 0 when the child keeps the daemon's. */
static uint32_t pack_cpus(const struct spawn_spec *s, uint64_t cpus[IDSET_MAX / 64])
{
	if (!s->cpus)
		return 0;
	for (size_t c = 0; c < s->cpus_size * 8 && c < IDSET_MAX; c++)
		if (CPU_ISSET_S(c, s->cpus_size, s->cpus))
			cpus[c / 64] |= 1ULL << (c % 64);
	return 1;
}

pid_t priv_spawn(const struct spawn_spec *s, enum spawn_step *step)
{
	struct priv_spawn *m = calloc(1, sizeof *m);   /* owned: too large for a worker's stack */
	struct priv_reply rep;
	long rc = -E2BIG;

	*step = SPAWN_EXEC;
	if (!m) {
		*step = SPAWN_FORK;
		return -ENOMEM;
	}
	m->h = (struct priv_hdr){ .magic = PRIV_MAGIC, .type = PRIV_SPAWN, .len = sizeof *m };
	m->uid = s->uid;
	m->gid = s->gid;
	m->thp = s->thp;
	m->set_policy = s->set_policy;
	m->policy = s->policy;
	m->maxnode = s->nodes.maxnode;
	_Static_assert(sizeof m->nodes == sizeof s->nodes.bits, "the mask travels word for word");
	memcpy(m->nodes, s->nodes.bits, sizeof m->nodes);
	m->has_cpus = pack_cpus(s, m->cpus);
	/* Too many groups or strings for the message: what execve says of too large an argument list. */
	if (s->ngroups > PRIV_SPAWN_GROUPS)
		goto out;
	m->ngroups = (uint32_t)s->ngroups;
	for (size_t i = 0; i < s->ngroups; i++)
		m->groups[i] = s->groups[i];
	for (; s->argv[m->argc]; m->argc++)
		if (m->argc >= PRIV_SPAWN_ARGS || !put_str(m, s->argv[m->argc]))
			goto out;
	for (; s->envp[m->envc]; m->envc++)
		if (m->envc >= PRIV_SPAWN_ARGS || !put_str(m, s->envp[m->envc]))
			goto out;
	if (!put_str(m, s->cwd))
		goto out;
	*step = SPAWN_FORK;
	if ((rc = priv_exchange(m, sizeof *m, s->peer_fd, &rep, NULL)) == 0) {
		rc = rep.rc;
		if (rc < 0)
			*step = rep.value < SPAWN_EXEC + 1 ? (enum spawn_step)rep.value : SPAWN_EXEC;
	}
out:
	free(m);
	return (pid_t)rc;
}

int priv_reap(pid_t pid, int *status, bool nohang)
{
	struct priv_reap m = { .h = { .magic = PRIV_MAGIC, .type = PRIV_REAP, .len = sizeof m }, .pid = pid };
	struct priv_reply rep;
	int rc;

	for (;;) {
		if ((rc = priv_exchange(&m, sizeof m, -1, &rep, NULL)) < 0)
			return rc;
		if (rep.rc != -EAGAIN || nohang)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000000 }, NULL);
	}
	if (rep.rc == 0 && status)
		*status = (int)rep.value;
	return (int)rep.rc;
}

pid_t priv_probe_start(const struct spawn_spec *s, unsigned kind, const char *params, enum spawn_step *step)
{
	struct priv_probe_start *m = calloc(1, sizeof *m);   /* owned */
	struct priv_reply rep;
	size_t n = strlen(params) + 1;
	long rc;

	*step = SPAWN_FORK;
	if (!m)
		return -ENOMEM;
	if (n > sizeof m->params) {
		free(m);
		*step = SPAWN_EXEC;
		return -E2BIG;
	}
	m->h = (struct priv_hdr){ .magic = PRIV_MAGIC, .type = PRIV_PROBE_START, .len = sizeof *m };
	m->kind = kind;
	m->params_len = (uint32_t)n;
	memcpy(m->params, params, n);
	m->set_policy = s->set_policy;
	m->policy = s->policy;
	m->maxnode = s->nodes.maxnode;
	memcpy(m->nodes, s->nodes.bits, sizeof m->nodes);
	m->has_cpus = pack_cpus(s, m->cpus);
	if ((rc = priv_exchange(m, sizeof *m, s->stdout_fd, &rep, NULL)) == 0) {
		rc = rep.rc;
		if (rc < 0)
			*step = rep.value < SPAWN_EXEC + 1 ? (enum spawn_step)rep.value : SPAWN_EXEC;
	}
	free(m);
	return (pid_t)rc;
}

int priv_kill(pid_t pid)
{
	struct priv_kill m = { .h = { .magic = PRIV_MAGIC, .type = PRIV_KILL, .len = sizeof m }, .pid = pid };
	struct priv_reply rep;
	int rc = priv_exchange(&m, sizeof m, -1, &rep, NULL);

	return rc < 0 ? rc : (int)rep.rc;
}

/* ---- the helper's side ------------------------------------------------------------------------ */

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

/* The client's identity from its own connection: a Unix stream socket, peer credentials set. */
static int peer_of(int fd, struct ucred *uc, gid_t *groups, size_t *ngroups)
{
	socklen_t l = sizeof *uc, gl = (socklen_t)(PRIV_SPAWN_GROUPS * sizeof *groups);
	int domain;
	socklen_t dl = sizeof domain;

	if (fd < 0)
		return -EBADF;
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dl) < 0)
		return errno == ENOTSOCK ? -ENOTSOCK : -EBADF;
	if (domain != AF_UNIX || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, uc, &l) < 0 || l != sizeof *uc ||
	    uc->uid == (uid_t)-1 || uc->pid <= 0)
		return -ENOTCONN;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl) < 0)
		gl = 0;   /* as the API does: then no supplementary group is granted */
	*ngroups = gl / sizeof *groups;
	return 0;
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

int priv_do_spawn(int peer_fd, const struct priv_spawn *m, uint64_t *step_out)
{
	gid_t peer_groups[PRIV_SPAWN_GROUPS], groups[PRIV_SPAWN_GROUPS];
	char **argv = NULL, **envp = NULL;   /* owned arrays; the strings are borrowed from m */
	const char *p = m->data, *end, *path = NULL;
	cpu_set_t *cpus = NULL;              /* owned */
	size_t npeer = 0;
	struct ucred uc;
	struct spawn_spec s = { 0 };
	enum spawn_step step = SPAWN_FORK;
	int rc;

	*step_out = SPAWN_FORK;
	/* Counts that must add up, before anything is read. */
	if (m->argc < 1 || m->argc > PRIV_SPAWN_ARGS || m->envc > PRIV_SPAWN_ARGS || m->ngroups > PRIV_SPAWN_GROUPS ||
	    m->data_len < 1 || m->data_len > PRIV_SPAWN_DATA || m->thp > SPAWN_THP_EXCEPT_ADVISED ||
	    m->set_policy > 1 || m->has_cpus > 1 || m->maxnode > IDSET_MAX + 1)
		return -EINVAL;
	if ((rc = peer_of(peer_fd, &uc, peer_groups, &npeer)) < 0)
		return rc;
	/* Who may be who: a client is itself, with its own groups at most; root may be anyone. */
	for (uint32_t i = 0; i < m->ngroups; i++) {
		size_t j = 0;
		while (uc.uid != 0 && j < npeer && peer_groups[j] != m->groups[i])
			j++;
		if (j == npeer && uc.uid != 0)
			return -EPERM;
		groups[i] = m->groups[i];
	}
	if (uc.uid != 0 && (m->uid != uc.uid || m->gid != uc.gid))
		return -EPERM;
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
	rc = spawn_local(&s, &step);
	*step_out = step;
out:
	free(argv);
	free(envp);
	if (cpus)
		CPU_FREE(cpus);
	return rc;
}

int priv_do_reap(const struct priv_reap *m, uint64_t *status)
{
	int st = 0;
	pid_t r;

	if (m->pid <= 0 || m->pad)
		return -EINVAL;
	/* The helper's only children are the programs it started: anything else is ECHILD. */
	do
		r = waitpid(m->pid, &st, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -EAGAIN;
	*status = (uint64_t)(unsigned)st;
	return 0;
}

int priv_do_probe_start(int pipe_fd, const struct priv_probe_start *m, uint64_t *step_out)
{
	char *argv[5];
	cpu_set_t *cpus = NULL;   /* owned */
	struct spawn_spec s = { 0 };
	enum spawn_step step = SPAWN_FORK;
	struct stat sb;
	int fl, rc;

	*step_out = SPAWN_FORK;
	if (m->kind >= probe_nkinds || m->params_len < 2 || m->params_len > PRIV_PROBE_PARAMS || m->set_policy > 1 ||
	    m->has_cpus > 1 || m->pad || m->maxnode > IDSET_MAX + 1 ||
	    strnlen(m->params, PRIV_PROBE_PARAMS) != m->params_len - 1)
		return -EINVAL;
	/* The answer pipe, and only its write end: the child's stdout is nothing else. */
	if (pipe_fd < 0)
		return -EBADF;
	if (fstat(pipe_fd, &sb) < 0 || !S_ISFIFO(sb.st_mode) || (fl = fcntl(pipe_fd, F_GETFL)) < 0 ||
	    (fl & O_ACCMODE) != O_WRONLY)
		return -EINVAL;
	if (m->has_cpus && !(cpus = cpus_of(m->cpus, &s.cpus_size)))
		return -ENOMEM;
	/* "/proc/self/exe" is resolved in the child, after fork: the helper's own binary. */
	argv[0] = "/proc/self/exe";
	argv[1] = "--probe-child";
	argv[2] = (char *)probe_kinds[m->kind]->name;
	argv[3] = (char *)m->params;
	argv[4] = NULL;
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
	s.stdout_fd = pipe_fd;
	s.die_with_parent = true;   /* with the helper's thread, and so with the daemon */
	s.peer_fd = -1;
	rc = spawn_local(&s, &step);
	*step_out = step;
	if (cpus)
		CPU_FREE(cpus);
	return rc;
}

int priv_do_kill(const struct priv_kill *m)
{
	siginfo_t si;

	if (m->pid <= 0 || m->pad)
		return -EINVAL;
	/* Only a child not collected yet: its pid cannot name another process. */
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)m->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return -errno;
	return kill(m->pid, SIGKILL) < 0 ? -errno : 0;
}
