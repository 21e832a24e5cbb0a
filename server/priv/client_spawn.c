/* The serving side's PRIV_SPAWN, PRIV_REAP, PRIV_PROBE_START and PRIV_KILL: the spawn_spec packed
 * into the fixed-size message (counted strings, typed policy and CPUs), the client's connection or
 * the answer pipe sent with it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "server/priv/priv.h"

/* The step a refused or failed start names: the helper's, fork when it refused before any ran. */
static enum spawn_step failed_step(const struct priv_reply *rep)
{
	if (rep->value == SPAWN_OK)
		return SPAWN_FORK;
	return rep->value <= SPAWN_EXEC ? (enum spawn_step)rep->value : SPAWN_EXEC;
}

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
			*step = failed_step(&rep);
	}
out:
	free(m);
	return (pid_t)rc;
}

int priv_reap(pid_t pid, int *status, bool nohang)
{
	return priv_reap_usage(pid, status, nohang, NULL);
}

int priv_reap_usage(pid_t pid, int *status, bool nohang, struct rusage *ru)
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
	if (rep.rc == 0 && ru) {
		memset(ru, 0, sizeof *ru);
		ru->ru_utime = (struct timeval){ .tv_sec = (time_t)(rep.ru.utime_us / 1000000),
						 .tv_usec = (suseconds_t)(rep.ru.utime_us % 1000000) };
		ru->ru_stime = (struct timeval){ .tv_sec = (time_t)(rep.ru.stime_us / 1000000),
						 .tv_usec = (suseconds_t)(rep.ru.stime_us % 1000000) };
		ru->ru_minflt = (long)rep.ru.minflt;
		ru->ru_majflt = (long)rep.ru.majflt;
		ru->ru_maxrss = (long)rep.ru.maxrss_kb;
	}
	return (int)rep.rc;
}

pid_t priv_probe_start(const struct spawn_spec *s, unsigned kind, unsigned pass, const union probe_params *params,
			enum spawn_step *step)
{
	struct priv_probe_start *m = calloc(1, sizeof *m);   /* owned */
	struct priv_reply rep;
	long rc;

	*step = SPAWN_FORK;
	if (!m)
		return -ENOMEM;
	m->h = (struct priv_hdr){ .magic = PRIV_MAGIC, .type = PRIV_PROBE_START, .len = sizeof *m };
	m->kind = kind;
	m->pass = pass;
	m->params = *params;
	m->set_policy = s->set_policy;
	m->policy = s->policy;
	m->maxnode = s->nodes.maxnode;
	memcpy(m->nodes, s->nodes.bits, sizeof m->nodes);
	m->has_cpus = pack_cpus(s, m->cpus);
	if ((rc = priv_exchange(m, sizeof *m, s->stdout_fd, &rep, NULL)) == 0) {
		rc = rep.rc;
		if (rc < 0)
			*step = failed_step(&rep);
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
