/* kernel/mpol.c and kernel/spawn.c against the real kernel: the maxnode rule, the mode table, and
 * a forked child that sets its policy, identity and directory and reports a failing step back. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/kernel/mpol.h"
#include "server/kernel/spawn.h"
#include "tests/unit/check_main.h"

START_TEST(mask_maxnode_is_highest_bit_plus_two)
{
	struct mpol_mask m;
	idset s;

	idset_clear(&s);
	mpol_mask_from(&s, &m);
	ck_assert_uint_eq(m.maxnode, 0);
	idset_parse("0", &s);
	mpol_mask_from(&s, &m);
	ck_assert_uint_eq(m.maxnode, 2);      /* the kernel reads maxnode - 1 bits */
	ck_assert_uint_eq(m.bits[0], 1);
	idset_parse("1,3,64", &s);
	mpol_mask_from(&s, &m);
	ck_assert_uint_eq(m.maxnode, 66);
	ck_assert_uint_eq(m.bits[0], 0xa);
	ck_assert_uint_eq(m.bits[1], 1);
}
END_TEST

START_TEST(mode_table)
{
	static const char *const names[] = { "default", "local", "preferred", "bind", "interleave", "preferred-many",
					     "weighted-interleave" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const struct mpol_mode *m = mpol_mode_by_name(names[i]);
		ck_assert_ptr_nonnull(m);
		ck_assert_str_eq(mpol_mode_name(m->mode), names[i]);
	}
	ck_assert_ptr_null(mpol_mode_by_name("prefer"));    /* the kernel's spelling is not the API's */
	ck_assert_ptr_null(mpol_mode_by_name("BIND"));
	ck_assert_int_eq(mpol_mode_by_name("bind")->nodes, MPOL_NODES_REQUIRED);
	ck_assert_int_eq(mpol_mode_by_name("preferred")->nodes, MPOL_NODES_OPTIONAL);
	ck_assert(!mpol_mode_by_name("local")->flags_ok);
}
END_TEST

static char *const sh_argv[] = { "sh", "-c", "exit 7", NULL };
static char *const no_env[] = { NULL };

static struct spawn_spec base(void)
{
	return (struct spawn_spec){ .argv = sh_argv, .envp = no_env, .path = "/usr/bin:/bin", .cwd = "/",
				    .uid = getuid(), .gid = getgid() };
}

START_TEST(child_runs_and_exits)
{
	struct spawn_spec s = base();
	enum spawn_step step;
	int st;
	pid_t pid;

	s.set_policy = true;
	s.policy = MPD_MPOL_BIND;
	{
		idset n;
		idset_parse("0", &n);
		mpol_mask_from(&n, &s.nodes);
	}
	pid = spawn_start(&s, &step);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(step, SPAWN_OK);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 7);
}
END_TEST

START_TEST(failing_steps_come_back_with_their_errno)
{
	char *const missing[] = { "/nonexistent/prog", NULL };
	char *const bare[] = { "no-such-program-here", NULL };
	struct spawn_spec s = base();
	enum spawn_step step;

	s.argv = missing;
	ck_assert_int_eq(spawn_start(&s, &step), -ENOENT);
	ck_assert_int_eq(step, SPAWN_EXEC);
	s.argv = bare;   /* searched in s.path */
	ck_assert_int_eq(spawn_start(&s, &step), -ENOENT);
	ck_assert_int_eq(step, SPAWN_EXEC);

	s = base();
	s.cwd = "/nonexistent-dir";
	ck_assert_int_eq(spawn_start(&s, &step), -ENOENT);
	ck_assert_int_eq(step, SPAWN_CWD);

	s = base();
	s.set_policy = true;
	s.policy = MPD_MPOL_BIND;      /* bind with no nodes: the kernel's EINVAL */
	ck_assert_int_eq(spawn_start(&s, &step), -EINVAL);
	ck_assert_int_eq(step, SPAWN_POLICY);

	s = base();
	s.set_policy = true;
	s.policy = MPD_MPOL_LOCAL | MPD_MPOL_F_STATIC_NODES | MPD_MPOL_F_RELATIVE_NODES;
	ck_assert_int_eq(spawn_start(&s, &step), -EINVAL);
	ck_assert_int_eq(step, SPAWN_POLICY);
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);   /* every failed child was reaped */
	ck_assert_int_eq(errno, ECHILD);
}
END_TEST

START_TEST(probe_agrees_with_the_kernel)
{
	struct mpol_caps c;
	struct utsname u;
	int major = 0, minor = 0, v;

	mpol_probe(&c);
	ck_assert(c.probed);
	uname(&u);
	sscanf(u.release, "%d.%d", &major, &minor);
	v = major * 100 + minor;
	/* bind+balancing came with 5.12, preferred-many with 5.15, except-advised with 6.18 */
	ck_assert_int_eq(c.preferred_many, v >= 515);
	ck_assert_int_eq(c.balancing_bind, v >= 512);
	ck_assert_int_eq(c.thp_except_advised, v >= 618);
	ck_assert_int_eq(c.weighted_interleave, access("/sys/kernel/mm/mempolicy/weighted_interleave", F_OK) == 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("spawn");
	TCase *t = tcase_create("spawn");
	tcase_add_test(t, mask_maxnode_is_highest_bit_plus_two);
	tcase_add_test(t, mode_table);
	tcase_add_test(t, child_runs_and_exits);
	tcase_add_test(t, failing_steps_come_back_with_their_errno);
	tcase_add_test(t, probe_agrees_with_the_kernel);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
