/* kernel/sandbox.c against the real kernel: a forked child loads the serving side's filter and
 * makes the calls itself. Each denied call is made with arguments under which it would succeed, or
 * fail with another errno, without the filter, so every check here fails when the filter is off. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/mempolicy.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/kernel/sandbox.h"
#include "tests/unit/check_main.h"

#define CHILD_OK 42   /* not 0: an execve that got through runs /bin/true, which exits 0 */

static int report_fd = -1;   /* the child's end of the report pipe */

/* In the child: the first failed expectation goes to the parent, and the child exits. */
static void child_fail(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (write(report_fd, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1) < 0)
		_exit(2);
	_exit(1);
}

/* rc and errno of a call the filter must refuse with want (EPERM unless said). */
#define DENIED(call, want)                                                                              \
	do {                                                                                            \
		errno = 0;                                                                              \
		long rc_ = (long)(call);                                                                \
		int err_ = errno;                                                                       \
		if (rc_ == 0 && getpid() != self)                                                       \
			_exit(0);   /* a clone that got through: the new child leaves */                \
		if (rc_ != -1 || err_ != (want))                                                        \
			child_fail("%s: rc %ld, errno %d (%s), want errno %d", #call, rc_, err_,         \
				   strerror(err_), (want));                                             \
	} while (0)

#define ALLOWED(cond)                                                                                    \
	do {                                                                                            \
		errno = 0;                                                                              \
		if (!(cond))                                                                            \
			child_fail("%s: false (errno %d, %s)", #cond, errno, strerror(errno));            \
	} while (0)

static pid_t self;

static void load_filter(void)
{
	mp_err e = { 0 };
	int rc = sandbox_serving(&e);

	if (rc != SANDBOX_ON)
		child_fail("sandbox_serving: %d (%s)", rc, e.detail);
}

/* Runs fn in a forked child with the report pipe; returns the child's wait status, the report in
 * msg. */
static int in_child(void (*fn)(void), char *msg, size_t len)
{
	int p[2], st = 0;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		report_fd = p[1];
		self = getpid();
		fn();
		_exit(CHILD_OK);
	}
	close(p[1]);
	n = read(p[0], msg, len - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return st;
}

static void check_ok(void (*fn)(void))
{
	char msg[512];
	int st = in_child(fn, msg, sizeof msg);

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == CHILD_OK, "child: status %#x: %s", st, msg);
}

static void denied_calls(void)
{
	static char *const argv[] = { "/bin/true", NULL };
	static char *const envp[] = { NULL };
	char buf[64] = "x", out[64];
	struct iovec local = { out, sizeof out }, remote = { buf, sizeof buf };
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ALLOWED(page != MAP_FAILED);
	load_filter();
	/* running anything */
	DENIED(execve("/bin/true", argv, envp), EPERM);
	DENIED(syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, envp, 0), EPERM);
	/* another process's memory: unfiltered, PEEKDATA of a process not traced is ESRCH, and
	 * reading one's own memory through process_vm_readv succeeds */
	DENIED(ptrace(PTRACE_PEEKDATA, getppid(), NULL, NULL), SANDBOX_KEEPS_PTRACE ? ESRCH : EPERM);
	DENIED(process_vm_readv(getpid(), &local, 1, &remote, 1, 0), EPERM);
	DENIED(syscall(SYS_pidfd_getfd, -1, 0, 0), EPERM);
	/* memory policy: each would succeed on this process */
	DENIED(syscall(SYS_mbind, page, 4096UL, MPOL_DEFAULT, NULL, 0UL, 0U), EPERM);
	DENIED(syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0UL), EPERM);
	DENIED(syscall(SYS_move_pages, 0, 0UL, NULL, NULL, NULL, 0), EPERM);
	DENIED(syscall(SYS_migrate_pages, 0, 0UL, NULL, NULL), EPERM);
	DENIED(syscall(SYS_process_madvise, -1, NULL, 0UL, 0, 0U), EPERM);   /* EBADF unfiltered */
	/* sockets of other families: each one a root process may open */
	DENIED(socket(AF_PACKET, SOCK_RAW, 0), EPERM);
	DENIED(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0), EPERM);
	DENIED(socket(AF_ALG, SOCK_SEQPACKET, 0), EPERM);
	DENIED(syscall(SYS_socket, (1UL << 32) | AF_UNIX, SOCK_STREAM, 0), EPERM);   /* the kernel would read AF_UNIX */
	/* identity: as root each would succeed */
	DENIED(setuid(getuid()), EPERM);
	DENIED(setgid(getgid()), EPERM);
	DENIED(setresuid((uid_t)-1, (uid_t)-1, (uid_t)-1), EPERM);
	DENIED(setgroups(0, NULL), EPERM);
	/* the kernel: unfiltered these are EINVAL, EFAULT, or a plain answer (personality's query) */
	DENIED(syscall(SYS_bpf, -1, NULL, 0U), EPERM);
	DENIED(syscall(SYS_init_module, NULL, 0UL, ""), EPERM);
	DENIED(syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0UL), EPERM);
	DENIED(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0UL), EPERM);
	DENIED(syscall(SYS_userfaultfd, 0), EPERM);
	DENIED(syscall(SYS_personality, 0xffffffffUL), EPERM);
	DENIED(syscall(SYS_clock_settime, -1, NULL), EPERM);
	DENIED(syscall(SYS_keyctl, -1, 0UL, 0UL, 0UL, 0UL), EPERM);
	/* the drift watcher's group is the helper's to mark */
	DENIED(syscall(SYS_fanotify_mark, -1, 0U, 0ULL, AT_FDCWD, NULL), EPERM);   /* EBADF unfiltered */
	DENIED(syscall(SYS_fanotify_init, 0U, 0U), EPERM);
	/* namespaces and mounts, last: an unshare that got through would leave the checks after it
	 * in a user namespace, where they fail with EPERM for another reason */
	DENIED(mount("none", "/nonexistent-mpd-sandbox", "tmpfs", 0, NULL), EPERM);   /* ENOENT unfiltered */
	DENIED(syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), NULL, NULL, NULL, 0UL), EPERM);
	DENIED(syscall(SYS_clone3, NULL, 0UL), ENOSYS);   /* EINVAL unfiltered */
	DENIED(syscall(SYS_setns, -1, 0), EPERM);         /* EBADF unfiltered */
	DENIED(unshare(CLONE_NEWUSER), EPERM);
}

START_TEST(denied_calls_fail_with_eperm)
{
	check_ok(denied_calls);
}
END_TEST

static void *thread_main(void *arg)
{
	*(int *)arg = 1;
	return NULL;
}

/* What the serving side does all day still works under the filter. */
static void allowed_calls(void)
{
	char line[256], pwbuf[4096];
	struct passwd pw, *res = NULL;
	int sv[2], fd, ran = 0, st, seccomp = -1;
	pthread_t th;
	FILE *f;
	pid_t pid;

	load_filter();
	ALLOWED((f = fopen("/proc/self/status", "re")) != NULL);
	while (fgets(line, sizeof line, f))
		sscanf(line, "Seccomp: %d", &seccomp);
	fclose(f);
	if (seccomp != 2)
		child_fail("Seccomp: %d in /proc/self/status, want 2 (filter)", seccomp);
	ALLOWED((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0 && close(fd) == 0);
	ALLOWED((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0 && close(fd) == 0);
	ALLOWED((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0 && close(fd) == 0);
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);   /* EAFNOSUPPORT where IPv6 is off */
	ALLOWED(fd >= 0 ? close(fd) == 0 : errno == EAFNOSUPPORT);
	ALLOWED(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0 && close(sv[0]) == 0 && close(sv[1]) == 0);
	/* threads: clone3 is ENOSYS, and glibc falls back to clone */
	ALLOWED(pthread_create(&th, NULL, thread_main, &ran) == 0 && pthread_join(th, NULL) == 0 && ran == 1);
	ALLOWED(getpwuid_r(0, &pw, pwbuf, sizeof pwbuf, &res) == 0 && res != NULL);
	ALLOWED(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
	ALLOWED((pid = fork()) >= 0);
	if (pid == 0)
		_exit(7);
	ALLOWED(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 7);
}

START_TEST(what_the_daemon_needs_still_works)
{
	check_ok(allowed_calls);
}
END_TEST

/* A thread that exists before the load is filtered too (SCMP_FLTATR_CTL_TSYNC). */
static int go[2];
static int thread_errno = -1;

static void *early_thread(void *arg)
{
	char c;
	(void)arg;
	if (read(go[0], &c, 1) != 1)
		return NULL;
	errno = 0;
	thread_errno = setuid(getuid()) < 0 ? errno : 0;
	return NULL;
}

static void tsync(void)
{
	pthread_t th;

	ALLOWED(pipe(go) == 0);
	ALLOWED(pthread_create(&th, NULL, early_thread, NULL) == 0);
	load_filter();
	ALLOWED(write(go[1], "g", 1) == 1);
	ALLOWED(pthread_join(th, NULL) == 0);
	if (thread_errno != EPERM)
		child_fail("setuid in a thread started before the filter: errno %d, want EPERM", thread_errno);
}

START_TEST(threads_started_before_the_load_are_filtered)
{
	check_ok(tsync);
}
END_TEST

/* Under systemd's SystemCallFilter=@system-service (the packaged unit) seccomp(2) itself is EPERM:
 * libseccomp cannot sync threads and loads through prctl. One thread: loaded all the same. */
static void deny_seccomp_syscall(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_seccomp, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };

	ALLOWED(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	ALLOWED(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
}

static void under_a_service_manager_filter(void)
{
	static char *const argv[] = { "/bin/true", NULL };

	deny_seccomp_syscall();
	load_filter();
	DENIED(execve("/bin/true", argv, argv + 1), EPERM);
	DENIED(setuid(getuid()), EPERM);
}

/* ... and with a second thread, which prctl would leave unfiltered, it refuses. */
static void under_a_service_manager_filter_threaded(void)
{
	mp_err e = { 0 };
	pthread_t th;

	deny_seccomp_syscall();
	ALLOWED(pipe(go) == 0);
	ALLOWED(pthread_create(&th, NULL, early_thread, NULL) == 0);
	if (sandbox_serving(&e) != -1 || e.code != MPE_PRIV_START || !strstr(e.detail, "2 threads"))
		child_fail("sandbox_serving with 2 threads and no seccomp(2): not refused (%s)", e.detail);
}

START_TEST(seccomp_syscall_filtered_loads_through_prctl_in_one_thread_only)
{
	check_ok(under_a_service_manager_filter);
	check_ok(under_a_service_manager_filter_threaded);
}
END_TEST

#if defined(__x86_64__)
/* Another syscall table than the native one kills the process (libseccomp's bad-arch action): the
 * deny list by number would not match there. */
static void int80_getpid(void)
{
	long r;

	load_filter();
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) /* i386 getpid */ : "memory");
	(void)r;
}

static void x32_getpid(void)
{
	load_filter();
	syscall(0x40000000L | SYS_getpid);
}

START_TEST(other_syscall_abis_are_killed)
{
	void (*fns[])(void) = { int80_getpid, x32_getpid };

	for (size_t i = 0; i < 2; i++) {
		char msg[512];
		int st = in_child(fns[i], msg, sizeof msg);
		ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "%s: status %#x, want killed by SIGSYS: %s",
			      i ? "x32 getpid" : "int 0x80 getpid", st, msg);
	}
}
END_TEST
#endif

static Suite *suite(void)
{
	Suite *s = suite_create("sandbox");
	TCase *t = tcase_create("serving");

	tcase_add_test(t, denied_calls_fail_with_eperm);
	tcase_add_test(t, what_the_daemon_needs_still_works);
	tcase_add_test(t, threads_started_before_the_load_are_filtered);
	tcase_add_test(t, seccomp_syscall_filtered_loads_through_prctl_in_one_thread_only);
#if defined(__x86_64__)
	tcase_add_test(t, other_syscall_abis_are_killed);
#endif
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
