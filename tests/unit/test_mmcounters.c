/* The memory counters an operation records (kernel/mmcounters.c), read from generated procfs and
 * sysfs trees: the vmstat counters of the five families only and in file order, each online
 * node's numastat, buddyinfo's zones and orders per node, and what is skipped rather than
 * guessed (a line that does not parse, a name too long to keep). The machine's real files are read
 * too, for their shape: the parser is the one the daemon runs on this kernel. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "server/kernel/mmcounters.h"
#include "server/kernel/sysfs.h"
#include "tests/unit/check_main.h"

static char root[64];

#include "tests/unit/tree.h"

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(p);
}

static void setup(void)
{
	snprintf(root, sizeof root, "/tmp/mpd-mmc-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const struct mm_counter *counter(const struct mm_counter *c, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(c[i].name, name))
			return &c[i];
	return NULL;
}

START_TEST(generated_tree_reads_as_written)
{
	struct mm_snapshot *s = malloc(sizeof *s);
	char name[80];

	/* one of the families, but 60 characters: longer than a counter keeps, so skipped, not cut */
	memcpy(name, "thp_", 4);
	memset(name + 4, 'x', 56);
	name[60] = '\0';
	char vm[512];
	snprintf(vm, sizeof vm, "nr_free_pages 100\nthp_fault_alloc 7\ncompact_stall 3\nnuma_hit x12\n%s 5\n"
		 "pgmigrate_success 18446744073709551615\nhtlb_buddy_alloc_success 2\npgfault 99\nnuma_miss 4", name);
	put(root, "proc/vmstat", vm);
	put(root, "sys/devices/system/node/online", "0,2");
	put(root, "sys/devices/system/node/node0/numastat", "numa_hit 10\nnuma_miss 1\nother_node 2");
	put(root, "sys/devices/system/node/node2/numastat", "numa_hit 20");
	put(root, "proc/buddyinfo", "Node 0, zone      DMA      1      2      3\n"
	    "Node 0, zone   Normal   1838   1118    5    4\n"
	    "Node 2, zone   Normal     9      8\n"
	    "garbage line\n"
	    "Node x, zone Normal 1");

	char procfs[PATH_MAX], sysfs[PATH_MAX];
	snprintf(procfs, sizeof procfs, "%s/proc", root);
	snprintf(sysfs, sizeof sysfs, "%s/sys", root);
	ck_assert_int_eq(mmc_read(procfs, sysfs, s), 0);

	ck_assert_int_eq(s->n, 5);   /* thp_, compact_, pgmigrate_, htlb_buddy_alloc_, numa_miss */
	ck_assert_str_eq(s->c[0].name, "thp_fault_alloc");
	ck_assert_uint_eq(s->c[0].v, 7);
	ck_assert_str_eq(s->c[1].name, "compact_stall");
	ck_assert_uint_eq(counter(s->c, s->n, "pgmigrate_success")->v, UINT64_MAX);
	ck_assert_uint_eq(counter(s->c, s->n, "numa_miss")->v, 4);   /* the last line, no newline */
	ck_assert_ptr_null(counter(s->c, s->n, "numa_hit"));         /* "x12" does not parse */
	ck_assert_ptr_null(counter(s->c, s->n, "pgfault"));          /* not one of the families */

	ck_assert_int_eq(s->nnodes, 2);
	ck_assert_uint_eq(s->nodes[0].id, 0);
	ck_assert_int_eq(s->nodes[0].nstat, 3);
	ck_assert_str_eq(s->nodes[0].stat[2].name, "other_node");
	ck_assert_uint_eq(s->nodes[1].id, 2);
	ck_assert_int_eq(s->nodes[1].nstat, 1);
	ck_assert_uint_eq(s->nodes[1].stat[0].v, 20);

	ck_assert_int_eq(s->nodes[0].nzones, 2);
	ck_assert_str_eq(s->nodes[0].zone[0].name, "DMA");
	ck_assert_uint_eq(s->nodes[0].zone[0].nr_free[2], 3);
	ck_assert_str_eq(s->nodes[0].zone[1].name, "Normal");
	ck_assert_uint_eq(s->nodes[0].zone[1].nr_free[0], 1838);
	ck_assert_uint_eq(s->nodes[0].zone[1].nr_free[3], 4);
	ck_assert_int_eq(s->nodes[1].nzones, 1);
	ck_assert_uint_eq(s->nodes[1].zone[0].nr_free[1], 8);
	ck_assert_int_eq(s->norders, 4);
	free(s);
}
END_TEST

START_TEST(missing_files)
{
	struct mm_snapshot *s = malloc(sizeof *s);
	char procfs[PATH_MAX];

	snprintf(procfs, sizeof procfs, "%s/proc", root);
	/* no vmstat: an error; no numastat, no buddyinfo: empty parts */
	ck_assert_int_eq(mmc_read(procfs, root, s), -ENOENT);
	put(root, "proc/vmstat", "thp_fault_alloc 1");
	ck_assert_int_eq(mmc_read(procfs, root, s), 0);
	ck_assert_int_eq(s->n, 1);
	ck_assert_int_eq(s->nnodes, 0);
	free(s);
}
END_TEST

/* This kernel's files: every node online has its numastat and at least one zone, 11 orders on
 * x86-64 (MAX_PAGE_ORDER 10), and the families the conditions record are there. */
START_TEST(this_kernel)
{
	struct mm_snapshot *s = malloc(sizeof *s);

	ck_assert_int_eq(mmc_read("/proc", "/sys", s), 0);
	ck_assert_ptr_nonnull(counter(s->c, s->n, "numa_hit"));
	ck_assert_ptr_nonnull(counter(s->c, s->n, "compact_stall"));
	ck_assert_int_ge(s->nnodes, 1);
	for (int i = 0; i < s->nnodes; i++) {
		ck_assert_int_ge(s->nodes[i].nstat, 6);
		ck_assert_int_ge(s->nodes[i].nzones, 1);
	}
#ifdef __x86_64__
	ck_assert_int_eq(s->norders, 11);
#endif
	free(s);
}
END_TEST

/* How many of this process's fds are path. */
static int fds_on(const char *path)
{
	char self[64], link[PATH_MAX];
	int n = 0;

	for (int fd = 3; fd < 1024; fd++) {
		ssize_t l;
		snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
		if ((l = readlink(self, link, sizeof link - 1)) > 0) {
			link[l] = '\0';
			n += !strcmp(link, path);
		}
	}
	return n;
}

/* Allocates and touches 16 MiB and gives it back: the page allocator's numa_hit moves, in
 * /proc/vmstat and in the node's numastat. */
static void allocate_pages(void)
{
	size_t len = 16 << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	munmap(p, len);
}

/* vmstat's numa_hit and node 0's, 0 when absent. */
static uint64_t vm_hit(const struct mm_snapshot *s)
{
	const struct mm_counter *c = counter(s->c, s->n, "numa_hit");
	return c ? c->v : 0;
}

static uint64_t node_hit(const struct mm_snapshot *s)
{
	const struct mm_counter *c = s->nnodes ? counter(s->nodes[0].stat, s->nodes[0].nstat, "numa_hit") : NULL;
	return c ? c->v : 0;
}

/* The held files are read again, not their first text kept: after pages were allocated, a held
 * snapshot has counters at least those a read by path saw after the allocation, and at most
 * those one saw after the snapshot. On this kernel, the files are held (an fd onto /proc/vmstat
 * stays open between snapshots). */
START_TEST(held_files_give_the_kernel_now)
{
	struct mmc_files *f = mmc_files_new("/proc", "/sys");
	struct mm_snapshot *path = malloc(sizeof *path), *h1, *h2;
	int err = 1;

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(h1 = mmc_snap(f, NULL, NULL, &err));
	ck_assert_int_eq(err, 0);
	ck_assert_ptr_nonnull(counter(h1->c, h1->n, "numa_hit"));
	ck_assert_int_ge(h1->nnodes, 1);
	ck_assert_int_ge(h1->nodes[0].nstat, 6);
	ck_assert_int_ge(h1->nodes[0].nzones, 1);

	ck_assert_msg(fds_on("/proc/vmstat") == 1, "no fd onto /proc/vmstat after a snapshot");

	for (int round = 0; round < 3; round++) {
		allocate_pages();
		ck_assert_int_eq(mmc_read("/proc", "/sys", path), 0);
		uint64_t vm_lo = vm_hit(path), node_lo = node_hit(path);
		ck_assert_ptr_nonnull(h2 = mmc_snap(f, NULL, NULL, &err));
		ck_assert_int_eq(mmc_read("/proc", "/sys", path), 0);
		ck_assert_uint_gt(vm_lo, vm_hit(h1));
		ck_assert_uint_ge(vm_hit(h2), vm_lo);
		ck_assert_uint_le(vm_hit(h2), vm_hit(path));
		ck_assert_uint_ge(node_hit(h2), node_lo);
		ck_assert_uint_le(node_hit(h2), node_hit(path));
		ck_assert_int_eq(h2->n, path->n);   /* the whole file, every family */
		ck_assert_int_eq(h2->norders, path->norders);
		free(h1);
		h1 = h2;
	}
	free(h1);
	free(path);
	mmc_files_free(f);
}
END_TEST

static void *snap_many(void *arg)
{
	struct mmc_files *f = arg;
	intptr_t bad = 0;

	for (int i = 0; i < 50; i++) {
		int err;
		struct mm_snapshot *s = mmc_snap(f, NULL, NULL, &err);
		bad += !s || !counter(s->c, s->n, "numa_hit") || !s->nnodes || !s->nodes[0].nstat || !s->nodes[0].nzones;
		free(s);
	}
	return (void *)bad;
}

/* Snapshots from several threads at once, from the first (the files opened by whichever thread
 * reads one first; the opens that lose the race are closed): every snapshot whole, and one fd per
 * file afterwards. */
START_TEST(held_files_shared_by_threads)
{
	struct mmc_files *f = mmc_files_new("/proc", "/sys");
	pthread_t t[4];
	int before = fds_on("/proc/vmstat");

	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, snap_many, f), 0);
	for (int i = 0; i < 4; i++) {
		void *bad;
		ck_assert_int_eq(pthread_join(t[i], &bad), 0);
		ck_assert_int_eq((intptr_t)bad, 0);
	}
	ck_assert_int_eq(fds_on("/proc/vmstat"), before + 1);
	ck_assert_int_eq(fds_on("/proc/buddyinfo"), 1);
	mmc_files_free(f);
	ck_assert_int_eq(fds_on("/proc/vmstat"), before);
}
END_TEST

/* A generated tree is not held (a test may replace its files): each snapshot reads what is there
 * now, and gives what mmc_read gives, in a snapshot sized to the online nodes. */
START_TEST(generated_tree_is_read_by_path)
{
	char procfs[PATH_MAX], sysfs[PATH_MAX];
	struct mm_snapshot *whole = malloc(sizeof *whole), *s;
	struct mmc_files *f;
	int err;

	snprintf(procfs, sizeof procfs, "%s/proc", root);
	snprintf(sysfs, sizeof sysfs, "%s/sys", root);
	put(root, "proc/vmstat", "thp_fault_alloc 7\nnuma_hit 3");
	put(root, "sys/devices/system/node/online", "0,2");
	put(root, "sys/devices/system/node/node0/numastat", "numa_hit 10");
	put(root, "sys/devices/system/node/node2/numastat", "numa_hit 20");
	put(root, "proc/buddyinfo", "Node 0, zone   Normal   1838   1118\nNode 2, zone   Normal     9      8");
	ck_assert_ptr_nonnull(f = mmc_files_new(procfs, sysfs));
	ck_assert_ptr_nonnull(s = mmc_snap(f, NULL, NULL, &err));
	ck_assert_uint_eq(counter(s->c, s->n, "thp_fault_alloc")->v, 7);
	free(s);

	put(root, "proc/vmstat", "thp_fault_alloc 9\nnuma_hit 4");
	put(root, "sys/devices/system/node/node2/numastat", "numa_hit 21");
	ck_assert_ptr_nonnull(s = mmc_snap(f, NULL, NULL, &err));
	ck_assert_int_eq(mmc_read(procfs, sysfs, whole), 0);
	ck_assert_uint_eq(counter(s->c, s->n, "thp_fault_alloc")->v, 9);
	ck_assert_int_eq(s->nnodes, 2);
	ck_assert_uint_eq(s->nodes[1].id, 2);
	ck_assert_uint_eq(s->nodes[1].stat[0].v, 21);
	ck_assert_int_eq(s->n, whole->n);
	ck_assert_int_eq(s->norders, whole->norders);
	for (int i = 0; i < s->nnodes; i++) {
		ck_assert_uint_eq(s->nodes[i].id, whole->nodes[i].id);
		ck_assert_int_eq(s->nodes[i].nzones, whole->nodes[i].nzones);
		ck_assert_uint_eq(s->nodes[i].zone[0].nr_free[1], whole->nodes[i].zone[0].nr_free[1]);
	}
	free(s);
	/* Without the files (NULL): by path under the roots given. */
	ck_assert_ptr_nonnull(s = mmc_snap(NULL, procfs, sysfs, &err));
	ck_assert_uint_eq(counter(s->c, s->n, "numa_hit")->v, 4);
	free(s);
	/* No vmstat: no snapshot, and why. */
	snprintf(procfs, sizeof procfs, "%s/none", root);
	ck_assert_ptr_null(mmc_snap(NULL, procfs, sysfs, &err));
	ck_assert_int_eq(err, -ENOENT);
	mmc_files_free(f);
	free(whole);
}
END_TEST

/* A seq_file longer than a page comes in more than one read: a held file's text is the whole of
 * it, as read(2) to the end gives it (/proc/vmstat is ~4-5 KiB on 6.x, a page on x86-64 is 4). The
 * file: this process's maps, made ~16 KiB with 200 mappings that cannot merge. */
START_TEST(held_text_longer_than_a_page_is_whole)
{
	static char a[65536], b[65536];
	char *maps[200];
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), got = 0;
	int fd, fd2, n;
	ssize_t r;

	for (int i = 0; i < 200; i++)   /* alternating protections: no two neighbours merge */
		ck_assert_ptr_ne(maps[i] = mmap(NULL, pg, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
						 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), MAP_FAILED);
	ck_assert_int_ge(fd = kfs_open_held("/proc/self/maps"), 0);
	ck_assert_int_gt(n = kfs_pread_text(fd, a, sizeof a), (int)pg * 2);
	ck_assert_int_ge(fd2 = open("/proc/self/maps", O_RDONLY), 0);
	while ((r = read(fd2, b + got, sizeof b - 1 - got)) > 0)
		got += (size_t)r;
	close(fd2);
	if (got && b[got - 1] == '\n')
		got--;
	b[got] = '\0';
	ck_assert_str_eq(a, b);
	/* And again from the same fd: the text from its start, not what follows the last read. */
	ck_assert_int_eq(kfs_pread_text(fd, a, sizeof a), n);
	ck_assert_str_eq(a, b);
	close(fd);
	for (int i = 0; i < 200; i++)
		munmap(maps[i], pg);
}
END_TEST

static Suite *mmcounters_suite(void)
{
	Suite *s = suite_create("mmcounters");
	TCase *tc = tcase_create("read");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, generated_tree_reads_as_written);
	tcase_add_test(tc, missing_files);
	tcase_add_test(tc, this_kernel);
	tcase_add_test(tc, held_files_give_the_kernel_now);
	tcase_add_test(tc, generated_tree_is_read_by_path);
	tcase_add_test(tc, held_files_shared_by_threads);
	tcase_add_test(tc, held_text_longer_than_a_page_is_whole);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(mmcounters_suite)
