/* The topology reader against sysfs trees generated here, in a temp dir: the shapes the test
 * machine (one node) cannot show, and the malformed files a kernel must never make us guess at. */
#include <errno.h>
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/kernel/topology.h"
#include "tests/unit/check_main.h"

static char root[64];

static void mkdirs(const char *path)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(tmp, 0755);
			*p = '/';
		}
	}
	mkdir(tmp, 0755);
}

/* Writes root/rel with text, creating directories. */
static void put(const char *rel, const char *text)
{
	char path[PATH_MAX], dir[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", root, rel);
	snprintf(dir, sizeof dir, "%s", path);
	*strrchr(dir, '/') = '\0';
	mkdirs(dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void putf(const char *rel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(const char *rel, const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	put(rel, buf);
}

static void mkdir_rel(const char *rel)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	mkdirs(path);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(p);
}

static void setup(void)
{
	snprintf(root, sizeof root, "/tmp/mpd-topo-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A machine like FakeTree's default: nodes 0..n-1, two CPUs each, node `cpuless` without CPUs,
 * distance 10 local, 20 neighbour, 30 otherwise; hugetlb 2M everywhere, 1G on nodes with CPUs. */
static void gen_tree(int n, int cpuless)
{
	char rel[256], row[1024], cpus[32], hascpu[512] = "";
	int cpu = 0;

	putf("devices/system/node/possible", "0-%d\n", n - 1);
	putf("devices/system/node/online", "0-%d\n", n - 1);
	putf("devices/system/node/has_memory", "0-%d\n", n - 1);
	for (int i = 0; i < n; i++) {
		size_t off = 0;
		if (i == cpuless) {
			cpus[0] = '\0';
		} else {
			snprintf(cpus, sizeof cpus, "%d-%d", cpu, cpu + 1);
			cpu += 2;
			size_t l = strlen(hascpu);
			snprintf(hascpu + l, sizeof hascpu - l, "%s%d", l ? "," : "", i);
		}
		snprintf(rel, sizeof rel, "devices/system/node/node%d/cpulist", i);
		putf(rel, "%s\n", cpus);
		for (int j = 0; j < n; j++)
			off += (size_t)snprintf(row + off, sizeof row - off, "%s%d", j ? " " : "",
						i == j ? 10 : abs(i - j) == 1 ? 20 : 30);
		snprintf(rel, sizeof rel, "devices/system/node/node%d/distance", i);
		putf(rel, "%s\n", row);
		snprintf(rel, sizeof rel, "devices/system/node/node%d/meminfo", i);
		/* column widths differ between lines, as across kernel versions */
		putf(rel, "Node %d MemTotal:       %d kB\nNode %d MemFree:  %d kB\nNode %d MemUsed: 1 kB\n"
		     "Node %d HugePages_Total:     0\n", i, 1048576 * (i + 1), i, 1000 + i, i, i);
		snprintf(rel, sizeof rel, "devices/system/node/node%d/hugepages/hugepages-2048kB", i);
		mkdir_rel(rel);
		if (i != cpuless) {
			snprintf(rel, sizeof rel, "devices/system/node/node%d/hugepages/hugepages-1048576kB", i);
			mkdir_rel(rel);
		}
	}
	putf("devices/system/node/has_cpu", "%s\n", hascpu);
}

static struct topology *read_ok(void)
{
	struct topology *t = malloc(sizeof *t);
	int rc = topo_read(root, t);
	ck_assert_msg(rc == 0, "topo_read: %s", strerror(-rc));
	return t;
}

static struct topology *read_ok_after_gen(void)
{
	gen_tree(4, 3);
	return read_ok();
}

static int read_rc(void)
{
	struct topology *t = malloc(sizeof *t);
	int rc = topo_read(root, t);
	free(t);
	return rc;
}

START_TEST(four_nodes_one_cpuless)
{
	struct topology *t;
	gen_tree(4, 3);
	t = read_ok();
	ck_assert_int_eq(t->n_nodes, 4);
	ck_assert_uint_eq(idset_count(&t->possible), 4);
	for (int i = 0; i < 4; i++) {
		const struct topo_node *n = &t->nodes[i];
		ck_assert_uint_eq(n->id, (unsigned)i);
		ck_assert_uint_eq(n->mem_total_kb, 1048576u * (unsigned)(i + 1));
		ck_assert_uint_eq(n->mem_free_kb, 1000u + (unsigned)i);
		ck_assert(n->has_memory);
		ck_assert_uint_eq(n->distance[i], 10);
		ck_assert_uint_eq(n->distance[(i + 1) % 4], abs(i - (i + 1) % 4) == 1 ? 20 : 30);
		ck_assert_uint_eq(n->hp_sizes_kb[0], 2048);
	}
	ck_assert(t->nodes[0].has_cpu);
	ck_assert(idset_has(&t->nodes[0].cpus, 0) && idset_has(&t->nodes[0].cpus, 1));
	ck_assert(idset_has(&t->nodes[2].cpus, 4) && idset_has(&t->nodes[2].cpus, 5));
	ck_assert_uint_eq(idset_count(&t->nodes[2].cpus), 2);
	/* the CPU-less node: an empty cpulist, not an error */
	ck_assert(!t->nodes[3].has_cpu);
	ck_assert_uint_eq(idset_count(&t->nodes[3].cpus), 0);
	ck_assert_int_eq(t->nodes[3].n_hp_sizes, 1);
	/* sizes are sorted ascending whatever readdir's order */
	ck_assert_int_eq(t->nodes[0].n_hp_sizes, 2);
	ck_assert_uint_eq(t->nodes[0].hp_sizes_kb[1], 1048576);
	ck_assert_int_eq(topo_index(t, 3), 3);
	ck_assert_int_eq(topo_index(t, 4), -1);
	free(t);
}
END_TEST

START_TEST(sparse_ids_and_derived_masks)
{
	struct topology *t;
	/* nodes 0 and 2 online out of 0-3 possible; no has_cpu / has_memory files (older kernels);
	 * node 2 has no memory and no hugepages directory */
	put("devices/system/node/possible", "0-3\n");
	put("devices/system/node/online", "0,2\n");
	put("devices/system/node/node0/cpulist", "0-1\n");
	put("devices/system/node/node0/distance", "10 21\n");
	put("devices/system/node/node0/meminfo", "Node 0 MemTotal: 2048 kB\nNode 0 MemFree: 1024 kB\n");
	put("devices/system/node/node2/cpulist", "\n");
	put("devices/system/node/node2/distance", "21 10\n");
	put("devices/system/node/node2/meminfo", "Node 2 MemTotal: 0 kB\nNode 2 MemFree: 0 kB\n");
	t = read_ok();
	ck_assert_int_eq(t->n_nodes, 2);
	ck_assert_uint_eq(t->nodes[1].id, 2);
	ck_assert_int_eq(topo_index(t, 2), 1);
	ck_assert(t->nodes[0].has_cpu && t->nodes[0].has_memory);
	ck_assert(!t->nodes[1].has_cpu && !t->nodes[1].has_memory);
	ck_assert_uint_eq(t->nodes[0].distance[1], 21);
	ck_assert_int_eq(t->nodes[1].n_hp_sizes, 0);
	ck_assert_uint_eq(idset_count(&t->possible), 4);
	free(t);
}
END_TEST

START_TEST(sixty_four_nodes_and_no_more)
{
	struct topology *t;
	gen_tree(64, 63);
	t = read_ok();
	ck_assert_int_eq(t->n_nodes, 64);
	ck_assert_uint_eq(t->nodes[63].distance[0], 30);
	ck_assert_uint_eq(t->nodes[62].distance[63], 20);
	ck_assert(!t->nodes[63].has_cpu);
	free(t);
	put("devices/system/node/online", "0-64\n");
	ck_assert_int_eq(read_rc(), -E2BIG);
}
END_TEST

START_TEST(malformed_files_are_errors)
{
	char path[PATH_MAX];

	gen_tree(4, 3);
	put("devices/system/node/node1/distance", "20 10 20\n");   /* 3 columns for 4 nodes */
	ck_assert_int_eq(read_rc(), -EINVAL);
	put("devices/system/node/node1/distance", "20 10 20 x\n");
	ck_assert_int_eq(read_rc(), -EINVAL);
	put("devices/system/node/node1/distance", "20 10 20 30\n");
	ck_assert_int_eq(read_rc(), 0);

	put("devices/system/node/node2/meminfo", "Node 2 MemFree: 5 kB\n");  /* no MemTotal */
	ck_assert_int_eq(read_rc(), -EINVAL);
	put("devices/system/node/node2/meminfo", "Node 2 MemTotal: -5 kB\nNode 2 MemFree: 5 kB\n");
	ck_assert_int_eq(read_rc(), -EINVAL);
	put("devices/system/node/node2/meminfo", "Node 2 MemTotal: 10 kB\nNode 2 MemFree: 5 kB\n");
	ck_assert_int_eq(read_rc(), 0);

	put("devices/system/node/node0/cpulist", "3-1\n");
	ck_assert_int_eq(read_rc(), -EINVAL);
	put("devices/system/node/node0/cpulist", "0-1\n");
	ck_assert_int_eq(read_rc(), 0);
	snprintf(path, sizeof path, "%s/devices/system/node/node2/meminfo", root);
	ck_assert_int_eq(unlink(path), 0);                          /* an online node's file is gone */
	ck_assert_int_eq(read_rc(), -ENOENT);
}
END_TEST

/* A launch's read: the online nodes, has_memory and (when asked) the CPU lists agree with
 * topo_read's, and the files it does not need are not read (a malformed distance, a node without
 * meminfo or hugepages directory do not fail it, as they fail topo_read). */
START_TEST(launch_read_takes_only_what_a_launch_checks)
{
	struct topology *full = read_ok_after_gen(), *t = malloc(sizeof *t);
	char path[PATH_MAX];

	ck_assert_int_eq(topo_read_nodes(root, t, true), 0);
	ck_assert_int_eq(t->n_nodes, full->n_nodes);
	for (int i = 0; i < t->n_nodes; i++) {
		ck_assert_uint_eq(t->nodes[i].id, full->nodes[i].id);
		ck_assert(t->nodes[i].has_memory == full->nodes[i].has_memory);
		ck_assert_uint_eq(idset_count(&t->nodes[i].cpus), idset_count(&full->nodes[i].cpus));
		ck_assert(idset_has(&t->nodes[i].cpus, 2 * (unsigned)i) == (i != 3));
	}
	ck_assert_int_eq(topo_read_nodes(root, t, false), 0);
	ck_assert_uint_eq(idset_count(&t->nodes[0].cpus), 0);   /* not asked for: not read */
	put("devices/system/node/node1/distance", "20 10 20\n");
	snprintf(path, sizeof path, "%s/devices/system/node/node2/meminfo", root);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(read_rc(), -EINVAL);
	ck_assert_int_eq(topo_read_nodes(root, t, true), 0);
	ck_assert_int_eq(t->n_nodes, 4);
	/* what it does read is still checked */
	put("devices/system/node/node0/cpulist", "3-1\n");
	ck_assert_int_eq(topo_read_nodes(root, t, true), -EINVAL);
	ck_assert_int_eq(topo_read_nodes(root, t, false), 0);
	put("devices/system/node/online", "0-64\n");
	ck_assert_int_eq(topo_read_nodes(root, t, false), -E2BIG);
	free(full);
	free(t);
}
END_TEST

/* Without node/has_memory (older kernels) a node's memory is its meminfo's MemTotal, as in
 * topo_read; a meminfo that does not say is an error there too. */
START_TEST(launch_read_without_has_memory_uses_meminfo)
{
	struct topology *t = malloc(sizeof *t);

	put("devices/system/node/online", "0,2\n");
	put("devices/system/node/node0/meminfo", "Node 0 MemTotal: 2048 kB\nNode 0 MemFree: 1024 kB\n");
	put("devices/system/node/node2/meminfo", "Node 2 MemTotal: 0 kB\nNode 2 MemFree: 0 kB\n");
	ck_assert_int_eq(topo_read_nodes(root, t, false), 0);
	ck_assert_int_eq(t->n_nodes, 2);
	ck_assert(t->nodes[0].has_memory);
	ck_assert(!t->nodes[1].has_memory);
	put("devices/system/node/node2/meminfo", "Node 2 MemFree: 0 kB\n");
	ck_assert_int_eq(topo_read_nodes(root, t, false), -EINVAL);
	free(t);
}
END_TEST

/* The open files of this process, and how many of them are target. */
static int open_fds(const char *target, int *to_target)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	*to_target = 0;
	while ((de = readdir(d))) {
		char link[PATH_MAX], path[PATH_MAX + 32];
		ssize_t l;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
		if ((l = readlink(path, link, sizeof link - 1)) < 0)
			continue;
		link[l] = '\0';
		n++;
		*to_target += !strcmp(link, target);
	}
	closedir(d);
	return n;
}

/* On the real /sys the launch's read holds node/online and node/has_memory: after the first read
 * no later one opens a file, and each answers what the path says now (the same as a read by path). */
START_TEST(held_read_of_sysfs_opens_nothing_again)
{
	struct topology *t = malloc(sizeof *t), *by_path = malloc(sizeof *by_path);
	struct topo_held *h = topo_held_new("/sys");
	int before, after, online, has_memory;

	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(topo_read_nodes("/sys", by_path, false), 0);
	ck_assert_int_eq(topo_read_nodes_held(h, t, false), 0);
	before = open_fds("/sys/devices/system/node/online", &online);
	ck_assert_int_eq(online, 1);
	open_fds("/sys/devices/system/node/has_memory", &has_memory);
	ck_assert_int_eq(has_memory, 1);
	for (int i = 0; i < 3; i++) {
		memset(t, 0xff, sizeof *t);
		ck_assert_int_eq(topo_read_nodes_held(h, t, i == 1), 0);
		ck_assert_int_eq(t->n_nodes, by_path->n_nodes);
		ck_assert_mem_eq(&t->online, &by_path->online, sizeof t->online);
		for (int n = 0; n < t->n_nodes; n++) {
			ck_assert_uint_eq(t->nodes[n].id, by_path->nodes[n].id);
			ck_assert(t->nodes[n].has_memory == by_path->nodes[n].has_memory);
		}
	}
	after = open_fds("/sys/devices/system/node/online", &online);
	ck_assert_int_eq(after, before);
	ck_assert_int_eq(online, 1);
	topo_held_free(h);
	free(t);
	free(by_path);
}
END_TEST

struct first_reader {
	struct topo_held *h;
	pthread_barrier_t *go;
	int rc;
};

static void *first_read(void *arg)
{
	struct first_reader *r = arg;
	struct topology *t = malloc(sizeof *t);

	pthread_barrier_wait(r->go);
	r->rc = t ? topo_read_nodes_held(r->h, t, false) : -ENOMEM;
	free(t);
	return NULL;
}

/* Eight threads make the first read at once: each is answered, and one file of each stays held
 * (the opens that lost the race are closed, none leaks). */
START_TEST(held_files_opened_once_by_racing_first_reads)
{
	enum { N = 8 };
	struct topo_held *h = topo_held_new("/sys");
	struct first_reader r[N];
	pthread_t th[N];
	pthread_barrier_t go;
	int online, has_memory, before, after;

	ck_assert_ptr_nonnull(h);
	before = open_fds("/sys/devices/system/node/online", &online);
	ck_assert_int_eq(online, 0);
	ck_assert_int_eq(pthread_barrier_init(&go, NULL, N), 0);
	for (int i = 0; i < N; i++) {
		r[i] = (struct first_reader){ .h = h, .go = &go, .rc = 1 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, first_read, &r[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(r[i].rc, 0);
	}
	pthread_barrier_destroy(&go);
	after = open_fds("/sys/devices/system/node/online", &online);
	open_fds("/sys/devices/system/node/has_memory", &has_memory);
	ck_assert_int_eq(online, 1);
	ck_assert_int_eq(has_memory, 1);
	ck_assert_int_eq(after, before + 2);
	topo_held_free(h);
	after = open_fds("/sys/devices/system/node/online", &online);
	ck_assert_int_eq(online, 0);
	ck_assert_int_eq(after, before);
}
END_TEST

/* A generated tree's files are read by path, never held: a file replaced by another (a new inode,
 * as a test's rename makes) is what the next read sees, and no file stays open. */
START_TEST(held_read_of_generated_tree_reads_by_path)
{
	struct topology *t = malloc(sizeof *t);
	struct topo_held *h;
	char tmp[PATH_MAX], path[PATH_MAX];
	int before, after, online;

	put("devices/system/node/online", "0-1\n");
	put("devices/system/node/has_memory", "0\n");
	ck_assert_ptr_nonnull(h = topo_held_new(root));
	snprintf(path, sizeof path, "%s/devices/system/node/online", root);
	before = open_fds(path, &online);
	ck_assert_int_eq(topo_read_nodes_held(h, t, false), 0);
	ck_assert_int_eq(t->n_nodes, 2);
	ck_assert(t->nodes[0].has_memory && !t->nodes[1].has_memory);
	after = open_fds(path, &online);
	ck_assert_int_eq(after, before);
	ck_assert_int_eq(online, 0);
	put("devices/system/node/online.new", "0-2\n");
	snprintf(tmp, sizeof tmp, "%s/devices/system/node/online.new", root);
	ck_assert_int_eq(rename(tmp, path), 0);
	put("devices/system/node/has_memory", "2\n");
	ck_assert_int_eq(topo_read_nodes_held(h, t, false), 0);
	ck_assert_int_eq(t->n_nodes, 3);
	ck_assert(!t->nodes[0].has_memory && t->nodes[2].has_memory);
	/* the launch's checks on what it reads hold here too */
	put("devices/system/node/online", "0-64\n");
	ck_assert_int_eq(topo_read_nodes_held(h, t, false), -E2BIG);
	topo_held_free(h);
	free(t);
}
END_TEST

START_TEST(missing_node_directory_root)
{
	ck_assert_int_eq(read_rc(), -ENOENT);
}
END_TEST

START_TEST(meminfo_lines)
{
	const char *m = "Node 1 MemTotal:        4942028 kB\nNode 1 MemFree:4 kB\nNode 1 MemUsed:   7 kB\n"
			"Node 1 HugePages_Total:     3\n";
	uint64_t v = 0;
	ck_assert_int_eq(topo_meminfo_value(m, 1, "MemTotal", &v), 0);
	ck_assert_uint_eq(v, 4942028);
	ck_assert_int_eq(topo_meminfo_value(m, 1, "MemUsed", &v), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(topo_meminfo_value(m, 1, "HugePages_Total", &v), 0);
	ck_assert_uint_eq(v, 3);
	/* "MemFree:4" is one token: not understood, so the key is absent */
	ck_assert_int_eq(topo_meminfo_value(m, 1, "MemFree", &v), -ENOENT);
	/* a prefix of a key is not the key */
	ck_assert_int_eq(topo_meminfo_value(m, 1, "Mem", &v), -ENOENT);
	/* the line must be about this node */
	ck_assert_int_eq(topo_meminfo_value(m, 2, "MemTotal", &v), -EINVAL);
	ck_assert_int_eq(topo_meminfo_value("Node 1 MemTotal: 5 MB\n", 1, "MemTotal", &v), -EINVAL);
	ck_assert_int_eq(topo_meminfo_value("", 1, "MemTotal", &v), -ENOENT);
}
END_TEST

static Suite *topology_suite(void)
{
	Suite *s = suite_create("topology");
	TCase *tc = tcase_create("sysfs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, four_nodes_one_cpuless);
	tcase_add_test(tc, sparse_ids_and_derived_masks);
	tcase_add_test(tc, sixty_four_nodes_and_no_more);
	tcase_add_test(tc, malformed_files_are_errors);
	tcase_add_test(tc, launch_read_takes_only_what_a_launch_checks);
	tcase_add_test(tc, launch_read_without_has_memory_uses_meminfo);
	tcase_add_test(tc, held_read_of_sysfs_opens_nothing_again);
	tcase_add_test(tc, held_files_opened_once_by_racing_first_reads);
	tcase_add_test(tc, held_read_of_generated_tree_reads_by_path);
	tcase_add_test(tc, missing_node_directory_root);
	tcase_add_test(tc, meminfo_lines);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(topology_suite)
