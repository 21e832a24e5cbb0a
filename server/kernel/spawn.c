#include "server/kernel/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>


#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static const char *const step_names[] = {
	[SPAWN_OK] = "ok", [SPAWN_FORK] = "fork", [SPAWN_STDIO] = "stdio", [SPAWN_AFFINITY] = "affinity",
	[SPAWN_POLICY] = "mempolicy", [SPAWN_THP] = "thp", [SPAWN_GROUPS] = "setgroups",
	[SPAWN_GID] = "setgid", [SPAWN_UID] = "setuid", [SPAWN_CWD] = "chdir", [SPAWN_EXEC] = "exec",
};

const char *spawn_step_name(enum spawn_step s)
{
	return s < sizeof step_names / sizeof step_names[0] && step_names[s] ? step_names[s] : "unknown";
}

struct spawn_msg {
	int step;
	int err;
};

/* ---- the child: async-signal-safe calls only ------------------------------------------------ */

static __attribute__((noreturn)) void child_fail(int fd, enum spawn_step step, int err)
{
	struct spawn_msg m = { step, err };
	ssize_t w = write(fd, &m, sizeof m);
	(void)w;
	_exit(127);
}

/* execvp's search, but over the request's PATH (not the daemon's), as the target user. */
static int exec_search(const struct spawn_spec *s)
{
	const char *name = s->argv[0], *p = s->path && *s->path ? s->path : "/usr/local/bin:/usr/bin:/bin";
	size_t nlen = strlen(name);
	char buf[PATH_MAX];
	int err = ENOENT;

	if (strchr(name, '/')) {
		execve(name, s->argv, s->envp);
		return errno;
	}
	while (*p) {
		const char *colon = strchr(p, ':');
		size_t dlen = colon ? (size_t)(colon - p) : strlen(p);

		/* An empty element means the current directory, as for execvp. */
		if (dlen + 1 + nlen + 1 <= sizeof buf) {
			memcpy(buf, dlen ? p : ".", dlen ? dlen : 1);
			size_t off = dlen ? dlen : 1;
			buf[off++] = '/';
			memcpy(buf + off, name, nlen + 1);
			execve(buf, s->argv, s->envp);
			if (errno == EACCES)
				err = EACCES;   /* remembered, the search goes on (execvp does the same) */
			else if (errno != ENOENT && errno != ENOTDIR)
				return errno;
		}
		p += dlen;
		if (*p == ':')
			p++;
	}
	return err;
}

static __attribute__((noreturn)) void child(const struct spawn_spec *s, int fd, int devnull)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;

	/* The daemon blocks SIGTERM/SIGINT/SIGHUP and ignores SIGPIPE; both survive execve. */
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();   /* not in the daemon's session: a terminal's ^C for the daemon is not for it */
	if (s->die_with_parent)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (dup2(devnull, 0) < 0 || dup2(s->stdout_fd > 0 ? s->stdout_fd : devnull, 1) < 0 || dup2(devnull, 2) < 0)
		child_fail(fd, SPAWN_STDIO, errno);
	/* Nothing of the daemon's (sockets, the database) survives exec; fd (the report pipe) is
	 * close-on-exec already. */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		for (int i = 3; i < 65536; i++)
			if (i != fd)
				fcntl(i, F_SETFD, FD_CLOEXEC);
	if (s->cpus && sched_setaffinity(0, s->cpus_size, s->cpus) < 0)
		child_fail(fd, SPAWN_AFFINITY, errno);
	if (s->set_policy) {
		int rc = mpol_set(s->policy, &s->nodes);
		if (rc < 0)
			child_fail(fd, SPAWN_POLICY, -rc);
	}
	if (s->thp != SPAWN_THP_DEFAULT &&
	    prctl(PR_SET_THP_DISABLE, 1, s->thp == SPAWN_THP_EXCEPT_ADVISED ? MPD_PR_THP_DISABLE_EXCEPT_ADVISED : 0,
		  0, 0) < 0)
		child_fail(fd, SPAWN_THP, errno);
	/* Groups first: once the uid is dropped, neither may change. Raw syscalls: glibc's
	 * set*id wrappers synchronise all threads, and the child has one. */
	if (syscall(SYS_setgroups, s->ngroups, s->groups) < 0)
		child_fail(fd, SPAWN_GROUPS, errno);
	if (syscall(SYS_setresgid, s->gid, s->gid, s->gid) < 0)
		child_fail(fd, SPAWN_GID, errno);
	if (syscall(SYS_setresuid, s->uid, s->uid, s->uid) < 0)
		child_fail(fd, SPAWN_UID, errno);
	/* After the identity change, so the directory is one the user may enter. */
	if (chdir(s->cwd) < 0)
		child_fail(fd, SPAWN_CWD, errno);
	child_fail(fd, SPAWN_EXEC, exec_search(s));
}

/* ---- the parent ----------------------------------------------------------------------------- */

int spawn_reap_usage(pid_t pid, int *status, bool nohang, struct rusage *ru)
{
	pid_t r;

	do
		r = wait4(pid, status, nohang ? WNOHANG : 0, ru);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r == 0 ? -EAGAIN : 0;
}

int spawn_reap(pid_t pid, int *status, bool nohang)
{
	return spawn_reap_usage(pid, status, nohang, NULL);
}

int spawn_kill(pid_t pid)
{
	return kill(pid, SIGKILL) < 0 ? -errno : 0;
}

pid_t spawn_start(const struct spawn_spec *s, enum spawn_step *step)
{
	int p[2], devnull, err = 0;
	struct spawn_msg m;
	ssize_t n;
	pid_t pid;

	*step = SPAWN_OK;
	if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0) {
		*step = SPAWN_STDIO;
		return -errno;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		err = errno;
		close(devnull);
		*step = SPAWN_FORK;
		return -err;
	}
	pid = fork();
	if (pid == 0)
		child(s, p[1], devnull);
	err = errno;
	close(p[1]);
	close(devnull);
	if (pid < 0) {
		close(p[0]);
		*step = SPAWN_FORK;
		return -err;
	}
	/* EOF: the exec succeeded and closed the write end. */
	do
		n = read(p[0], &m, sizeof m);
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n == 0)
		return pid;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof m) {
		*step = SPAWN_EXEC;
		return -EIO;
	}
	*step = (enum spawn_step)m.step;
	return -(m.err ? m.err : EIO);
}
