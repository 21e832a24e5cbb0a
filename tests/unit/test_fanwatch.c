/* kernel/fanwatch.c on a generated tree, in this process (as the helper runs it; fanotify_init
 * needs CAP_SYS_ADMIN: run as root). A target is checked against the catalogue and the pools the
 * tree has; the files it marks are its own and those whose writes change it — for a node's pool of
 * the default size, the size's global file and /proc/sys/vm/nr_hugepages{,_mempolicy} — and the
 * group carries exactly those marks. A write to a file no target names is no event of the group. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/kernel/fanwatch.h"
#include "server/kernel/knobs.h"
#include "server/kernel/topology.h"
#include "tests/unit/check_main.h"

static char root[64], sys_root[96], proc_root[96];

#include "tests/unit/tree.h"

#define POOL "kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
#define NODE "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"

static struct knob_catalogue *cat;

static void setup(void)
{
	snprintf(root, sizeof root, "/tmp/mpd-fanwatch-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(sys_root, sizeof sys_root, "%s/sys", root);
	snprintf(proc_root, sizeof proc_root, "%s/proc", root);
	put(sys_root, "kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never");
	put(sys_root, POOL, "0");
	put(sys_root, NODE, "0");
	put(sys_root, "kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", "0");
	put(proc_root, "meminfo", "MemTotal: 1000 kB\nHugepagesize:       2048 kB\n");
	put(proc_root, "sys/vm/nr_hugepages", "0");
	put(proc_root, "sys/vm/nr_hugepages_mempolicy", "0");
	put(proc_root, "sys/vm/overcommit_memory", "0");
	ck_assert_ptr_nonnull(cat = knobs_build(sys_root, proc_root));
}

static void teardown(void)
{
	char cmd[128];

	knobs_free(cat);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

static uint32_t knob_index(const char *name)
{
	for (size_t i = 0; i < knobs_count(cat); i++)
		if (!strcmp(knobs_at(cat, i)->name, name))
			return (uint32_t)i;
	ck_abort_msg("no knob %s", name);
	return 0;
}

static unsigned long ino(const char *base, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", base, rel);
	ck_assert_int_eq(stat(path, &st), 0);
	return (unsigned long)st.st_ino;
}

/* The inodes the group has marks on, from its fdinfo, in *inos (at most max): how many. */
static int marks(int fd, unsigned long *inos, int max)
{
	char path[64], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
	ck_assert_ptr_nonnull(f = fopen(path, "re"));
	while (fgets(line, sizeof line, f))
		if (n < max && sscanf(line, "fanotify ino:%lx", &inos[n]) == 1)
			n++;
	fclose(f);
	return n;
}

static bool has(const unsigned long *inos, int n, unsigned long want)
{
	for (int i = 0; i < n; i++)
		if (inos[i] == want)
			return true;
	return false;
}

START_TEST(targets_outside_the_catalogue_and_the_pools_are_refused)
{
	const struct fw_target bad[] = {
		{ .kind = FW_KNOB, .index = (uint32_t)knobs_count(cat) },
		{ .kind = FW_KNOB, .index = knob_index("thp.defrag"), .node = -1 },
		{ .kind = FW_KNOB, .index = knob_index("thp.defrag"), .pad = 1 },
		{ .kind = FW_POOL, .size_kb = 4096, .node = -1 },
		{ .kind = FW_POOL, .size_kb = 1048576, .node = 0 },   /* a size with no pool on node 0 */
		{ .kind = FW_POOL, .size_kb = 2048, .node = TOPO_MAX_NODES },
		{ .kind = FW_POOL, .size_kb = 2048, .node = -1, .index = 1 },
		{ .kind = 0 },
		{ .kind = 7, .index = knob_index("thp.defrag") },
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(fw_target_check(cat, sys_root, &bad[i]) == -EINVAL, "target %zu was accepted", i);
}
END_TEST

START_TEST(a_pool_marks_the_files_whose_writes_change_it)
{
	struct fw_target t[3] = {
		{ .kind = FW_KNOB, .index = knob_index("thp.defrag") },
		{ .kind = FW_POOL, .size_kb = 2048, .node = 0 },
		{ .kind = FW_POOL, .size_kb = 1048576, .node = -1 },
	};
	char paths[FW_FILES_MAX][4096];
	unsigned long inos[16];
	uint64_t marked;
	int fd, n;

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(fw_target_check(cat, sys_root, &t[i]), 0);
	/* The node's pool of the default size: its own file first, then the global ones. */
	ck_assert_int_eq(fw_target_files(cat, sys_root, proc_root, &t[1], paths), 4);
	ck_assert_ptr_nonnull(strstr(paths[0], NODE));
	ck_assert_int_eq(fw_target_files(cat, sys_root, proc_root, &t[2], paths), 1);   /* not the default size */
	ck_assert_int_ge(fd = fw_open(cat, sys_root, proc_root, t, 3, &marked), 0);
	ck_assert_uint_eq(marked, 7);
	n = marks(fd, inos, 16);
	ck_assert_int_eq(n, 6);   /* defrag; node0, 2M global, the two procfs files; 1G global */
	ck_assert(has(inos, n, ino(sys_root, "kernel/mm/transparent_hugepage/defrag")));
	ck_assert(has(inos, n, ino(sys_root, NODE)));
	ck_assert(has(inos, n, ino(sys_root, POOL)));
	ck_assert(has(inos, n, ino(proc_root, "sys/vm/nr_hugepages")));
	ck_assert(has(inos, n, ino(proc_root, "sys/vm/nr_hugepages_mempolicy")));
	ck_assert(!has(inos, n, ino(proc_root, "sys/vm/overcommit_memory")));

	/* A write to an unmarked file, then one to a marked one: the one event is the second's. */
	char path[PATH_MAX];
	int w;
	snprintf(path, sizeof path, "%s/sys/vm/overcommit_memory", proc_root);
	ck_assert_int_ge(w = open(path, O_WRONLY | O_TRUNC), 0);
	ck_assert_int_eq(write(w, "1", 1), 1);
	close(w);
	snprintf(path, sizeof path, "%s/sys/vm/nr_hugepages", proc_root);
	ck_assert_int_ge(w = open(path, O_WRONLY | O_TRUNC), 0);
	ck_assert_int_eq(write(w, "2", 1), 1);
	close(w);
	{
		char now[16];
		get(proc_root, "sys/vm/nr_hugepages", now, sizeof now);
		ck_assert_str_eq(now, "2");
	}
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char buf[8192];
		const struct fanotify_event_metadata *m = (const void *)buf;
		ssize_t got;
		struct stat st;
		ck_assert_int_eq(poll(&p, 1, 10000), 1);
		ck_assert_int_gt(got = read(fd, buf, sizeof buf), 0);
		for (; FAN_EVENT_OK(m, got); m = FAN_EVENT_NEXT(m, got)) {
			ck_assert_int_eq(m->pid, getpid());
			ck_assert_int_ge(m->fd, 0);
			ck_assert_int_eq(fstat(m->fd, &st), 0);
			ck_assert_uint_eq((unsigned long)st.st_ino, ino(proc_root, "sys/vm/nr_hugepages"));
			close(m->fd);
		}
	}
	close(fd);
}
END_TEST

static Suite *fanwatch_suite(void)
{
	Suite *s = suite_create("fanwatch");
	TCase *tc = tcase_create("group");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, targets_outside_the_catalogue_and_the_pools_are_refused);
	tcase_add_test(tc, a_pool_marks_the_files_whose_writes_change_it);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(fanwatch_suite)
