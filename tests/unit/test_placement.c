/* The placement reader (server/kernel/placement.c) and pid identity (server/kernel/proc.c) against
 * fixture files in tests/unit/fixtures/proc/ (every policy string and flag mpol_to_str prints,
 * mappings with no resident pages, hugetlb and THP mappings), a numa_maps of 100 000 mappings
 * generated here, malformed lines the parser must refuse, a generated procfs tree for pl_read,
 * and this test process itself on the real kernel. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/kernel/placement.h"
#include "server/kernel/proc.h"
#include "tests/unit/check_main.h"

#define FIXTURES MPD_SRCDIR "/tests/unit/fixtures/proc"

/* The fixture's text, owned by the caller. */
static char *fixture(const char *name, size_t *len)
{
	char path[PATH_MAX];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof path, "%s/%s", FIXTURES, name);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "no fixture %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void parse_fixture(struct placement *p, const char *name)
{
	size_t len;
	char *t = fixture(name, &len);
	int rc = pl_parse_numa_maps(p, t, len);
	ck_assert_msg(rc == 0, "%s: rc %d at line %d", name, rc, p->bad_line);
	free(t);
}

static const struct pl_policy *pol(const struct placement *p, size_t i)
{
	return &p->policies[p->mappings[i].policy];
}

static const char *nodes_str(const idset *s)
{
	static char buf[256];
	ck_assert_int_ge(idset_format(s, buf, sizeof buf), 0);
	return buf;
}

START_TEST(every_policy_string)
{
	static const struct {
		const char *mode;
		unsigned flags;
		const char *nodes;
	} want[] = {
		{ "default", 0, "" },
		{ "local", 0, "" },
		{ "preferred", 0, "1" },
		{ "bind", 0, "0-1" },
		{ "interleave", 0, "0,2" },
		{ "preferred-many", 0, "0-1" },
		{ "weighted-interleave", 0, "0-3" },
		{ "bind", PL_F_STATIC, "0-1" },
		{ "interleave", PL_F_RELATIVE, "1,3" },
		{ "bind", PL_F_BALANCING, "0-1" },
		{ "bind", PL_F_STATIC | PL_F_BALANCING, "0" },
		{ "preferred-many", PL_F_RELATIVE | PL_F_BALANCING, "1-2" },
		{ "weighted-interleave", PL_F_STATIC, "0,2" },
		{ "preferred-many", PL_F_BALANCING, "0-1" },
		{ "preferred", PL_F_STATIC, "3" },
		{ "unknown", 0, "" },
		{ "default", 0, "" },
	};
	struct placement p;

	pl_init(&p);
	parse_fixture(&p, "policies.numa_maps");
	ck_assert_uint_eq(p.n_mappings, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < p.n_mappings; i++) {
		ck_assert_msg(strcmp(pl_mode_name(pol(&p, i)->mode), want[i].mode) == 0,
			      "line %zu: mode %s", i + 1, pl_mode_name(pol(&p, i)->mode));
		ck_assert_msg(pol(&p, i)->flags == want[i].flags, "line %zu: flags %u", i + 1, pol(&p, i)->flags);
		ck_assert_str_eq(nodes_str(&pol(&p, i)->nodes), want[i].nodes);
	}
	/* The two spaced modes keep their text whole. */
	ck_assert_str_eq(pol(&p, 5)->text, "prefer (many):0-1");
	ck_assert_str_eq(pol(&p, 12)->text, "weighted interleave=static:0,2");
	/* The first and last lines share "default": policies are interned. */
	ck_assert_uint_eq(p.mappings[0].policy, p.mappings[16].policy);
	ck_assert_uint_eq(p.n_policies, 16);
	pl_free(&p);
}
END_TEST

START_TEST(kinds_counters_and_paths)
{
	struct placement p;
	const struct pl_mapping *m;

	pl_init(&p);
	parse_fixture(&p, "policies.numa_maps");
	m = &p.mappings[0];
	ck_assert_int_eq(m->kind, PL_KIND_FILE);
	ck_assert_str_eq(p.strings + m->path, "/usr/bin/prog");
	ck_assert_uint_eq(m->start, 0x400000);
	ck_assert_uint_eq(m->pages, 3);
	ck_assert_uint_eq(m->page_kb, 4);
	/* The kernel's octal escape of a space is undone. */
	ck_assert_str_eq(p.strings + p.mappings[1].path, "/usr/lib/my lib.so");
	ck_assert_int_eq(p.mappings[2].kind, PL_KIND_HEAP);
	ck_assert_int_eq(p.mappings[16].kind, PL_KIND_STACK);
	ck_assert_int_eq(p.mappings[3].kind, PL_KIND_ANON);
	ck_assert_uint_eq(p.mappings[3].start, 0x7f0000000000);
	ck_assert_uint_eq(p.mappings[3].n_counts, 2);
	ck_assert_uint_eq(p.counts[p.mappings[3].first_count].node, 0);
	ck_assert_uint_eq(p.counts[p.mappings[3].first_count].pages, 2);
	ck_assert_uint_eq(p.counts[p.mappings[3].first_count + 1].node, 1);
	ck_assert_uint_eq(p.counts[p.mappings[3].first_count + 1].pages, 4);
	m = &p.mappings[14];
	ck_assert_uint_eq(m->dirty, 1);
	ck_assert_uint_eq(m->mapmax, 3);
	ck_assert_uint_eq(m->swapcache, 1);
	ck_assert_uint_eq(m->writeback, 1);
	ck_assert_uint_eq(m->pages, 4);
	/* "unknown" with nothing resident. */
	ck_assert_uint_eq(p.mappings[15].pages, 0);
	ck_assert_uint_eq(p.mappings[15].page_kb, 0);
	pl_free(&p);
}
END_TEST

START_TEST(locality_over_policies_that_name_nodes)
{
	struct placement p;

	pl_init(&p);
	parse_fixture(&p, "policies.numa_maps");
	ck_assert_int_eq(pl_summarise(&p), 0);
	/* 41 pages under node-naming policies; bind=static|balancing:0 has its 2 on node 2. */
	ck_assert_uint_eq(p.policy_bytes, 41 * 4096);
	ck_assert_uint_eq(p.policy_local_bytes, 39 * 4096);
	ck_assert_int_eq(p.n_nodes, 4);
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(p.nodes[i].id, (unsigned)i);
	/* N0: 3+1+2+2+3+2+2+1+3 = 19 pages; nothing huge. */
	ck_assert_uint_eq(p.nodes[0].base_bytes, 19 * 4096);
	ck_assert_uint_eq(p.nodes[0].hugetlb_bytes, 0);
	ck_assert_uint_eq(p.resident_bytes, 48 * 4096);
	/* Per policy: bind=static|balancing:0 governs one mapping, 2 pages, none on node 0. */
	ck_assert_uint_eq(pol(&p, 10)->mappings, 1);
	ck_assert_uint_eq(pol(&p, 10)->bytes, 2 * 4096);
	ck_assert_uint_eq(pol(&p, 10)->local_bytes, 0);
	ck_assert(!pol(&p, 0)->names_nodes);
	ck_assert_uint_eq(pol(&p, 0)->mappings, 2);   /* the first and the last line */
	pl_free(&p);
}
END_TEST

START_TEST(no_resident_pages)
{
	struct placement p;

	pl_init(&p);
	parse_fixture(&p, "noresident.numa_maps");
	ck_assert_uint_eq(p.n_mappings, 6);
	for (size_t i = 0; i < p.n_mappings; i++) {
		ck_assert_uint_eq(p.mappings[i].pages, 0);
		ck_assert_uint_eq(p.mappings[i].n_counts, 0);
		ck_assert_uint_eq(p.mappings[i].page_kb, 0);
	}
	ck_assert(p.mappings[2].huge);
	ck_assert_int_eq(p.mappings[2].kind, PL_KIND_FILE);
	ck_assert_int_eq(pol(&p, 2)->flags, PL_F_STATIC);
	ck_assert_int_eq(p.mappings[3].kind, PL_KIND_HEAP);
	ck_assert_int_eq(pol(&p, 4)->mode, PL_PREFER_MANY);
	ck_assert_int_eq(pl_summarise(&p), 0);
	ck_assert_int_eq(p.n_nodes, 0);
	ck_assert_uint_eq(p.resident_bytes, 0);
	/* Nothing resident under bind:1: no locality to speak of, not 0 % of it. */
	ck_assert_uint_eq(p.policy_bytes, 0);
	pl_free(&p);
}
END_TEST

START_TEST(hugetlb_sizes_and_thp_attribution)
{
	struct placement p;
	size_t len;
	char *smaps = fixture("huge.smaps", &len);

	pl_init(&p);
	parse_fixture(&p, "huge.numa_maps");
	ck_assert_int_eq(pl_parse_smaps(&p, smaps, len), 0);
	free(smaps);
	ck_assert_uint_eq(p.mappings[0].end, 0x7f2000800000);
	ck_assert_uint_eq(p.mappings[3].thp_kb, 4096);
	ck_assert_uint_eq(p.mappings[4].thp_kb, 4096);
	ck_assert_str_eq(p.strings + p.mappings[1].path, "/anon_hugepage (deleted)");
	ck_assert_int_eq(pl_summarise(&p), 0);

	/* Sizes from kernelpagesize_kB, in first-seen order. */
	ck_assert_int_eq(p.n_hsizes, 2);
	ck_assert_uint_eq(p.hsize_kb[0], 2048);
	ck_assert_uint_eq(p.hsize_kb[1], 1048576);
	ck_assert_int_eq(p.n_nodes, 2);
	/* Node 0: one 2M page, one 1G page; THP 4M of the 6M mapping wholly on it; the
	 * interleaved mapping's 2M here stays base (its THP is not split by node). */
	ck_assert_uint_eq(p.nodes[0].hugetlb_pages[0], 1);
	ck_assert_uint_eq(p.nodes[0].hugetlb_pages[1], 1);
	ck_assert_uint_eq(p.nodes[0].hugetlb_bytes, (2ULL << 20) + (1ULL << 30));
	ck_assert_uint_eq(p.nodes[0].thp_bytes, 4ULL << 20);
	ck_assert_uint_eq(p.nodes[0].base_bytes, 4ULL << 20);
	ck_assert_uint_eq(p.nodes[1].hugetlb_pages[0], 5);
	ck_assert_uint_eq(p.nodes[1].hugetlb_pages[1], 0);
	ck_assert_uint_eq(p.nodes[1].hugetlb_bytes, 10ULL << 20);
	ck_assert_uint_eq(p.nodes[1].thp_bytes, 0);
	ck_assert_uint_eq(p.nodes[1].base_bytes, (2ULL << 20) + 40 * 1024);
	ck_assert_uint_eq(p.thp_bytes, 8ULL << 20);
	ck_assert_uint_eq(p.thp_unattributed_bytes, 4ULL << 20);
	/* bind:1, prefer:0, interleave:0-1 all wholly on their nodes. */
	ck_assert_uint_eq(p.policy_bytes, (8ULL << 20) + (1ULL << 30) + (4ULL << 20));
	ck_assert_uint_eq(p.policy_local_bytes, p.policy_bytes);
	pl_free(&p);
}
END_TEST

START_TEST(smaps_lists_what_numa_maps_did_not)
{
	/* Read apart, the two files can disagree: a VMA only in one of them is skipped, and a
	 * mapping smaps does not list keeps end 0 rather than a neighbour's. */
	static const char nm[] = "1000 default anon=1 dirty=1 N0=1 kernelpagesize_kB=4\n"
				 "3000 default anon=1 dirty=1 N0=1 kernelpagesize_kB=4\n";
	static const char sm[] = "0-1000 r--p 00000000 00:00 0\nAnonHugePages: 8 kB\n"
				 "3000-4000 rw-p 00000000 00:00 0\nAnonHugePages:         0 kB\n";
	struct placement p;

	pl_init(&p);
	ck_assert_int_eq(pl_parse_numa_maps(&p, nm, strlen(nm)), 0);
	ck_assert_int_eq(pl_parse_smaps(&p, sm, strlen(sm)), 0);
	ck_assert_uint_eq(p.mappings[0].end, 0);
	ck_assert_uint_eq(p.mappings[0].thp_kb, 0);
	ck_assert_uint_eq(p.mappings[1].end, 0x4000);
	pl_free(&p);
}
END_TEST

START_TEST(truncated_policy_text)
{
	/* show_numa_map's buffer is 64 bytes: this text of 63 characters was cut after a comma,
	 * and the one below it in "60" (it could have been "603"): both keep only what is
	 * surely whole. */
	static const char t[] = "interleave:0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,";
	static const char t2[] = "bind:0,3,6,9,12,15,18,21,24,27,30,33,36,39,42,45,48,51,54,57,60";
	struct pl_policy pp;

	ck_assert_uint_eq(strlen(t), 63);
	ck_assert_int_eq(pl_parse_policy(t, &pp), 0);
	ck_assert(pp.maybe_truncated);
	ck_assert_str_eq(nodes_str(&pp.nodes), "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36");
	ck_assert_uint_eq(strlen(t2), 63);
	ck_assert_int_eq(pl_parse_policy(t2, &pp), 0);
	ck_assert(pp.maybe_truncated);
	ck_assert_str_eq(nodes_str(&pp.nodes), "0,3,6,9,12,15,18,21,24,27,30,33,36,39,42,45,48,51,54,57");
	ck_assert_int_eq(pl_parse_policy("interleave:0,2", &pp), 0);
	ck_assert(!pp.maybe_truncated);
}
END_TEST

START_TEST(malformed_lines_refused)
{
	static const char *bad[] = {
		"\n",                                                /* empty line */
		"zz default",                                        /* address not hex */
		"1000",                                              /* no policy */
		"1000 default anon=1 N0=1",                          /* counters without page size */
		"1000 default anon=1 kernelpagesize_kB=4",           /* counters, no node */
		"1000 default N0=1 kernelpagesize_kB=3",             /* not a power of two */
		"1000 default N0=0 kernelpagesize_kB=4",             /* zero count is never printed */
		"1000 default N1=1 N0=1 kernelpagesize_kB=4",        /* nodes out of order */
		"1000 default N0=1 kernelpagesize_kB=4 anon=1",      /* after the page size */
		"1000 default N0=-1 kernelpagesize_kB=4",            /* sign */
		"1000 default N0=1x kernelpagesize_kB=4",
		"1000 default N0=99999999999999999999 kernelpagesize_kB=4",
		"1000 default bogus=1 N0=1 kernelpagesize_kB=4",     /* unknown counter */
		"1000 default huh",                                  /* unknown word */
		"1000 default huge heap",                            /* heap after huge */
		"1000 default N0=1 kernelpagesize_kB=4 huge",        /* huge after counters */
		"1000 default file=",                                /* empty path */
		"1000 default:0",                                    /* default names no nodes */
		"1000 local:1",
		"1000 bind:",                                        /* empty list */
		"1000 bind:3-1",
		"1000 bind:1,,2",
		"1000 bind:0-",
		"1000 bind=static|relative:0",                       /* mutually exclusive */
		"1000 bind=fast:0",
		"1000 Bind:0",
		"1000 prefer (many:0",
		"1000  default",                                     /* two spaces */
		"1000 default N0=1 N0=1 kernelpagesize_kB=4",        /* same node twice */
		"1000 default N4096=1 kernelpagesize_kB=4",          /* beyond any node id */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct placement p;
		int rc;
		pl_init(&p);
		rc = pl_parse_numa_maps(&p, bad[i], strlen(bad[i]));
		ck_assert_msg(rc < 0, "accepted '%s'", bad[i]);
		ck_assert_int_eq(p.bad_line, 1);
		pl_free(&p);
	}
}
END_TEST

START_TEST(addresses_must_ascend)
{
	static const char t[] = "2000 default\n1000 default\n";
	struct placement p;

	pl_init(&p);
	ck_assert_int_eq(pl_parse_numa_maps(&p, t, strlen(t)), -EINVAL);
	ck_assert_int_eq(p.bad_line, 2);
	pl_free(&p);
}
END_TEST

START_TEST(hundred_thousand_mappings)
{
	enum { N = 100000 };
	size_t cap = (size_t)N * 96, len = 0;
	char *t = malloc(cap);
	struct placement p;

	ck_assert_ptr_nonnull(t);
	for (int i = 0; i < N; i++) {
		unsigned long a = 0x7f0000000000UL + (unsigned long)i * 0x2000;
		if (i % 3 == 0)
			len += (size_t)snprintf(t + len, cap - len, "%lx bind:%d\n", a, i % 2);
		else
			len += (size_t)snprintf(t + len, cap - len,
						"%lx bind:%d anon=1 dirty=1 N%d=1 kernelpagesize_kB=4\n", a,
						i % 2, i % 4 == 3 ? 1 - i % 2 : i % 2);
	}
	pl_init(&p);
	ck_assert_int_eq(pl_parse_numa_maps(&p, t, len), 0);
	free(t);
	ck_assert_uint_eq(p.n_mappings, N);
	ck_assert_uint_eq(p.n_policies, 2);
	ck_assert_uint_eq(p.mappings[N - 1].start, 0x7f0000000000UL + (unsigned long)(N - 1) * 0x2000);
	ck_assert_int_eq(pl_summarise(&p), 0);
	{
		uint64_t resident = 0, off = 0;
		for (int i = 0; i < N; i++) {
			if (i % 3 == 0)
				continue;
			resident++;
			off += i % 4 == 3;
		}
		ck_assert_uint_eq(p.resident_bytes, resident * 4096);
		ck_assert_uint_eq(p.policy_local_bytes, (resident - off) * 4096);
	}
	pl_free(&p);
}
END_TEST

START_TEST(status_fields)
{
	size_t len;
	char *t = fixture("status", &len);
	struct placement p;

	pl_init(&p);
	ck_assert_int_eq(pl_parse_status(&p, t), 0);
	free(t);
	ck_assert_str_eq(p.name, "my prog");
	ck_assert_int_eq(p.uid, 1000);
	ck_assert_int_eq(p.euid, 1001);
	ck_assert_int_eq(p.suid, 1002);
	ck_assert(p.have_mems_allowed);
	ck_assert_str_eq(nodes_str(&p.mems_allowed), "0,2");
	ck_assert_int_eq(pl_parse_status(&p, "Name:\tx\nUid:\t-1\t0\t0\t0\n"), -EINVAL);
	ck_assert_int_eq(pl_parse_status(&p, "Uid:\t0\t0\t0\t0\n"), -EINVAL);
	ck_assert_int_eq(pl_parse_status(&p, "Name:\tx\nUid:\t0\t0\n"), -EINVAL);
}
END_TEST

START_TEST(rollup_thp)
{
	size_t len;
	char *t = fixture("smaps_rollup", &len);
	uint64_t kb = 0;

	ck_assert_int_eq(pl_parse_rollup_thp(t, &kb), 0);
	free(t);
	ck_assert_uint_eq(kb, 8192);
	ck_assert_int_eq(pl_parse_rollup_thp("Rss: 4 kB\n", &kb), -EINVAL);
	ck_assert_int_eq(pl_parse_rollup_thp("AnonHugePages: -4 kB\n", &kb), -EINVAL);
}
END_TEST

START_TEST(stat_start_time)
{
	size_t len;
	char *t = fixture("stat", &len);
	uint64_t st = 0;

	/* comm "a) b (c" holds spaces and both parentheses. */
	ck_assert_int_eq(proc_parse_stat_start(t, &st), 0);
	free(t);
	ck_assert_uint_eq(st, 987654);
	ck_assert_int_eq(proc_parse_stat_start("1 (x) S 1 2 3", &st), -EINVAL);
	ck_assert_int_eq(proc_parse_stat_start("no parenthesis", &st), -EINVAL);
	ck_assert_int_eq(proc_parse_stat_start(
		"1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5 0", &st), -EINVAL);
}
END_TEST

/* The real kernel's start time of a process, as field 22 of its stat line read by stdio, with a
 * comm that holds ") (" and spaces; a reaped process has none (-ESRCH). One pread into a buffer on
 * the stack does what the whole-file read did. */
START_TEST(start_time_on_the_real_kernel)
{
	char line[4096], path[64], *close_paren;
	unsigned long long want = 0;
	uint64_t st = 0;
	FILE *f;
	pid_t child;

	ck_assert_int_eq(prctl(PR_SET_NAME, "a) b (c d", 0, 0, 0), 0);
	snprintf(path, sizeof path, "/proc/%d/stat", (int)getpid());
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
	fclose(f);
	ck_assert_ptr_nonnull(close_paren = strrchr(line, ')'));
	/* after ") ": field 3 (state) onwards; start time is field 22 */
	ck_assert_int_eq(sscanf(close_paren + 2, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
				"%*s %*s %llu", &want), 1);
	ck_assert_int_eq(proc_start_time("/proc", getpid(), &st), 0);
	ck_assert_uint_eq(st, want);
	ck_assert_int_ne((child = fork()), -1);
	if (child == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(child, NULL, 0), child);
	ck_assert_int_eq(proc_start_time("/proc", child, &st), -ESRCH);
}
END_TEST

/* A procfs tree with one process, 4242, made of the fixtures. */
static char root[64];

static void copy_fixture(const char *name, const char *as)
{
	char path[PATH_MAX];
	size_t len;
	char *t = fixture(name, &len);
	FILE *f;

	snprintf(path, sizeof path, "%s/4242/%s", root, as);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fwrite(t, 1, len, f);
	fclose(f);
	free(t);
}

static void make_tree(void)
{
	char dir[PATH_MAX];

	snprintf(root, sizeof root, "/tmp/mpd-placement-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(dir, sizeof dir, "%s/4242", root);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	copy_fixture("stat", "stat");
	copy_fixture("status", "status");
	copy_fixture("smaps_rollup", "smaps_rollup");
	copy_fixture("huge.numa_maps", "numa_maps");
	copy_fixture("huge.smaps", "smaps");
	copy_fixture("huge.maps", "maps");
}

static void remove_tree(void)
{
	char cmd[PATH_MAX];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(read_generated_tree)
{
	struct placement p;

	make_tree();
	ck_assert_int_eq(pl_read(root, proc_open_guarded, 4242, 0, &p), 0);
	ck_assert_uint_eq(p.start_time, 987654);
	ck_assert(p.smaps_read); /* the rollup shows THP */
	ck_assert_uint_eq(p.n_mappings, 6);
	ck_assert_uint_eq(p.nodes[0].thp_bytes, 4ULL << 20);
	ck_assert_str_eq(p.name, "my prog");
	pl_free(&p);
	/* The start time the caller saw must still be the process's. */
	ck_assert_int_eq(pl_read(root, proc_open_guarded, 4242, 987654, &p), 0);
	pl_free(&p);
	ck_assert_int_eq(pl_read(root, proc_open_guarded, 4242, 987655, &p), -ESTALE);
	ck_assert_int_eq(proc_check_identity(root, 4242, 987654), 0);
	ck_assert_int_eq(proc_check_identity(root, 4242, 1), -ESTALE);
	ck_assert_int_eq(proc_check_identity(root, 4243, 987654), -ESRCH);
	ck_assert_int_eq(pl_read(root, proc_open_guarded, 4243, 0, &p), -ESRCH);
	ck_assert_int_eq(pl_read(root, proc_open_guarded, 0, 0, &p), -ESRCH);
	ck_assert_int_eq(pl_read(root, proc_open_guarded, PROC_PID_MAX + 1, 0, &p), -ESRCH);
	/* A zombie has nothing to place. */
	{
		char path[PATH_MAX];
		FILE *f;
		snprintf(path, sizeof path, "%s/4242/status", root);
		f = fopen(path, "w");
		fputs("Name:\tz\nState:\tZ (zombie)\nUid:\t0\t0\t0\t0\n", f);
		fclose(f);
		ck_assert_int_eq(pl_read(root, proc_open_guarded, 4242, 0, &p), -ESRCH);
	}
	/* A line the parser refuses is -EINVAL with its number. */
	{
		char path[PATH_MAX];
		FILE *f;
		copy_fixture("status", "status");
		snprintf(path, sizeof path, "%s/4242/numa_maps", root);
		f = fopen(path, "a");
		fputs("7fff00000000 default wat\n", f);
		fclose(f);
		ck_assert_int_eq(pl_read(root, proc_open_guarded, 4242, 0, &p), -EINVAL);
		ck_assert_int_eq(p.bad_line, 7);
	}
	remove_tree();
}
END_TEST

START_TEST(ends_from_maps_without_thp)
{
	/* No THP in the rollup: smaps is not read, the ends come from maps (read beside numa_maps),
	 * and with PL_NO_ENDS maps is not read at all (here it is missing: no error). */
	char path[PATH_MAX];
	FILE *f;
	struct placement p;

	make_tree();
	snprintf(path, sizeof path, "%s/4242/smaps_rollup", root);
	f = fopen(path, "w");
	fputs("0-1 ---p 00000000 00:00 0 [rollup]\nAnonHugePages:         0 kB\n", f);
	fclose(f);
	snprintf(path, sizeof path, "%s/4242/smaps", root);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(pl_read(root, proc_open_guarded, 4242, 0, &p), 0);
	ck_assert(!p.smaps_read);
	ck_assert_uint_eq(p.mappings[0].end, 0x7f2000800000);
	ck_assert_uint_eq(p.mappings[5].end, 0x7f2080c00000);
	ck_assert_uint_eq(p.thp_bytes, 0);
	pl_free(&p);
	snprintf(path, sizeof path, "%s/4242/maps", root);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(pl_read(root, proc_open_guarded, 4242, 0, &p), -ESRCH);   /* maps wanted, and gone */
	ck_assert_int_eq(pl_read_opts(root, proc_open_guarded, 4242, 0, PL_NO_ENDS, &p), 0);
	ck_assert_uint_eq(p.mappings[0].end, 0);
	ck_assert_uint_eq(p.n_mappings, 6);
	pl_free(&p);
	remove_tree();
}
END_TEST

START_TEST(summary_on_one_node_takes_the_rollup_without_smaps)
{
	/* Every base page on node 0 (the hugetlb pages on 1 do not count): a summary (PL_NO_ENDS)
	 * gives node 0 the rollup's 8 MiB of THP without reading smaps (removed here, so reading it
	 * would fail); the full read still needs smaps for the per-mapping figures. */
	static const char numa_maps[] =
		"7f2000000000 bind:1 file=/dev/hugepages/a huge dirty=4 N1=4 kernelpagesize_kB=2048\n"
		"7f2080000000 default anon=4096 dirty=4096 N0=4096 kernelpagesize_kB=4\n"
		"7f2080a00000 default anon=10 dirty=10 N0=10 kernelpagesize_kB=4\n";
	char path[PATH_MAX];
	struct placement p;
	FILE *f;

	make_tree();
	snprintf(path, sizeof path, "%s/4242/numa_maps", root);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(numa_maps, f);
	fclose(f);
	snprintf(path, sizeof path, "%s/4242/smaps", root);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(pl_read_opts(root, proc_open_guarded, 4242, 0, PL_NO_ENDS, &p), 0);
	ck_assert(!p.smaps_read);
	ck_assert_uint_eq(p.rollup_thp_kb, 8192);
	ck_assert_uint_eq(p.thp_bytes, 8ULL << 20);
	ck_assert_uint_eq(p.thp_unattributed_bytes, 0);
	ck_assert_int_eq(p.n_nodes, 2);
	ck_assert_uint_eq(p.nodes[0].thp_bytes, 8ULL << 20);
	ck_assert_uint_eq(p.nodes[0].base_bytes, 4106ULL * 4096 - (8ULL << 20));
	ck_assert_uint_eq(p.nodes[1].thp_bytes, 0);
	ck_assert_uint_eq(p.nodes[1].hugetlb_bytes, 4ULL * 2048 * 1024);
	pl_free(&p);
	ck_assert_int_eq(pl_read(root, proc_open_guarded, 4242, 0, &p), -ESRCH);   /* smaps wanted, and gone */
	/* Base pages on two nodes: the summary reads smaps again (here missing: an error). */
	ck_assert_ptr_nonnull(f = fopen(path, "w"));   /* path: smaps, so it exists but is empty */
	fclose(f);
	snprintf(path, sizeof path, "%s/4242/numa_maps", root);
	ck_assert_ptr_nonnull(f = fopen(path, "a"));
	fputs("7f2080c00000 default anon=1 dirty=1 N1=1 kernelpagesize_kB=4\n", f);
	fclose(f);
	ck_assert_int_eq(pl_read_opts(root, proc_open_guarded, 4242, 0, PL_NO_ENDS, &p), 0);
	ck_assert(p.smaps_read);
	ck_assert_uint_eq(p.thp_bytes, 0);   /* an empty smaps attributes nothing */
	pl_free(&p);
	remove_tree();
}
END_TEST

START_TEST(rollup_skipped_when_meminfo_shows_no_thp)
{
	/* /proc/meminfo's AnonHugePages sums every rollup's: 0 there and the rollup (which here
	 * says 8 MiB, as no real kernel would beside it) is not read; any THP there, an unreadable
	 * line or no meminfo at all, and it is. */
	static const struct { const char *meminfo; bool read; } cases[] = {
		{ "MemTotal:       16 kB\nAnonHugePages:         0 kB\nShmemHugePages:        0 kB\n", false },
		{ "MemTotal:       16 kB\nAnonHugePages:      2048 kB\n", true },
		{ "MemTotal:       16 kB\nAnonHugePages:        -1 kB\n", true },
		{ "MemTotal:       16 kB\n", true },
		{ NULL, true },
	};
	char path[PATH_MAX];
	struct placement p;

	make_tree();
	snprintf(path, sizeof path, "%s/meminfo", root);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (cases[i].meminfo) {
			FILE *f = fopen(path, "w");
			ck_assert_ptr_nonnull(f);
			fputs(cases[i].meminfo, f);
			fclose(f);
		} else {
			unlink(path);
		}
		ck_assert_int_eq(pl_read_opts(root, proc_open_guarded, 4242, 0, PL_NO_ENDS, &p), 0);
		ck_assert_msg(p.smaps_read == cases[i].read, "case %zu", i);
		ck_assert_uint_eq(p.rollup_thp_kb, cases[i].read ? 8192 : 0);
		ck_assert_uint_eq(p.n_mappings, 6);
		pl_free(&p);
	}
	remove_tree();
}
END_TEST

START_TEST(read_self_on_the_real_kernel)
{
	/* 8 MiB touched: resident anonymous memory this process really has, on some node. */
	size_t sz = 8 << 20;
	char *mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct placement p;
	uint64_t st;
	bool found = false;

	ck_assert_ptr_ne(mem, MAP_FAILED);
	memset(mem, 1, sz);
	ck_assert_int_eq(proc_start_time("/proc", getpid(), &st), 0);
	ck_assert_int_eq(pl_read("/proc", proc_open_guarded, getpid(), st, &p), 0);
	ck_assert_uint_ge(p.resident_bytes, sz);
	ck_assert(p.have_mems_allowed);
	for (size_t i = 0; i < p.n_mappings; i++) {
		const struct pl_mapping *m = &p.mappings[i];
		if (m->start <= (uintptr_t)mem && (uintptr_t)mem < m->end) {
			found = true;
			ck_assert_uint_ge(m->pages * m->page_kb * 1024, sz);
		}
	}
	ck_assert_msg(found, "the mapping of %p is not in numa_maps", (void *)mem);
	pl_free(&p);
	munmap(mem, sz);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("placement");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, every_policy_string);
	tcase_add_test(tc, kinds_counters_and_paths);
	tcase_add_test(tc, locality_over_policies_that_name_nodes);
	tcase_add_test(tc, no_resident_pages);
	tcase_add_test(tc, hugetlb_sizes_and_thp_attribution);
	tcase_add_test(tc, smaps_lists_what_numa_maps_did_not);
	tcase_add_test(tc, truncated_policy_text);
	tcase_add_test(tc, malformed_lines_refused);
	tcase_add_test(tc, addresses_must_ascend);
	tcase_add_test(tc, hundred_thousand_mappings);
	tcase_add_test(tc, status_fields);
	tcase_add_test(tc, rollup_thp);
	tcase_add_test(tc, stat_start_time);
	tcase_add_test(tc, start_time_on_the_real_kernel);
	tcase_add_test(tc, read_generated_tree);
	tcase_add_test(tc, ends_from_maps_without_thp);
	tcase_add_test(tc, rollup_skipped_when_meminfo_shows_no_thp);
	tcase_add_test(tc, summary_on_one_node_takes_the_rollup_without_smaps);
	tcase_add_test(tc, read_self_on_the_real_kernel);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(suite)
