/* The writer of a drift, named from /proc/PID and believed only under its pidfd: a live writer is
 * named (comm, exe, uid, cgroup, unit), a zombie too (it still holds its pid), one whose pidfd says
 * it is gone is refused even though its pid now names a live process — the reused pid. Real
 * processes on the real /proc; no privilege needed (the writers are this test's children). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/kernel/proc.h"
#include "server/ops/drift_cause.h"
#include "tests/unit/check_main.h"

START_TEST(the_unit_is_the_innermost_service_or_scope)
{
	static const struct { const char *path, *unit; } cases[] = {
		{ "/system.slice/tuned.service", "tuned.service" },
		{ "/user.slice/user-0.slice/session-3.scope", "session-3.scope" },
		{ "/system.slice/containerd.service/kubepods/pod1", "containerd.service" },
		{ "/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope/init.service", "init.service" },
		{ "/", "" },
		{ "/system.slice", "" },
		{ "/a.service.d/x", "" },
		{ "", "" },
	};
	char unit[128];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		drift_unit_of(cases[i].path, unit, sizeof unit);
		ck_assert_msg(!strcmp(unit, cases[i].unit), "%s: '%s', want '%s'", cases[i].path, unit, cases[i].unit);
	}
}
END_TEST

/* A child named name that waits until the pipe closes; its pid, the write end in *ctl. */
static pid_t writer(const char *name, int *ctl)
{
	int p[2];
	pid_t pid;
	char x;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		close(p[1]);
		prctl(PR_SET_NAME, name);
		(void)!read(p[0], &x, 1);
		_exit(0);
	}
	close(p[0]);
	*ctl = p[1];
	return pid;
}

static void self_cgroup(char *out, size_t len)
{
	char *text = NULL;
	size_t n;
	const char *l;

	out[0] = '\0';
	ck_assert_int_eq(proc_read_file("/proc", getpid(), "cgroup", 65536, &text, &n), 0);
	if ((l = strstr(text, "0::")))
		snprintf(out, len, "%.*s", (int)strcspn(l + 3, "\n"), l + 3);
	free(text);
}

START_TEST(a_live_writer_is_named_through_its_pidfd)
{
	struct drift_writer w;
	char exe[PATH_MAX], cg[512];
	ssize_t n;
	int ctl, pidfd, st;
	pid_t pid = writer("mpd-writer", &ctl);

	ck_assert_int_ge(pidfd = proc_pidfd(pid), 0);
	drift_attribute("/proc", pid, pidfd, true, &w);
	ck_assert_msg(w.named, "%s", w.why);
	ck_assert(w.verified);
	ck_assert_int_eq(w.pid, pid);
	/* PR_SET_NAME may run after the first read: wait for it rather than guess. */
	while (strcmp(w.comm, "mpd-writer")) {
		usleep(1000);
		drift_attribute("/proc", pid, pidfd, true, &w);
	}
	ck_assert(w.have_uid);
	ck_assert_uint_eq(w.uid, getuid());
	ck_assert_int_gt(n = readlink("/proc/self/exe", exe, sizeof exe - 1), 0);
	exe[n] = '\0';
	ck_assert_str_eq(w.exe, exe);
	self_cgroup(cg, sizeof cg);
	ck_assert_str_eq(w.cgroup, cg);
	json_t *j = drift_writer_json(&w);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "pid")), pid);
	ck_assert_str_eq(json_string_value(json_object_get(j, "comm")), "mpd-writer");
	ck_assert_ptr_null(json_object_get(j, "unnamed"));
	json_decref(j);

	/* A zombie still holds its pid: still named, without a program. */
	close(ctl);
	{
		siginfo_t si;
		ck_assert_int_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	}
	drift_attribute("/proc", pid, pidfd, true, &w);
	ck_assert_msg(w.named, "%s", w.why);
	ck_assert_str_eq(w.comm, "mpd-writer");
	ck_assert_str_eq(w.exe, "");
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	close(pidfd);
}
END_TEST

START_TEST(a_reaped_writer_is_refused_even_when_its_pid_names_a_live_process)
{
	struct drift_writer w;
	int ctl, pidfd, st;
	pid_t pid = writer("mpd-gone", &ctl);

	ck_assert_int_ge(pidfd = proc_pidfd(pid), 0);
	close(ctl);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	/* The pid "reused": this very process answers at the number the event gave. The pidfd
	 * names the writer, which is gone, so nothing read there is believed. */
	drift_attribute("/proc", getpid(), pidfd, true, &w);
	ck_assert(!w.named);
	ck_assert_str_eq(w.comm, "");
	ck_assert(!w.have_uid);
	ck_assert_ptr_nonnull(strstr(w.why, "exited"));
	json_t *j = drift_writer_json(&w);
	ck_assert(json_is_null(json_object_get(j, "comm")));
	ck_assert_ptr_nonnull(json_string_value(json_object_get(j, "unnamed")));
	json_decref(j);
	close(pidfd);

	/* The kernel said FAN_NOPIDFD (reaped before the event was read): refused as well. */
	drift_attribute("/proc", getpid(), -1, true, &w);
	ck_assert(!w.named);
	ck_assert_ptr_nonnull(strstr(w.why, "reaped"));
	/* No pid at all. */
	drift_attribute("/proc", 0, -1, true, &w);
	ck_assert(!w.named);
	/* A kernel without FAN_REPORT_PIDFD: named, but not verified. */
	drift_attribute("/proc", getpid(), -1, false, &w);
	ck_assert(w.named);
	ck_assert(!w.verified);
}
END_TEST

static Suite *drift_cause_suite(void)
{
	Suite *s = suite_create("drift_cause");
	TCase *tc = tcase_create("attribution");

	tcase_add_test(tc, the_unit_is_the_innermost_service_or_scope);
	tcase_add_test(tc, a_live_writer_is_named_through_its_pidfd);
	tcase_add_test(tc, a_reaped_writer_is_refused_even_when_its_pid_names_a_live_process);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(drift_cause_suite)
