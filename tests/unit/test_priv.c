/* The privileged helper (server/priv/helper.c), forked for real over a tree generated here:
 * every malformed, out-of-set, oversized or truncated message and every field out of range is
 * refused, nothing is written, and the helper goes on answering; the valid requests act. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/parse.h"
#include "server/api/listen.h"
#include "server/fleet/nfd.h"
#include "server/kernel/knobs.h"
#include "server/priv/act.h"
#include "server/priv/helper.h"
#include "server/priv/priv.h"
#include "server/probes/typed.h"
#include "server/kernel/spawn.h"
#include "tests/unit/check_main.h"

static char root[64], sys_root[96], proc_root[96];

#include "tests/unit/tree.h"

#define THP "kernel/mm/transparent_hugepage/"
#define POOL "kernel/mm/hugepages/hugepages-2048kB/"
#define NODE0 "devices/system/node/node0/hugepages/hugepages-2048kB/"

static struct knob_catalogue *cat;

#define PROBE_SHARE_PCT 50   /* the helper's share of free memory: 2 GiB of the tree's 4 */
static char api_path[128];
static int api_fd = -1;   /* the API's listener: this process accepts on it, as the serving side does */

static void make_tree(void)
{
	struct unix_socket_id sid;

	snprintf(root, sizeof root, "/tmp/mpd-priv-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(sys_root, sizeof sys_root, "%s/sys", root);
	snprintf(proc_root, sizeof proc_root, "%s/proc", root);
	put(sys_root, THP "enabled", "always [madvise] never");
	put(sys_root, THP "khugepaged/pages_to_scan", "4096");
	put(sys_root, POOL "nr_hugepages", "0");
	put(sys_root, POOL "free_hugepages", "0");
	put(sys_root, NODE0 "nr_hugepages", "0");
	put(sys_root, "devices/system/node/online", "0");
	/* A topology for the helper's own check of probe parameters: one node, 4 GiB free. */
	put(sys_root, "devices/system/node/possible", "0");
	put(sys_root, "devices/system/node/node0/cpulist", "0");
	put(sys_root, "devices/system/node/node0/distance", "10");
	put(sys_root, "devices/system/node/node0/meminfo", "Node 0 MemTotal:       8388608 kB\nNode 0 MemFree:        4194304 kB");
	put(sys_root, "fs/cgroup/a/cpuset.mems", "");
	put(sys_root, "cpuset.mems", "");   /* outside fs/cgroup: never written */
	put(proc_root, "sys/vm/compact_memory", "0");
	put(proc_root, "4242/numa_maps", "7f0000000000 default anon=1 N0=1");
	put(proc_root, "4242/stat", "4242 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0");
	ck_assert_ptr_nonnull(cat = knobs_build(sys_root, proc_root));
	/* The helper is told of the API's listening socket, as the daemon's is: a launch carries a
	 * connection accepted on it (test_priv_identity.c plays the attacker against that). */
	snprintf(api_path, sizeof api_path, "%s/api.sock", root);
	ck_assert_int_ge(api_fd = listen_unix_socket(api_path, &sid, NULL), 0);
	struct priv_api api = { .listen_fd = api_fd, .serving_uid = (uid_t)-1 };
	ck_assert_int_eq(priv_start(cat, sys_root, proc_root, PROBE_SHARE_PCT, &api, NULL), 0);
}

/* A connection of this process (root) to the API socket: the client's end in *client, the end
 * accepted on the listener returned. */
static int accepted(int *client)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	memcpy(sa.sun_path, api_path, strlen(api_path) + 1);
	ck_assert_int_ge(*client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), 0);
	ck_assert_int_eq(connect(*client, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_ge(fd = accept4(api_fd, NULL, NULL, SOCK_CLOEXEC), 0);
	return fd;
}

static void drop_tree(void)
{
	char cmd[128];

	priv_stop();
	knobs_free(cat);
	close(api_fd);
	api_fd = -1;
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}

/* Nothing the refused messages could have reached has changed. */
static void assert_untouched(void)
{
	char buf[128];

	get(sys_root, THP "enabled", buf, sizeof buf);
	ck_assert_str_eq(buf, "always [madvise] never");
	get(sys_root, THP "khugepaged/pages_to_scan", buf, sizeof buf);
	ck_assert_str_eq(buf, "4096");
	get(sys_root, POOL "nr_hugepages", buf, sizeof buf);
	ck_assert_str_eq(buf, "0");
	get(sys_root, NODE0 "nr_hugepages", buf, sizeof buf);
	ck_assert_str_eq(buf, "0");
	get(proc_root, "sys/vm/compact_memory", buf, sizeof buf);
	ck_assert_str_eq(buf, "0");
	get(sys_root, "fs/cgroup/a/cpuset.mems", buf, sizeof buf);
	ck_assert_str_eq(buf, "");
	get(sys_root, "cpuset.mems", buf, sizeof buf);
	ck_assert_str_eq(buf, "");
}

/* The helper still answers: a valid request that writes nothing (an fd of a procfs file). */
static void assert_alive(void)
{
	int fd = priv_proc_open(4242, PROC_NUMA_MAPS);
	char buf[16] = { 0 };

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, 12), 12);
	ck_assert_str_eq(buf, "7f0000000000");
	close(fd);
}

static size_t knob_index(const char *name)
{
	for (size_t i = 0; i < knobs_count(cat); i++)
		if (!strcmp(knobs_at(cat, i)->name, name))
			return i;
	ck_abort_msg("no knob %s", name);
	return 0;
}

static struct priv_hdr hdr(uint32_t type, uint32_t len)
{
	return (struct priv_hdr){ .magic = PRIV_MAGIC, .type = type, .len = len };
}

static long send_raw_fd(void *msg, size_t len, int send_fd)
{
	struct priv_reply rep;
	int fd, rc = priv_exchange(msg, len, send_fd, &rep, &fd);

	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(fd, -1);
	return (long)rep.rc;
}

static long send_raw(void *msg, size_t len)
{
	return send_raw_fd(msg, len, -1);
}

START_TEST(malformed_messages_are_refused)
{
	_Alignas(8) unsigned char big[PRIV_MSG_MAX + 64];
	struct priv_knob_write kw = { .h = hdr(PRIV_KNOB_WRITE, sizeof kw) };
	struct priv_hdr h;

	make_tree();
	kw.index = (uint32_t)knob_index("thp.enabled");
	memcpy(kw.value, "never", 6);
	/* A header alone, and less than a header. */
	h = hdr(PRIV_KNOB_WRITE, sizeof h);
	ck_assert_int_eq(send_raw(&h, sizeof h), -EBADMSG);
	ck_assert_int_eq(send_raw(&h, 5), -EBADMSG);
	/* The valid knob message truncated by one byte, with len claiming the full size or the short one. */
	ck_assert_int_eq(send_raw(&kw, sizeof kw - 1), -EBADMSG);
	kw.h.len = sizeof kw - 1;
	ck_assert_int_eq(send_raw(&kw, sizeof kw - 1), -EBADMSG);
	/* Oversized: the valid message with bytes after it, and a datagram larger than any buffer. */
	memset(big, 0, sizeof big);
	kw.h.len = sizeof kw;
	memcpy(big, &kw, sizeof kw);
	ck_assert_int_eq(send_raw(big, sizeof kw + 8), -EBADMSG);
	((struct priv_hdr *)big)->len = sizeof big;
	ck_assert_int_eq(send_raw(big, sizeof big), -EBADMSG);
	/* Out of the set: type 0, one past the last, the top value; a wrong magic. */
	kw.h.type = 0;
	ck_assert_int_eq(send_raw(&kw, sizeof kw), -EBADMSG);
	kw.h.type = PRIV_TYPE_END;
	ck_assert_int_eq(send_raw(&kw, sizeof kw), -EBADMSG);
	kw.h.type = 0xffffffffu;
	ck_assert_int_eq(send_raw(&kw, sizeof kw), -EBADMSG);
	kw.h = hdr(PRIV_KNOB_WRITE, sizeof kw);
	kw.h.magic ^= 1;
	ck_assert_int_eq(send_raw(&kw, sizeof kw), -EBADMSG);
	/* A knob message of another type's size. */
	kw.h = hdr(PRIV_COMPACT, sizeof kw);
	ck_assert_int_eq(send_raw(&kw, sizeof kw), -EBADMSG);
	assert_untouched();
	assert_alive();
	drop_tree();
}
END_TEST

START_TEST(fields_out_of_range_are_refused)
{
	struct priv_knob_write kw = { .h = hdr(PRIV_KNOB_WRITE, sizeof kw) };
	struct priv_pool pw = { .h = hdr(PRIV_POOL_WRITE, sizeof pw), .size_kb = 2048, .node = -1, .count = 1 };
	struct priv_proc_open po = { .h = hdr(PRIV_PROC_OPEN, sizeof po), .pid = 4242, .file = PROC_NUMA_MAPS };
	struct priv_migrate mg = { .h = hdr(PRIV_MIGRATE, sizeof mg), .pid = 4242, .start_time = 777, .maxnode = 2 };

	make_tree();
	/* Knobs: an index past the catalogue, a value without its NUL, a value not in the kernel's
	 * list, an integer past the knob's range, text where a number goes. */
	kw.index = (uint32_t)knobs_count(cat);
	memcpy(kw.value, "never", 6);
	ck_assert_int_eq(send_raw(&kw, sizeof kw), -EINVAL);
	kw.index = (uint32_t)knob_index("thp.enabled");
	memset(kw.value, 'a', sizeof kw.value);
	ck_assert_int_eq(send_raw(&kw, sizeof kw), -EINVAL);
	memset(kw.value, 0, sizeof kw.value);
	memcpy(kw.value, "sometimes", 10);
	ck_assert_int_eq(send_raw(&kw, sizeof kw), -EINVAL);
	memcpy(kw.value, "never\n/etc", 11);
	ck_assert_int_eq(send_raw(&kw, sizeof kw), -EINVAL);
	kw.index = (uint32_t)knob_index("thp.khugepaged.pages_to_scan");
	memset(kw.value, 0, sizeof kw.value);
	memcpy(kw.value, "99999999999999999999", 21);
	ck_assert_int_eq(send_raw(&kw, sizeof kw), -EINVAL);
	memcpy(kw.value, "-1", 3);
	ck_assert_int_eq(send_raw(&kw, sizeof kw), -EINVAL);
	/* Pools: a size the kernel lacks, a node without the pool, a negative node, a count past
	 * INT64_MAX, a non-zero pad. */
	pw.size_kb = 1048576;
	ck_assert_int_eq(send_raw(&pw, sizeof pw), -EINVAL);
	pw.size_kb = 2048;
	pw.node = 1;
	ck_assert_int_eq(send_raw(&pw, sizeof pw), -EINVAL);
	pw.node = -2;
	ck_assert_int_eq(send_raw(&pw, sizeof pw), -EINVAL);
	pw.node = 0;
	pw.count = (uint64_t)INT64_MAX + 1;
	ck_assert_int_eq(send_raw(&pw, sizeof pw), -EINVAL);
	pw.count = 1;
	pw.pad = 1;
	ck_assert_int_eq(send_raw(&pw, sizeof pw), -EINVAL);
	pw.pad = 0;
	/* Runs of steps: the same pool checks, then no step, more steps than a reply holds, from ==
	 * goal, a goal or start past INT64_MAX, batch 0, a negative or too long budget. Each is
	 * refused with no step done. */
	{
		struct priv_pool_run pr = { .h = hdr(PRIV_POOL_RUN, sizeof pr), .size_kb = 1048576, .node = -1,
					    .max_steps = 4, .from = 0, .goal = 8, .batch = 2, .budget_ns = 1000000 };
		struct { uint64_t *field; uint64_t bad, good; } cases[] = {
			{ &pr.size_kb, 1048576, 2048 },
			{ (uint64_t *)&pr.budget_ns, (uint64_t)-1, 1000000 },
			{ (uint64_t *)&pr.budget_ns, PRIV_RUN_BUDGET_MAX + 1, 1000000 },
			{ &pr.from, 8, 0 },
			{ &pr.goal, (uint64_t)INT64_MAX + 1, 8 },
			{ &pr.from, (uint64_t)INT64_MAX + 1, 0 },
			{ &pr.batch, 0, 2 },
		};
		struct priv_reply rep;
		int fd;
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
			*cases[i].field = cases[i].bad;
			ck_assert_int_eq(priv_exchange(&pr, sizeof pr, -1, &rep, &fd), 0);
			ck_assert_int_eq(rep.rc, -EINVAL);
			ck_assert_uint_eq(rep.nsteps, 0);
			*cases[i].field = cases[i].good;
		}
		pr.node = 1;
		ck_assert_int_eq(send_raw(&pr, sizeof pr), -EINVAL);
		pr.node = 0;
		pr.max_steps = 0;
		ck_assert_int_eq(send_raw(&pr, sizeof pr), -EINVAL);
		pr.max_steps = HTLB_RUN_MAX + 1;
		ck_assert_int_eq(send_raw(&pr, sizeof pr), -EINVAL);
	}
	/* procfs: pid 0, negative, past pid_max; a file outside the enum. */
	po.pid = 0;
	ck_assert_int_eq(send_raw(&po, sizeof po), -EINVAL);
	po.pid = -1;
	ck_assert_int_eq(send_raw(&po, sizeof po), -EINVAL);
	po.pid = 4194305;
	ck_assert_int_eq(send_raw(&po, sizeof po), -EINVAL);
	po.pid = 4242;
	po.file = PROC_FILE_END;
	ck_assert_int_eq(send_raw(&po, sizeof po), -EINVAL);
	/* migrate: no start time, maxnode 0 and past the mask, a node bit at maxnode - 1, a start
	 * time that is not the process's (a reused pid). */
	mg.start_time = 0;
	ck_assert_int_eq(send_raw(&mg, sizeof mg), -EINVAL);
	mg.start_time = 777;
	mg.maxnode = 0;
	ck_assert_int_eq(send_raw(&mg, sizeof mg), -EINVAL);
	mg.maxnode = 4098;
	ck_assert_int_eq(send_raw(&mg, sizeof mg), -EINVAL);
	mg.maxnode = 2;
	mg.to[0] = 2;
	ck_assert_int_eq(send_raw(&mg, sizeof mg), -EINVAL);
	mg.to[0] = 1;
	mg.start_time = 778;
	ck_assert_int_eq(send_raw(&mg, sizeof mg), -ESTALE);
	/* collapse: no pidfd with it, an fd that is not a pidfd, a range not page-aligned, empty, past
	 * the user address space; and a pidfd sent with a request that takes none. */
	{
		struct priv_collapse co = { .h = hdr(PRIV_COLLAPSE, sizeof co), .start = 0x200000, .len = 0x200000 };
		int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0), file = open("/dev/null", O_RDONLY);
		ck_assert_int_ge(pidfd, 0);
		ck_assert_int_eq(send_raw(&co, sizeof co), -EINVAL);
		ck_assert_int_eq(send_raw_fd(&co, sizeof co, file), -EINVAL);
		co.start = 0x200001;
		ck_assert_int_eq(send_raw_fd(&co, sizeof co, pidfd), -EINVAL);
		co.start = 0x200000;
		co.len = 0;
		ck_assert_int_eq(send_raw_fd(&co, sizeof co, pidfd), -EINVAL);
		co.start = 1ULL << 57;
		co.len = 4096;
		ck_assert_int_eq(send_raw_fd(&co, sizeof co, pidfd), -EINVAL);
		co.start = (1ULL << 57) - 4096;
		co.len = 8192;
		ck_assert_int_eq(send_raw_fd(&co, sizeof co, pidfd), -EINVAL);
		po.file = PROC_NUMA_MAPS;
		ck_assert_int_eq(send_raw_fd(&po, sizeof po, pidfd), -EBADMSG);
		close(pidfd);
		close(file);
	}
	/* cpuset.mems: no directory with it, a file, a directory outside the tree's cgroup mount. */
	{
		struct priv_cg_mems cm = { .h = hdr(PRIV_CG_MEMS, sizeof cm), .nodes = { 1 } };
		int file = open("/dev/null", O_RDONLY), tmp = open("/tmp", O_RDONLY | O_DIRECTORY),
		    outside = open(sys_root, O_RDONLY | O_DIRECTORY);
		ck_assert_int_eq(send_raw(&cm, sizeof cm), -EINVAL);
		ck_assert_int_eq(send_raw_fd(&cm, sizeof cm, file), -EINVAL);
		ck_assert_int_eq(send_raw_fd(&cm, sizeof cm, tmp), -EINVAL);
		ck_assert_int_eq(send_raw_fd(&cm, sizeof cm, outside), -EINVAL);
		close(file);
		close(tmp);
		close(outside);
	}
	assert_untouched();
	assert_alive();
	drop_tree();
}
END_TEST

/* A knob_writes message whose entries 0 .. n-1 are (knob, value) pairs, the rest zero. */
static void knob_batch(struct priv_knob_writes *m, uint32_t n, const char *const *names, const char *const *values)
{
	memset(m, 0, sizeof *m);
	m->h = hdr(PRIV_KNOB_WRITES, sizeof *m);
	m->n = n;
	for (uint32_t i = 0; i < n; i++) {
		m->e[i].index = (uint32_t)knob_index(names[i]);
		memcpy(m->e[i].value, values[i], strlen(values[i]) + 1);
	}
}

/* What a compromised serving side could put in a batch of knob writes: each is refused whole,
 * with nothing written — a hostile entry after a valid one included, since every entry is checked
 * before the first write — and the helper goes on answering. Then a valid batch writes in order
 * and answers each entry's result. */
START_TEST(hostile_knob_writes_write_nothing)
{
	static const char *const two[] = { "thp.enabled", "thp.khugepaged.pages_to_scan" };
	static const char *const ok[] = { "never", "8" };
	struct priv_knob_writes m;
	struct priv_reply rep;
	char buf[128];
	int fd;

	make_tree();
	/* The count: none, one past the batch, the top value; a non-zero pad. */
	knob_batch(&m, 2, two, ok);
	m.n = 0;
	ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	m.n = PRIV_KNOB_BATCH + 1;
	ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	m.n = 0xffffffffu;
	ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	knob_batch(&m, 2, two, ok);
	m.pad = 1;
	ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	/* An entry past the count that is not zero (a value hidden behind n). */
	knob_batch(&m, 1, two, ok);
	m.e[1].index = (uint32_t)knob_index("thp.khugepaged.pages_to_scan");
	ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	knob_batch(&m, 1, two, ok);
	m.e[PRIV_KNOB_BATCH - 1].value[0] = 'x';
	ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	/* The second entry hostile, the first valid: an index past the catalogue, a value without its
	 * NUL, one not in the kernel's list, one with a path after a newline, a number past the
	 * knob's range or negative, an entry's pad set. */
	knob_batch(&m, 2, two, ok);
	m.e[1].index = (uint32_t)knobs_count(cat);
	ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	knob_batch(&m, 2, two, ok);
	memset(m.e[1].value, '9', sizeof m.e[1].value);
	ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	{
		static const char *const bad[] = { "99999999999999999999", "-1", "8\n/etc/passwd" };
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			const char *vals[] = { "never", bad[i] };
			knob_batch(&m, 2, two, vals);
			ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
		}
	}
	{
		static const char *const en[] = { "thp.khugepaged.pages_to_scan", "thp.enabled" };
		static const char *const vals[] = { "8", "sometimes" };
		knob_batch(&m, 2, en, vals);
		ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
		static const char *const vals2[] = { "8", "never\n/etc" };
		knob_batch(&m, 2, en, vals2);
		ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	}
	knob_batch(&m, 2, two, ok);
	m.e[1].pad = 1;
	ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	/* Truncated, and of another type's size. */
	knob_batch(&m, 2, two, ok);
	ck_assert_int_eq(send_raw(&m, sizeof m - 1), -EBADMSG);
	m.h.len = sizeof(struct priv_knob_write);
	ck_assert_int_eq(send_raw(&m, sizeof(struct priv_knob_write)), -EBADMSG);
	assert_untouched();
	assert_alive();

	/* Valid: both written in order, each read back, each one's result answered. */
	knob_batch(&m, 2, two, ok);
	ck_assert_int_eq(priv_exchange(&m, sizeof m, -1, &rep, &fd), 0);
	ck_assert_int_eq(rep.rc, 0);
	ck_assert_uint_eq(rep.value, 2);
	ck_assert_int_eq(rep.knob_rc[0], 0);
	ck_assert_int_eq(rep.knob_rc[1], 0);
	get(sys_root, THP "enabled", buf, sizeof buf);
	ck_assert_str_eq(buf, "always madvise [never]");
	get(sys_root, THP "khugepaged/pages_to_scan", buf, sizeof buf);
	ck_assert_str_eq(buf, "8");
	drop_tree();
}
END_TEST

/* The same requests, valid, act: so the refusals above are the checks, not a helper that does nothing. */
START_TEST(valid_requests_act)
{
	const struct knob *k;
	char buf[128];

	make_tree();
	ck_assert_ptr_nonnull(k = knobs_find(cat, "thp.enabled"));
	ck_assert_int_eq(act_knob_write(cat, k, "never"), 0);   /* through the facade: priv_active() */
	get(sys_root, THP "enabled", buf, sizeof buf);
	ck_assert_str_eq(buf, "always madvise [never]");
	ck_assert_int_eq(priv_pool_write(2048, 0, 3), 0);
	get(sys_root, NODE0 "nr_hugepages", buf, sizeof buf);
	ck_assert_str_eq(buf, "3");
	{
		/* A run: 0 -> 7 by 3, back to back: 3, 6, 7, each timed; then a run cut at two steps. */
		struct htlb_step st[HTLB_RUN_MAX];
		unsigned n = 99;
		ck_assert_int_eq(priv_pool_run(2048, -1, 0, 7, 3, HTLB_RUN_MAX, 1000000000, st, &n), 0);
		ck_assert_uint_eq(n, 3);
		ck_assert_uint_eq(st[0].written, 3);
		ck_assert_uint_eq(st[1].after, 6);
		ck_assert_uint_eq(st[2].written, 7);
		ck_assert_uint_eq(st[2].after, 7);
		for (unsigned i = 0; i < n; i++) {
			ck_assert_int_ge(st[i].elapsed_ns, 0);
			ck_assert_int_gt(st[i].started_ns, 0);
		}
		get(sys_root, POOL "nr_hugepages", buf, sizeof buf);
		ck_assert_str_eq(buf, "7");
		ck_assert_int_eq(priv_pool_run(2048, -1, 7, 1, 1, 2, 1000000000, st, &n), 0);
		ck_assert_uint_eq(n, 2);
		ck_assert_uint_eq(st[0].written, 6);
		ck_assert_uint_eq(st[1].after, 5);
	}
	ck_assert_int_eq(priv_compact(), 0);
	get(proc_root, "sys/vm/compact_memory", buf, sizeof buf);
	ck_assert_str_eq(buf, "1");
	ck_assert_int_eq(priv_proc_open(4243, PROC_NUMA_MAPS), -ENOENT);
	{
		char dir[PATH_MAX];
		int dfd;
		snprintf(dir, sizeof dir, "%s/fs/cgroup/a", sys_root);
		ck_assert_int_ge(dfd = open(dir, O_RDONLY | O_DIRECTORY), 0);
		ck_assert_int_eq(priv_cg_mems(dfd, "0-1,3"), 0);
		close(dfd);
		get(sys_root, "fs/cgroup/a/cpuset.mems", buf, sizeof buf);
		ck_assert_str_eq(buf, "0-1,3");
	}
	assert_alive();
	drop_tree();
}
END_TEST

static void *compact_thread(void *arg)
{
	*(int *)arg = priv_compact();
	return NULL;
}

/* The first line of /proc/HELPER/task/TID/NAME into buf ("" when unreadable). */
static void task_file(const char *tid, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof path, "/proc/%d/task/%s/%s", (int)priv_helper_pid(), tid, name);
	if ((f = fopen(path, "r"))) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
}

/* Whether a thread of the helper sleeps in the kernel's wait for a FIFO's reader (its wchan; where
 * the kernel shows none, an openat(2) in sleep): the compaction request has reached the helper and
 * blocks there. Waits for that, at most 3 s (within Check's 4 s for the test). */
static bool helper_waits_for_a_fifo_reader(void)
{
	for (int tries = 0; tries < 300; tries++) {
		char dir[64];
		struct dirent *t;
		bool found = false;
		DIR *d;

		snprintf(dir, sizeof dir, "/proc/%d/task", (int)priv_helper_pid());
		ck_assert_ptr_nonnull(d = opendir(dir));
		while (!found && (t = readdir(d))) {
			char wchan[64], sys[64], stat[256];

			if (t->d_name[0] == '.')
				continue;
			task_file(t->d_name, "wchan", wchan, sizeof wchan);
			task_file(t->d_name, "syscall", sys, sizeof sys);
			task_file(t->d_name, "stat", stat, sizeof stat);
			found = !strcmp(wchan, "wait_for_partner") ||
				((!wchan[0] || !strcmp(wchan, "0")) && !strncmp(sys, "257 ", 4) && strstr(stat, ") S "));
		}
		closedir(d);
		if (found)
			return true;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	return false;
}

/* A request that blocks in the kernel holds up only its own channel: compact_memory is a FIFO
 * nobody reads, so the compaction write blocks in open(2) until the test opens it. */
START_TEST(a_blocked_request_holds_up_only_its_channel)
{
	char path[PATH_MAX], buf[128];
	pthread_t th;
	int rc = 1, rd;

	make_tree();
	snprintf(path, sizeof path, "%s/sys/vm/compact_memory", proc_root);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, compact_thread, &rc), 0);
	/* Known to be in the helper, held there by the kernel, before the others are sent. */
	ck_assert(helper_waits_for_a_fifo_reader());
	ck_assert_int_eq(__atomic_load_n(&rc, __ATOMIC_SEQ_CST), 1);
	for (int i = 0; i < 2 * PRIV_CHANNELS; i++)
		ck_assert_int_eq(priv_pool_write(2048, 0, (uint64_t)i), 0);
	get(sys_root, NODE0 "nr_hugepages", buf, sizeof buf);
	{
		uint64_t last;
		ck_assert_int_eq(parse_u64(buf, &last), 0);
		ck_assert_uint_eq(last, 2 * PRIV_CHANNELS - 1);
	}
	assert_alive();
	ck_assert_int_ge(rd = open(path, O_RDONLY | O_NONBLOCK), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(rc, 0);
	close(rd);
	drop_tree();
}
END_TEST

/* Fail closed. A zero-length datagram cannot be told from EOF: it ends the helper (EOF on any
 * channel is a serving side gone or broken), and the serving side, seeing EPIPE, takes the helper
 * for lost: every request after fails with EPIPE at once, sent to nobody and never waited on. */
START_TEST(a_dead_channel_loses_the_helper)
{
	struct priv_reply rep;
	const char *name = NULL;
	uint64_t sent;
	int fd;

	make_tree();
	ck_assert(!priv_lost());
	ck_assert_int_eq(priv_pool_write(2048, 0, 1), 0);
	sent = priv_requests_sent(PRIV_POOL_WRITE, &name);
	ck_assert_str_eq(name, "pool_write");
	ck_assert_uint_eq(sent, 1);
	ck_assert_int_eq(priv_exchange("", 0, -1, &rep, &fd), -EPIPE);
	ck_assert(priv_lost());
	for (int i = 0; i < 2 * PRIV_CHANNELS; i++)
		ck_assert_int_eq(priv_pool_write(2048, 0, (uint64_t)i), -EPIPE);
	ck_assert_uint_eq(priv_requests_sent(PRIV_POOL_WRITE, &name), sent);   /* none was sent */
	ck_assert_int_eq(priv_proc_open(4242, PROC_NUMA_MAPS), -EPIPE);
	drop_tree();
}
END_TEST

/* ---- PRIV_SPAWN / PRIV_REAP ------------------------------------------------------------------ */

/* A spawn of argv (NULL-terminated) with cwd "/", as uid/gid, packed as the daemon packs it. */
static struct priv_spawn *spawn_msg(const char *const *argv, uid_t uid, gid_t gid)
{
	struct priv_spawn *m = calloc(1, sizeof *m);

	ck_assert_ptr_nonnull(m);
	m->h = hdr(PRIV_SPAWN, sizeof *m);
	m->uid = uid;
	m->gid = gid;
	for (; argv[m->argc]; m->argc++) {
		memcpy(m->data + m->data_len, argv[m->argc], strlen(argv[m->argc]) + 1);
		m->data_len += (uint32_t)strlen(argv[m->argc]) + 1;
	}
	memcpy(m->data + m->data_len, "/", 2);
	m->data_len += 2;
	return m;
}

/* Every spawn below would run "touch <marker>": none may have, so nothing was started. */
static char marker[PATH_MAX];

START_TEST(malformed_spawns_are_refused)
{
	const char *argv[] = { "/usr/bin/touch", marker, NULL };
	struct priv_spawn *m;
	int sv[2], pfd[2], udp, client;
	struct priv_reap rp = { .h = hdr(PRIV_REAP, sizeof rp), .pid = 1 };

	make_tree();
	snprintf(marker, sizeof marker, "%s/spawned", root);
	/* Every malformed launch below names a live root client's connection: only the message is
	 * wrong. Who may be whom: test_priv_identity.c. */
	sv[0] = accepted(&client);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pfd), 0);
	sv[1] = pfd[0];
	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_ge(udp = socket(AF_INET, SOCK_DGRAM, 0), 0);
	m = spawn_msg(argv, 0, 0);
	/* No connection with it, a pipe, an Internet socket, a socket not accepted on the API
	 * socket: no identity to take. */
	ck_assert_int_eq(send_raw(m, sizeof *m), -EBADF);
	ck_assert_int_eq(send_raw_fd(m, sizeof *m, pfd[0]), -ENOTSOCK);
	ck_assert_int_eq(send_raw_fd(m, sizeof *m, udp), -EAFNOSUPPORT);
	ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[1]), -EPERM);
	free(m);
	/* Oversized counts. */
	m = spawn_msg(argv, 0, 0);
	m->argc = PRIV_SPAWN_ARGS + 1;
	ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EINVAL);
	m->argc = 2;
	m->envc = PRIV_SPAWN_ARGS + 1;
	ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EINVAL);
	m->envc = 0;
	m->ngroups = PRIV_SPAWN_GROUPS + 1;
	ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EINVAL);
	m->ngroups = 0;
	m->data_len = PRIV_SPAWN_DATA + 1;
	ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EINVAL);
	m->data_len = 0;
	ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EINVAL);
	free(m);
	/* Counts that do not add up: one string more than the data holds, one fewer (a string left
	 * over after the cwd), a data_len that cuts the last string short. */
	m = spawn_msg(argv, 0, 0);
	m->argc = 3;
	ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EBADMSG);
	m->argc = 1;
	ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EBADMSG);
	m->argc = 2;
	m->data_len--;
	ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EBADMSG);
	m->data_len++;
	/* An env entry without '=', a relative cwd, an empty program. */
	m->envc = 1;
	ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EBADMSG);   /* the cwd becomes the env entry */
	free(m);
	{
		const char *rel[] = { "/usr/bin/touch", marker, NULL };
		m = spawn_msg(rel, 0, 0);
		m->data[m->data_len - 2] = '.';
		ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EINVAL);
		free(m);
		const char *empty[] = { "", marker, NULL };
		m = spawn_msg(empty, 0, 0);
		ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EINVAL);
		m->data[0] = 'x';
		m->thp = SPAWN_THP_EXCEPT_ADVISED + 1;
		ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EINVAL);
		m->thp = 0;
		m->maxnode = IDSET_MAX + 2;
		ck_assert_int_eq(send_raw_fd(m, sizeof *m, sv[0]), -EINVAL);
		free(m);
	}
	/* A spawn short by a byte: the generic size check. */
	m = spawn_msg(argv, 0, 0);
	ck_assert_int_eq(send_raw_fd(m, sizeof *m - 1, sv[0]), -EBADMSG);
	free(m);
	/* A probe start: no pipe, the pipe's read end, a socket; a kind past the table; a pass past
	 * any plan (the typed parameters: hostile_typed_probe_parameters_start_nothing). Then killing
	 * what the helper did not start. */
	{
		struct priv_probe_start *ps = calloc(1, sizeof *ps);
		struct priv_kill k = { .h = hdr(PRIV_KILL, sizeof k), .pid = 1 };
		ck_assert_ptr_nonnull(ps);
		ps->h = hdr(PRIV_PROBE_START, sizeof *ps);
		ps->params.leaf.touch.size = 4096;
		ck_assert_int_eq(send_raw(ps, sizeof *ps), -EBADF);
		ck_assert_int_eq(send_raw_fd(ps, sizeof *ps, pfd[0]), -EINVAL);
		ck_assert_int_eq(send_raw_fd(ps, sizeof *ps, sv[0]), -EINVAL);
		ps->kind = 1000;
		ck_assert_int_eq(send_raw_fd(ps, sizeof *ps, pfd[1]), -EINVAL);
		ps->kind = 0;
		ps->pass = PROBE_MAX_PASSES;
		ck_assert_int_eq(send_raw_fd(ps, sizeof *ps, pfd[1]), -EINVAL);
		free(ps);
		ck_assert_int_eq(send_raw(&k, sizeof k), -ECHILD);
	}
	/* Reaping what the helper did not start: init, a pid of nothing. */
	ck_assert_int_eq(send_raw(&rp, sizeof rp), -ECHILD);
	rp.pid = 0;
	ck_assert_int_eq(send_raw(&rp, sizeof rp), -EINVAL);
	/* Every launch was refused, so none was started: nothing to wait for. */
	ck_assert_int_eq(access(marker, F_OK), -1);
	close(sv[0]);
	close(sv[1]);
	close(client);
	close(pfd[0]);
	close(pfd[1]);
	close(udp);
	assert_untouched();
	assert_alive();
	drop_tree();
}
END_TEST

/* The helper has no child (none was started, or all were collected). */
static void assert_helper_childless(void)
{
	char dir[64];
	struct dirent *t;
	DIR *d;

	snprintf(dir, sizeof dir, "/proc/%d/task", (int)priv_helper_pid());
	ck_assert_ptr_nonnull(d = opendir(dir));
	while ((t = readdir(d))) {
		char kids[256];
		if (t->d_name[0] == '.')
			continue;
		task_file(t->d_name, "children", kids, sizeof kids);
		ck_assert_msg(!kids[0], "the helper's thread %s has children: %s", t->d_name, kids);
	}
	closedir(d);
}

/* A probe start of kind with params, pass 0, policy as given: the answer's rc, and its step in *step. */
static long probe_start(unsigned kind, const union probe_params *params, unsigned pass, int32_t policy, int pipe_w,
			uint64_t *step)
{
	struct priv_probe_start *ps = calloc(1, sizeof *ps);   /* owned */
	struct priv_reply rep;
	int fd;

	ck_assert_ptr_nonnull(ps);
	ps->h = hdr(PRIV_PROBE_START, sizeof *ps);
	ps->kind = kind;
	ps->pass = pass;
	ps->params = *params;
	ps->set_policy = policy != 0;
	ps->policy = policy;
	ck_assert_int_eq(priv_exchange(ps, sizeof *ps, pipe_w, &rep, &fd), 0);
	ck_assert_int_eq(fd, -1);
	free(ps);
	*step = rep.value;
	return (long)rep.rc;
}

static unsigned kind_index(const char *name)
{
	for (unsigned i = 0; i < probe_nkinds; i++)
		if (!strcmp(probe_kinds[i]->name, name))
			return i;
	ck_abort_msg("no probe kind %s", name);
	return 0;
}

/* What a compromised serving side could send as a probe's typed parameters: each is refused by the
 * helper's own run of the kind's parser (the serving side's limits) or its share of the free
 * memory it reads itself, before anything is forked: the answer names no step (SPAWN_OK) and the
 * helper has no child. A start within the limits does get as far as the child's set-up (refused
 * there on purpose by a policy the kernel does not know, so that nothing is exec'd). */
START_TEST(hostile_typed_probe_parameters_start_nothing)
{
	const unsigned touch = kind_index("touch"), frag = kind_index("fragment"), thp = kind_index("thp-fault");
	union probe_params p;
	uint64_t step;
	int pfd[2];

	make_tree();
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
#define REFUSED(kind, want)                                                                   \
	do {                                                                                  \
		ck_assert_int_eq(probe_start((kind), &p, 0, 0, pfd[1], &step), (want));       \
		ck_assert_uint_eq(step, SPAWN_OK);   /* no step of a start was taken */       \
		assert_helper_childless();                                                    \
	} while (0)
	/* touch: out of range, not whole pages, more than the share (3 GiB of the 2 allowed), a THP
	 * mode that does not exist, more passes than a probe has. */
	memset(&p, 0, sizeof p);
	p.leaf.touch.size = 1ULL << 41;
	REFUSED(touch, -EINVAL);
	p.leaf.touch.size = 4097;
	REFUSED(touch, -EINVAL);
	p.leaf.touch.size = 3ULL << 30;
	REFUSED(touch, -E2BIG);
	p.leaf.touch.size = 4096;
	p.leaf.touch.nthp = 1;
	p.leaf.touch.thp[0] = 7;
	REFUSED(touch, -EINVAL);
	p.leaf.touch.thp[0] = 0;
	p.leaf.touch.nthp = PROBE_MAX_PASSES + 1;
	REFUSED(touch, -EINVAL);
	/* thp-fault with neither loops nor a duration (loops 0 is out of its range). */
	memset(&p, 0, sizeof p);
	p.leaf.thp_fault.size_mib = 64;
	REFUSED(thp, -EINVAL);
	/* fragment: a share of the node above its limit, and fragment inside itself. */
	memset(&p, 0, sizeof p);
	p.fragment.own = (struct fragment_params){ .node = 0, .share_pct = 99, .max_mib = 64 };
	p.fragment.inner_kind = (uint32_t)probe_nkinds;
	REFUSED(frag, -EINVAL);
	p.fragment.own.share_pct = 50;
	p.fragment.inner_kind = frag;
	REFUSED(frag, -EINVAL);
	/* A kind past the table (refused by the check before the parameters are looked at), and pass
	 * 1 of touch's single pass. */
	memset(&p, 0, sizeof p);
	p.leaf.touch.size = 4096;
	REFUSED((unsigned)probe_nkinds, -EINVAL);
	ck_assert_int_eq(probe_start(touch, &p, 1, 0, pfd[1], &step), -EINVAL);
	ck_assert_uint_eq(step, SPAWN_OK);
	/* Within every limit: the child is forked, and its set-up stops at the policy. */
	ck_assert_int_eq(probe_start(touch, &p, 0, 0x7ff, pfd[1], &step), -EINVAL);
	ck_assert_uint_eq(step, SPAWN_POLICY);
	assert_helper_childless();
#undef REFUSED
	close(pfd[0]);
	close(pfd[1]);
	assert_alive();
	drop_tree();
}
END_TEST

/* A valid spawn runs, as the connection's client, and its exit status comes back through PRIV_REAP. */
START_TEST(spawn_runs_and_reaps_through_the_helper)
{
	char *argv[] = { "/bin/sh", "-c", "touch \"$M\"; exit 7", NULL };
	char env_m[PATH_MAX + 2];
	char *envp[] = { env_m, NULL };
	int sv[2], st = -1;
	enum spawn_step step;
	pid_t pid;

	make_tree();
	snprintf(marker, sizeof marker, "%s/spawned", root);
	snprintf(env_m, sizeof env_m, "M=%s", marker);
	sv[0] = accepted(&sv[1]);
	struct spawn_spec s = { .argv = argv, .envp = envp, .cwd = "/", .uid = getuid(), .gid = getgid(),
				.peer_fd = sv[0] };
	ck_assert(priv_active());
	ck_assert_int_gt(pid = act_spawn(&s, &step), 0);
	ck_assert_int_eq(act_reap(pid, &st, false), 0);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 7);
	ck_assert_int_eq(access(marker, F_OK), 0);
	/* The helper's child, not ours: collected once, by the helper. */
	ck_assert_int_eq(act_reap(pid, &st, true), -ECHILD);
	ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), -1);
	/* A child still running is killed through the helper, and collected as killed. */
	argv[2] = "sleep 30";
	ck_assert_int_gt(pid = act_spawn(&s, &step), 0);
	ck_assert_int_eq(act_reap(pid, &st, true), -EAGAIN);
	ck_assert_int_eq(act_kill(pid), 0);
	ck_assert_int_eq(act_reap(pid, &st, false), 0);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	ck_assert_int_eq(act_kill(pid), -ECHILD);
	/* A program that is not there fails at exec, with the step. */
	argv[0] = "/nonexistent/program";
	ck_assert_int_eq(act_spawn(&s, &step), -ENOENT);
	ck_assert_int_eq(step, SPAWN_EXEC);
	close(sv[0]);
	close(sv[1]);
	unlink(marker);
	assert_alive();
	drop_tree();
}
END_TEST

/* PRIV_REAP carries the child's wait4 usage (an experiment's round of a program is measured from
 * it): a program that spins and faults has user time and minor faults, and its exit status. */
START_TEST(reap_through_the_helper_gives_the_usage)
{
	char *argv[] = { "/bin/sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; exit 3", NULL };
	char *envp[] = { NULL };
	struct rusage ru;
	int sv[2], st = -1;
	enum spawn_step step;
	pid_t pid;

	make_tree();
	sv[0] = accepted(&sv[1]);
	struct spawn_spec s = { .argv = argv, .envp = envp, .cwd = "/", .uid = getuid(), .gid = getgid(),
				.peer_fd = sv[0] };
	ck_assert(priv_active());
	ck_assert_int_gt(pid = act_spawn(&s, &step), 0);
	memset(&ru, 0xff, sizeof ru);
	ck_assert_int_eq(act_reap_usage(pid, &st, &ru), 0);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 3);
	ck_assert_int_gt(ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1000000 +
			 ru.ru_stime.tv_usec, 0);
	ck_assert_int_lt(ru.ru_utime.tv_usec, 1000000);
	ck_assert_int_gt(ru.ru_minflt, 0);
	ck_assert_int_gt(ru.ru_maxrss, 0);
	close(sv[0]);
	close(sv[1]);
	assert_alive();
	drop_tree();
}
END_TEST

/* docs/DESIGN.md's table of the op set ("| `name` | fds | ...") names the protocol table's types,
 * in its order, with the descriptors each carries: a type added, renamed or given an fd fails here
 * until DESIGN says so. */
/* The labels file: the helper writes only the path it was given before the fork, and only a text
 * whose every line is the expiry or a mempolicyd.io/ label a Kubernetes API takes. A compromised
 * serving side cannot add another namespace's label, a second directive or a broken line. */
static char labels_dir[64], labels_path[128];

static void read_back(char *buf, size_t len)
{
	int fd = open(labels_path, O_RDONLY);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(n = read(fd, buf, len - 1), 0);
	buf[n] = '\0';
	close(fd);
}

START_TEST(labels_write_is_checked_and_goes_to_its_path_only)
{
	static struct nfd_text t;
	static struct priv_labels_write m;
	static const char *const hostile[] = {
		"mempolicyd.io/a=1\n",                                    /* no expiry first */
		"# +expiry-time=2030-01-01T00:00:00Z\nother.io/a=1\n",     /* another namespace */
		"# +expiry-time=2030-01-01T00:00:00Z\nmempolicyd.io/a=b c\n",
		"# +expiry-time=2030-01-01T00:00:00Z\nmempolicyd.io/a=1\n# +no-label\n",
		"# +expiry-time=2030-01-01T00:00:00Z\nmempolicyd.io/a=1",   /* no newline at the end */
		"# +expiry-time=2030-13-01T00:00:00Z\nmempolicyd.io/a=1\n",
		"# +expiry-time=2030-01-01T00:00:00+01:00\nmempolicyd.io/a=1\n",
		"# +expiry-time=2030-01-01T00:00:00Z\nmempolicyd.io/-a=1\n",
		"# +expiry-time=2030-01-01T00:00:00Z\nmempolicyd.io/a=1.\n",
		"# +expiry-time=2030-01-01T00:00:00Z\nmempolicyd.io/a=1=2\n",
		"# +expiry-time=2030-01-01T00:00:00Z\nmempolicyd.io/../a=1\n",
	};
	char buf[4096];

	snprintf(labels_dir, sizeof labels_dir, "/tmp/mpd-labels-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(labels_dir));
	snprintf(labels_path, sizeof labels_path, "%s/mempolicyd", labels_dir);
	priv_set_labels_file(labels_path);
	make_tree();
	nfd_begin(&t, 1900000000);
	ck_assert_int_eq(nfd_add(&t, "thp-enabled", "madvise"), 0);
	ck_assert_int_eq(nfd_add(&t, "profile", "_db"), -EINVAL);   /* the builder refuses it too */
	ck_assert_int_eq(nfd_add(&t, "profile", "a\nmempolicyd.io/x"), -EINVAL);
	ck_assert_int_eq(priv_labels_write(t.text, t.len), 0);
	read_back(buf, sizeof buf);
	ck_assert_str_eq(buf, "# +expiry-time=2030-03-17T17:46:40Z\nmempolicyd.io/thp-enabled=madvise\n");
	for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
		ck_assert_msg(priv_labels_write(hostile[i], strlen(hostile[i])) == -EINVAL, "accepted: %s", hostile[i]);
		read_back(buf, sizeof buf);
		ck_assert_str_eq(buf, "# +expiry-time=2030-03-17T17:46:40Z\nmempolicyd.io/thp-enabled=madvise\n");
	}
	/* Raw: a NUL inside, a length past the buffer, a pad set. */
	m.h = hdr(PRIV_LABELS_WRITE, sizeof m);
	memcpy(m.text, t.text, t.len);
	m.len = (uint32_t)t.len;
	m.text[20] = '\0';
	ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	memcpy(m.text, t.text, t.len);
	m.len = NFD_TEXT_MAX + 1;
	ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	m.len = (uint32_t)t.len;
	m.pad = 1;
	ck_assert_int_eq(send_raw(&m, sizeof m), -EINVAL);
	m.pad = 0;
	ck_assert_int_eq(send_raw(&m, sizeof m), 0);
	unlink(labels_path);
	rmdir(labels_dir);
}
END_TEST

/* Started without a labels file, the helper writes none, whatever it is sent. */
START_TEST(labels_write_without_a_path_is_refused)
{
	static struct nfd_text t;

	make_tree();
	nfd_begin(&t, 1900000000);
	ck_assert_int_eq(nfd_add(&t, "a", "1"), 0);
	ck_assert_int_eq(priv_labels_write(t.text, t.len), -EPERM);
}
END_TEST

START_TEST(design_table_matches_the_protocol_table)
{
	char path[PATH_MAX], line[1024];
	unsigned type = 1;
	bool in_table = false;
	FILE *f;

	snprintf(path, sizeof path, "%s/docs/DESIGN.md", MPD_SRCDIR);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	while (fgets(line, sizeof line, f)) {
		char name[64];
		unsigned fds;
		const char *p = line + strspn(line, " ");

		if (!in_table) {
			in_table = !strncmp(p, "| type | fds | the helper checks | the helper does |", 50);
			continue;
		}
		if (!strncmp(p, "|---", 4))
			continue;
		if (sscanf(p, "| `%63[^`]` | %u |", name, &fds) != 2)
			break;   /* the table ends */
		ck_assert_msg(type < PRIV_TYPE_END, "DESIGN lists %s beyond the protocol's %d types", name,
			      PRIV_TYPE_END - 1);
		ck_assert_str_eq(name, priv_requests[type].name);
		ck_assert_uint_eq(fds, priv_requests[type].fds);
		type++;
	}
	fclose(f);
	ck_assert_msg(in_table, "no table of the op set in docs/DESIGN.md");
	ck_assert_msg(type == PRIV_TYPE_END, "DESIGN lists %u types, the protocol has %d", type - 1, PRIV_TYPE_END - 1);
}
END_TEST

static Suite *priv_suite(void)
{
	Suite *s = suite_create("priv");
	TCase *tc = tcase_create("helper");

	tcase_add_test(tc, malformed_messages_are_refused);
	tcase_add_test(tc, fields_out_of_range_are_refused);
	tcase_add_test(tc, valid_requests_act);
	tcase_add_test(tc, a_blocked_request_holds_up_only_its_channel);
	tcase_add_test(tc, a_dead_channel_loses_the_helper);
	tcase_add_test(tc, malformed_spawns_are_refused);
	tcase_add_test(tc, spawn_runs_and_reaps_through_the_helper);
	tcase_add_test(tc, reap_through_the_helper_gives_the_usage);
	tcase_add_test(tc, hostile_typed_probe_parameters_start_nothing);
	tcase_add_test(tc, labels_write_is_checked_and_goes_to_its_path_only);
	tcase_add_test(tc, labels_write_without_a_path_is_refused);
	tcase_add_test(tc, hostile_knob_writes_write_nothing);
	tcase_add_test(tc, design_table_matches_the_protocol_table);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(priv_suite)
