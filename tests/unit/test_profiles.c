/* Profiles (server/profiles/, ops/profiles.c): the example verbatim, every merge rule,
 * every error with its file:line:column, the directory's confinement (a Kubernetes ConfigMap's
 * ..data layout accepted, symlinks out of the directory refused) and the host check on a
 * generated tree (unknown knob, value not allowed, a knob or node this kernel lacks, required). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/app.h"
#include "server/kernel/knobs.h"
#include "server/ops/profiles.h"
#include "server/profiles/dir.h"
#include "server/profiles/profile.h"
#include "tests/unit/check_main.h"

static char root[64];

#include "tests/unit/tree.h"

/* The db.conf, exactly as written there. */
static const char DB_CONF[] =
	"# db.conf\n"
	"[profile]\n"
	"include = base            # base.conf first; keys here win, key by key\n"
	"on-drift = restore        # default for every key: report | restore | yield\n"
	"\n"
	"[knobs]\n"
	"thp.enabled = madvise\n"
	"thp.defrag = defer+madvise|defer          # either is in sync\n"
	"thp.khugepaged.pages_to_scan >= 4096      # at least: a higher value is in sync, nothing written\n"
	"numa.balancing = 0 ; on-drift = report\n"
	"thp.shmem_enabled = advise ; required     # required: a kernel without it makes the profile degraded\n"
	"\n"
	"[hugepages.2M]\n"
	"node0 = 4096\n"
	"node1 >= 2048\n"
	"\n"
	"[hugepages.1G]\n"
	"total = 16\n"
	"\n"
	"[cgroup workload.slice]\n"
	"mems = 0-1\n";

static const char BASE_CONF[] =
	"[knobs]\n"
	"thp.enabled = always\n"
	"vm.compaction_proactiveness = 0\n"
	"thp.khugepaged.defrag = 1\n";

/* An in-memory directory for the merger: names and texts, NULL-terminated. */
struct memdir {
	const char *const *files;    /* name, text, name, text, ..., NULL */
};

static int mem_load(void *ctx, const char *name, const struct prof_loc *from, char **text, size_t *len,
		    struct prof_err *err)
{
	const struct memdir *d = ctx;
	struct prof_loc here = { .line = 0 };

	for (size_t i = 0; d->files[i]; i += 2)
		if (!strcmp(d->files[i], name)) {
			*text = strdup(d->files[i + 1]);
			*len = strlen(d->files[i + 1]);
			return 0;
		}
	snprintf(here.file, sizeof here.file, "%s.conf", name);
	return prof_fail(err, from ? from : &here, from ? MPE_PROFILE_INCLUDE_MISSING : MPE_PROFILE_NOT_FOUND,
			 "no profile %s", name);
}

static const struct prof_key *key(const struct prof_doc *d, const char *id)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->keys[i].id, id))
			return &d->keys[i];
	return NULL;
}

static void merge_ok(const char *const *files, const char *name, struct prof_doc *d)
{
	struct memdir m = { files };
	struct prof_err e = { 0 };
	int rc = prof_merge(name, mem_load, &m, d, &e);
	ck_assert_msg(rc == 0, "merge %s: %s", name, e.e.detail);
}

/* Merges and expects code at file:line:col, with the place leading the detail. */
static void merge_fails(const char *const *files, const char *name, enum mp_code code, const char *file,
			unsigned line, unsigned col)
{
	struct memdir m = { files };
	struct prof_err e = { 0 };
	struct prof_doc d;
	char where[128];

	ck_assert_int_eq(prof_merge(name, mem_load, &m, &d, &e), -1);
	ck_assert_msg(e.e.code == code, "%s: got %s (%s)", name, mp_code_name(e.e.code), e.e.detail);
	ck_assert_str_eq(e.loc.file, file);
	ck_assert_uint_eq(e.loc.line, line);
	ck_assert_uint_eq(e.loc.col, col);
	snprintf(where, sizeof where, "%s:%u:%u: ", file, line, col);
	ck_assert_msg(!strncmp(e.e.detail, where, strlen(where)), "detail '%s' does not start with '%s'", e.e.detail,
		      where);
	prof_doc_free(&d);
}

START_TEST(example_verbatim)
{
	const char *const files[] = { "db", DB_CONF, "base", BASE_CONF, NULL };
	const struct prof_key *k;
	struct prof_doc d;

	merge_ok(files, "db", &d);
	ck_assert_int_eq(d.nfiles, 2);
	ck_assert_str_eq(d.files[0], "db");
	ck_assert_str_eq(d.files[1], "base");
	ck_assert_int_eq(d.on_drift, PROF_DRIFT_RESTORE);
	ck_assert_uint_eq(d.n, 11);   /* 3 from base (one replaced) + 9 of db's keys, one of them new in place */
	/* base's keys first, in base's order; db's replacement in base's place */
	ck_assert_str_eq(d.keys[0].id, "thp.enabled");
	ck_assert_str_eq(d.keys[0].vals[0], "madvise");
	ck_assert_str_eq(d.keys[0].loc.file, "db.conf");
	ck_assert_uint_eq(d.keys[0].loc.line, 7);
	ck_assert_str_eq(d.keys[1].id, "vm.compaction_proactiveness");
	ck_assert_str_eq(d.keys[1].loc.file, "base.conf");
	ck_assert_uint_eq(d.keys[1].loc.line, 3);
	ck_assert_int_eq(d.keys[1].on_drift, PROF_DRIFT_RESTORE);   /* the profile's default reaches base's keys */
	ck_assert_ptr_nonnull(k = key(&d, "thp.defrag"));
	ck_assert_int_eq(k->nvals, 2);
	ck_assert_str_eq(k->vals[0], "defer+madvise");
	ck_assert_str_eq(k->vals[1], "defer");
	ck_assert_ptr_nonnull(k = key(&d, "thp.khugepaged.pages_to_scan"));
	ck_assert_int_eq(k->cmp, PROF_GE);
	ck_assert_str_eq(k->vals[0], "4096");
	ck_assert_uint_eq(k->loc.line, 9);
	ck_assert_uint_eq(k->loc.col, 1);
	ck_assert_ptr_nonnull(k = key(&d, "numa.balancing"));
	ck_assert_int_eq(k->on_drift, PROF_DRIFT_REPORT);
	ck_assert(k->drift_set);
	ck_assert_ptr_nonnull(k = key(&d, "thp.shmem_enabled"));
	ck_assert(k->required);
	ck_assert_int_eq(k->on_drift, PROF_DRIFT_RESTORE);
	ck_assert_ptr_nonnull(k = key(&d, "hugepages.2M.node0"));
	ck_assert_int_eq(k->kind, PROF_POOL);
	ck_assert_uint_eq(k->size_kb, 2048);
	ck_assert_int_eq(k->node, 0);
	ck_assert_ptr_nonnull(k = key(&d, "hugepages.2M.node1"));
	ck_assert_int_eq(k->cmp, PROF_GE);
	ck_assert_ptr_nonnull(k = key(&d, "hugepages.1G.total"));
	ck_assert_uint_eq(k->size_kb, 1048576);
	ck_assert_int_eq(k->node, -1);
	ck_assert_ptr_nonnull(k = key(&d, "cgroup[workload.slice].mems"));
	ck_assert_str_eq(k->cgpath, "workload.slice");
	ck_assert_str_eq(k->vals[0], "0-1");
	ck_assert_uint_eq(k->loc.line, 21);
	prof_doc_free(&d);
}
END_TEST

START_TEST(merge_rules)
{
	const char *const files[] = {
		"c", "[profile]\non-drift = yield\n[knobs]\na.x = 1\nb.x = 2\nc.x = 3\n",
		"b", "[profile]\ninclude = c\n[knobs]\nb.x = 20 ; on-drift = restore\n-c.x\nd.x = 4\n",
		"a", "[profile]\ninclude = b\n[knobs]\na.x = 10\n[hugepages.2048kB]\ntotal = 1\n",
		"plain", "[knobs]\nz.x = 1\n",
		NULL };
	const struct prof_key *k;
	struct prof_doc d;

	merge_ok(files, "a", &d);
	ck_assert_int_eq(d.nfiles, 3);
	ck_assert_uint_eq(d.n, 4);
	ck_assert_str_eq(d.keys[0].id, "a.x");            /* c's place, a's value */
	ck_assert_str_eq(d.keys[0].vals[0], "10");
	ck_assert_str_eq(d.keys[0].loc.file, "a.conf");
	ck_assert_str_eq(d.keys[1].id, "b.x");
	ck_assert_str_eq(d.keys[1].vals[0], "20");
	ck_assert_int_eq(d.keys[1].on_drift, PROF_DRIFT_RESTORE);   /* its own */
	ck_assert_ptr_null(key(&d, "c.x"));                          /* removed by b */
	ck_assert_str_eq(d.keys[2].id, "d.x");
	ck_assert_str_eq(d.keys[3].id, "hugepages.2M.total");        /* 2048kB is 2M */
	ck_assert_int_eq(d.on_drift, PROF_DRIFT_YIELD);              /* c's, nobody nearer says */
	ck_assert_int_eq(d.keys[0].on_drift, PROF_DRIFT_YIELD);
	prof_doc_free(&d);
	merge_ok(files, "plain", &d);
	ck_assert_int_eq(d.on_drift, PROF_DRIFT_REPORT);            /* nobody says: report */
	ck_assert_ptr_nonnull(k = key(&d, "z.x"));
	ck_assert_int_eq(k->on_drift, PROF_DRIFT_REPORT);
	prof_doc_free(&d);
}
END_TEST

START_TEST(include_errors)
{
	const char *const files[] = {
		"loop1", "[profile]\ninclude = loop2\n",
		"loop2", "# two\n[profile]\ninclude  =  loop1\n",
		"self", "[profile]\ninclude = self\n",
		"missing", "[profile]\ninclude = nothere\n",
		"escape", "[profile]\ninclude = ../etc/x\n",
		"abs", "[profile]\ninclude = /etc/passwd\n",
		"rm", "[profile]\ninclude = plain\n[knobs]\n  -zz.y\n",
		"plain", "[knobs]\nz.x = 1\n",
		"d1", "[profile]\ninclude = d2\n", "d2", "[profile]\ninclude = d3\n", "d3", "[profile]\ninclude = d4\n",
		"d4", "[profile]\ninclude = d5\n", "d5", "[profile]\ninclude = d6\n", "d6", "[profile]\ninclude = d7\n",
		"d7", "[profile]\ninclude = d8\n", "d8", "[profile]\ninclude = d9\n", "d9", "[knobs]\na.b = 1\n",
		NULL };
	struct prof_doc d;

	merge_fails(files, "loop1", MPE_PROFILE_INCLUDE_LOOP, "loop2.conf", 3, 13);
	merge_fails(files, "self", MPE_PROFILE_INCLUDE_LOOP, "self.conf", 2, 11);
	merge_fails(files, "missing", MPE_PROFILE_INCLUDE_MISSING, "missing.conf", 2, 11);
	merge_fails(files, "escape", MPE_PROFILE_INCLUDE_ESCAPE, "escape.conf", 2, 11);
	merge_fails(files, "abs", MPE_PROFILE_SYNTAX, "abs.conf", 2, 11);
	merge_fails(files, "rm", MPE_PROFILE_REMOVE_UNSET, "rm.conf", 4, 3);
	merge_fails(files, "d1", MPE_PROFILE_LIMIT, "d8.conf", 2, 11);
	merge_ok(files, "d2", &d);    /* 8 files: the limit itself is fine */
	ck_assert_int_eq(d.nfiles, 8);
	prof_doc_free(&d);
}
END_TEST

/* A file of keys "pN = N" for N in [from, to), after a [knobs] line (and an include, if any). */
static char *many_keys(const char *include, int from, int to)
{
	size_t cap = 64 + (size_t)(to - from) * 24, off;
	char *t = malloc(cap);

	off = (size_t)snprintf(t, cap, "%s%s%s[knobs]\n", include ? "[profile]\ninclude = " : "", include ? include : "",
			       include ? "\n" : "");
	for (int i = from; i < to; i++)
		off += (size_t)snprintf(t + off, cap - off, "p%d = %d\n", i, i);
	return t;
}

/* Keys are kept whole across the growth of the arrays that hold them (a file's and the merged
 * document's grow as keys come, up to PROF_KEYS_MAX): 150 keys of a base and 106 of its includer,
 * 40 of them the base's again, make 216 in first-appearance order with the includer's values; one
 * key more than the limit in the merged document is refused at that key. */
START_TEST(many_keys_merge_in_order_to_the_limit)
{
	char *base = many_keys(NULL, 0, 150), *top = many_keys("base", 110, 216), *over = many_keys("full", 300, 301);
	char *full = many_keys("base", 150, 256);
	const char *const files[] = { "base", base, "top", top, "full", full, "over", over, NULL };
	struct prof_doc d;

	/* p110..p149 are top.conf's: its keys replace base's in place */
	merge_ok(files, "top", &d);
	ck_assert_uint_eq(d.n, 216);
	for (size_t i = 0; i < d.n; i++) {
		char id[32];
		snprintf(id, sizeof id, "p%zu", i);
		ck_assert_str_eq(d.keys[i].id, id);
		ck_assert_str_eq(d.keys[i].vals[0], id + 1);
		ck_assert_str_eq(d.keys[i].loc.file, i < 110 ? "base.conf" : "top.conf");
	}
	prof_doc_free(&d);
	merge_ok(files, "full", &d);   /* exactly PROF_KEYS_MAX */
	ck_assert_uint_eq(d.n, PROF_KEYS_MAX);
	ck_assert_str_eq(d.keys[PROF_KEYS_MAX - 1].id, "p255");
	prof_doc_free(&d);
	merge_fails(files, "over", MPE_PROFILE_LIMIT, "over.conf", 4, 1);
	free(base);
	free(top);
	free(full);
	free(over);
}
END_TEST

/* One file's text that must fail with code at line:col (the file is "t.conf"). */
static void parse_fails(const char *text, size_t len, enum mp_code code, unsigned line, unsigned col)
{
	struct prof_err e = { 0 };
	struct prof_file f;
	char where[64];

	ck_assert_msg(prof_parse("t.conf", text, len, &f, &e) == -1, "parsed: %s", text);
	ck_assert_msg(e.e.code == code && e.loc.line == line && e.loc.col == col,
		      "'%s': got %s at %u:%u (%s), want %s at %u:%u", text, mp_code_name(e.e.code), e.loc.line,
		      e.loc.col, e.e.detail, mp_code_name(code), line, col);
	snprintf(where, sizeof where, "t.conf:%u:%u: ", line, col);
	ck_assert_msg(!strncmp(e.e.detail, where, strlen(where)), "%s", e.e.detail);
	prof_file_free(&f);
}

#define FAILS(text, code, line, col) parse_fails(text, sizeof text - 1, MPE_PROFILE_##code, line, col)

START_TEST(parse_errors)
{
	FAILS("thp.enabled = madvise\n", SYNTAX, 1, 1);                  /* no section yet */
	FAILS("[knobs]\nthp.enabled madvise\n", SYNTAX, 2, 13);          /* no comparator */
	FAILS("[knobs]\nthp.enabled => 1\n", SYNTAX, 2, 14);
	FAILS("[knobs]\nthp.enabled =\n", SYNTAX, 2, 14);                /* no value */
	FAILS("[knobs]\nthp.enabled = a b\n", SYNTAX, 2, 17);            /* two words */
	FAILS("[knobs]\nthp.enabled = a|\n", SYNTAX, 2, 17);             /* empty alternative */
	FAILS("[knobs]\nthp.enabled = \"a\"\n", SYNTAX, 2, 15);
	FAILS("[knobs]\nx.y = 1 ; sticky\n", SYNTAX, 2, 11);             /* unknown option */
	FAILS("[knobs]\nx.y = 1 ; required ; required\n", SYNTAX, 2, 22);
	FAILS("[knobs]\nx.y = 1 ; on-drift = never\n", BAD_VALUE, 2, 22);
	FAILS("[knobs]\nx.y = 1 ; on-drift report\n", SYNTAX, 2, 20);
	FAILS("[knobs]\nx.y >= big\n", BAD_VALUE, 2, 8);                 /* a comparator needs a number */
	FAILS("[knobs]\nx.y <= 1|2\n", BAD_VALUE, 2, 8);                 /* alternatives only with '=' */
	FAILS("[knobs]\nx.y = 1\n\nx.y = 2\n", DUPLICATE_KEY, 4, 1);
	FAILS("[knobs]\nx.y = 1\n-x.y\n", DUPLICATE_KEY, 3, 1);
	FAILS("[knobs]\n_x = 1\n", UNKNOWN_KEY, 2, 1);
	FAILS("[knobs\n", SYNTAX, 1, 7);
	FAILS("[ ]\n", SYNTAX, 1, 3);
	FAILS("[knobs] x\n", SYNTAX, 1, 9);
	FAILS("[knobs extra]\n", SYNTAX, 1, 8);
	FAILS("[sysctl]\n", UNKNOWN_SECTION, 1, 2);
	FAILS("[hugepages.3Q]\n", UNKNOWN_SECTION, 1, 12);
	FAILS("[hugepages.0]\n", UNKNOWN_SECTION, 1, 12);
	FAILS("[cgroup]\n", SYNTAX, 1, 8);
	FAILS("[hugepages.2M]\nnodeX = 1\n", UNKNOWN_KEY, 2, 1);
	FAILS("[hugepages.2M]\nnode01 = 1\n", UNKNOWN_KEY, 2, 1);
	FAILS("[hugepages.2M]\nfree = 1\n", UNKNOWN_KEY, 2, 1);
	FAILS("[hugepages.2M]\nnode0 = lots\n", BAD_VALUE, 2, 9);
	FAILS("[hugepages.2M]\nnode0 = 1|2\n", BAD_VALUE, 2, 9);
	FAILS("[hugepages.2M]\ntotal = -1\n", BAD_VALUE, 2, 9);
	FAILS("[hugepages.2M]\ntotal = 99999999999999999999\n", BAD_VALUE, 2, 9);
	FAILS("[cgroup a.slice]\ncpus = 0\n", UNKNOWN_KEY, 2, 1);
	FAILS("[cgroup a.slice]\nmems = 0-\n", BAD_VALUE, 2, 8);
	FAILS("[cgroup a.slice]\nmems >= 1\n", BAD_VALUE, 2, 6);
	FAILS("[profile]\nfoo = 1\n", UNKNOWN_KEY, 2, 1);
	FAILS("[profile]\non-drift = sometimes\n", BAD_VALUE, 2, 12);
	FAILS("[profile]\non-drift = report\non-drift = yield\n", DUPLICATE_KEY, 3, 1);
	FAILS("[profile]\ninclude = a\ninclude = b\n", DUPLICATE_KEY, 3, 1);
	FAILS("[profile]\ninclude = .hidden\n", INCLUDE_ESCAPE, 2, 11);
	FAILS("[profile]\ninclude = a b\n", SYNTAX, 2, 13);
	FAILS("[profile]\n-include\n", SYNTAX, 2, 1);
	FAILS("[profile]\ninclude >= a\n", SYNTAX, 2, 9);
	FAILS("[knobs]\nx.y = 1\x01\n", SYNTAX, 2, 8);
	parse_fails("[knobs]\nx.y = 1\0 # hidden\n", 22, MPE_PROFILE_SYNTAX, 2, 8);
}
END_TEST

START_TEST(parse_limits)
{
	size_t big = PROF_FILE_MAX + 2;
	char *text = malloc(big);
	struct prof_err e = { 0 };
	struct prof_file f;
	size_t off = 0;

	/* a line over PROF_LINE_MAX (a comment too) */
	memset(text, '#', big);
	parse_fails(text, PROF_LINE_MAX + 1, MPE_PROFILE_LIMIT, 1, PROF_LINE_MAX + 1);
	ck_assert_int_eq(prof_parse("t.conf", text, PROF_LINE_MAX, &f, &e), 0);   /* exactly the limit */
	prof_file_free(&f);
	/* a file over PROF_FILE_MAX */
	memset(text, '\n', big);
	ck_assert_int_eq(prof_parse("t.conf", text, PROF_FILE_MAX + 1, &f, &e), -1);
	ck_assert_int_eq(e.e.code, MPE_PROFILE_LIMIT);
	prof_file_free(&f);
	/* more than PROF_KEYS_MAX keys */
	off = (size_t)snprintf(text, big, "[knobs]\n");
	for (int i = 0; i <= PROF_KEYS_MAX; i++)
		off += (size_t)snprintf(text + off, big - off, "k%d = 1\n", i);
	parse_fails(text, off, MPE_PROFILE_LIMIT, PROF_KEYS_MAX + 2, 1);
	/* more than PROF_ALTS_MAX alternatives; a value over PROF_VALUE_MAX */
	FAILS("[knobs]\nx = 1|2|3|4|5|6|7|8|9\n", LIMIT, 2, 21);
	off = (size_t)snprintf(text, big, "[knobs]\nx = ");
	memset(text + off, 'v', PROF_VALUE_MAX);
	parse_fails(text, off + PROF_VALUE_MAX, MPE_PROFILE_LIMIT, 2, 5);
	free(text);
}
END_TEST

START_TEST(parse_accepts)
{
	static const char text[] =
		"\t# leading tab comment\r\n"
		"[ knobs ]   # spaced header\r\n"
		"x.y=1|2#no space before the comment\n"
		"  z.w   <=   7   ;required;on-drift=yield\n"
		"[hugepages.1GB]\n"
		"node12 >= 0\n"
		"[cgroup a/b.scope]\n"
		"mems = 0,2-3";   /* no final newline */
	struct prof_err e = { 0 };
	struct prof_file f;

	ck_assert_msg(prof_parse("t.conf", text, sizeof text - 1, &f, &e) == 0, "%s", e.e.detail);
	ck_assert_uint_eq(f.n, 4);
	ck_assert_int_eq(f.keys[0].nvals, 2);
	ck_assert_int_eq(f.keys[1].cmp, PROF_LE);
	ck_assert(f.keys[1].required);
	ck_assert_int_eq(f.keys[1].on_drift, PROF_DRIFT_YIELD);
	ck_assert_uint_eq(f.keys[1].loc.col, 3);
	ck_assert_str_eq(f.keys[2].id, "hugepages.1G.node12");
	ck_assert_str_eq(f.keys[3].id, "cgroup[a/b.scope].mems");
	prof_file_free(&f);
}
END_TEST

/* A directory laid out as the kubelet lays out a ConfigMap volume (dir), and a plain one with
 * links that leave it (plain). */
static char dir[96], plain[96], outside[128];

static void link_in(const char *d, const char *target, const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", d, name);
	ck_assert_int_eq(symlink(target, path), 0);
}

static void make_dirs(void)
{
	snprintf(root, sizeof root, "/tmp/mpd-prof-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(dir, sizeof dir, "%s/profiles.d", root);
	snprintf(plain, sizeof plain, "%s/plain.d", root);
	snprintf(outside, sizeof outside, "%s/outside.conf", root);
	put(root, "profiles.d/..2026_12_01_10_00_00.123456789/db.conf", DB_CONF);
	put(root, "profiles.d/..2026_12_01_10_00_00.123456789/base.conf", BASE_CONF);
	put(root, "outside.conf", "[knobs]\nthp.enabled = never");
	link_in(dir, "..2026_12_01_10_00_00.123456789", "..data");
	link_in(dir, "..data/db.conf", "db.conf");
	link_in(dir, "..data/base.conf", "base.conf");
	/* Beside ..data, a file that is not the volume's: never read (the set is ..data's). */
	put(root, "profiles.d/stray.conf", "[knobs]\nthp.enabled = never");
	put(root, "plain.d/base.conf", BASE_CONF);
	link_in(plain, "../outside.conf", "rel-escape.conf");
	link_in(plain, outside, "abs-escape.conf");
	put(root, "plain.d/inc-escape.conf", "[profile]\ninclude = rel-escape");
	put(root, "plain.d/.hidden.conf", "[knobs]\nx = 1");
	put(root, "trap.d/..data/trap.conf", "[knobs]\nx = 1");   /* a directory ..data: not the kubelet's */
}

static void drop_dirs(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

/* A file is read whole whatever its size up to PROF_FILE_MAX (the buffer is sized by fstat, not
 * the limit's 64 KiB each time), and one byte more is refused. */
START_TEST(file_sizes_to_the_limit)
{
	struct prof_dir pd = { .path = plain };
	struct prof_err e = { 0 };
	static char text[PROF_FILE_MAX + 2];
	char path[160], *got = NULL;
	size_t len = 0;
	FILE *f;

	for (size_t size = 1; size <= PROF_FILE_MAX + 1; size = size < 4096 ? size * 8 : size == PROF_FILE_MAX ? size + 1
			     : PROF_FILE_MAX) {
		memset(text, '#', size);
		text[size - 1] = '\n';
		snprintf(path, sizeof path, "%s/sized.conf", plain);
		ck_assert_ptr_nonnull(f = fopen(path, "w"));
		ck_assert_uint_eq(fwrite(text, 1, size, f), size);
		fclose(f);
		int rc = prof_dir_load(&pd, "sized", NULL, &got, &len, &e);
		if (size > PROF_FILE_MAX) {
			ck_assert_int_eq(rc, -1);
			ck_assert_int_eq(e.e.code, MPE_PROFILE_LIMIT);
			break;
		}
		ck_assert_msg(rc == 0, "%zu bytes: %s", size, e.e.detail);
		ck_assert_uint_eq(len, size);
		ck_assert(!memcmp(got, text, size));
		free(got);
	}
}
END_TEST

START_TEST(configmap_layout)
{
	struct prof_dir pd = { .path = dir };
	struct prof_err e = { 0 };
	struct prof_doc d;
	char **names, snap[PROF_SNAP_MAX], trap[128];
	size_t n;

	ck_assert_int_eq(prof_dir_snapshot(dir, snap, sizeof snap), 1);
	ck_assert_str_eq(snap, "..2026_12_01_10_00_00.123456789");
	ck_assert_int_eq(prof_dir_list(dir, &names, &n), 0);
	ck_assert_uint_eq(n, 2);   /* ..data's files: not the stray file beside it, no dot entries */
	ck_assert_str_eq(names[0], "base");
	ck_assert_str_eq(names[1], "db");
	prof_dir_names_free(names, n);
	ck_assert_msg(prof_merge("db", prof_dir_load, &pd, &d, &e) == 0, "%s", e.e.detail);
	ck_assert_uint_eq(d.n, 11);
	ck_assert_str_eq(d.keys[0].loc.file, "db.conf");   /* the name in the directory, not ..data's */
	prof_doc_free(&d);
	ck_assert_int_eq(prof_merge("stray", prof_dir_load, &pd, &d, &e), -1);
	ck_assert_int_eq(e.e.code, MPE_PROFILE_NOT_FOUND);
	prof_doc_free(&d);
	/* A plain directory: no snapshot; one whose ..data is no symlink is refused. */
	ck_assert_int_eq(prof_dir_snapshot(plain, snap, sizeof snap), 0);
	snprintf(trap, sizeof trap, "%s/trap.d", root);
	ck_assert_int_eq(prof_dir_snapshot(trap, snap, sizeof snap), -EXDEV);
}
END_TEST

/* Merging `name` from the directory fails with code; the error's place into *at. */
static void dir_fails(const char *name, enum mp_code code, struct prof_loc *at)
{
	struct prof_dir pd = { .path = plain };
	struct prof_err e = { 0 };
	struct prof_doc d;

	ck_assert_int_eq(prof_merge(name, prof_dir_load, &pd, &d, &e), -1);
	ck_assert_msg(e.e.code == code, "%s: %s", name, e.e.detail);
	*at = e.loc;
	prof_doc_free(&d);
}

START_TEST(symlinks_out_refused)
{
	struct prof_loc at;
	char **names;
	size_t n;

	dir_fails("rel-escape", MPE_PROFILE_INCLUDE_ESCAPE, &at);
	dir_fails("abs-escape", MPE_PROFILE_INCLUDE_ESCAPE, &at);
	dir_fails("inc-escape", MPE_PROFILE_INCLUDE_ESCAPE, &at);   /* an include of an escaping link */
	ck_assert_str_eq(at.file, "inc-escape.conf");
	ck_assert_uint_eq(at.line, 2);
	ck_assert_uint_eq(at.col, 11);
	dir_fails("nothere", MPE_PROFILE_NOT_FOUND, &at);
	dir_fails("../outside", MPE_PROFILE_NOT_FOUND, &at);
	ck_assert_int_eq(prof_dir_list("/nonexistent-mpd-dir", &names, &n), -ENOENT);
}
END_TEST

/* The host check, on a generated tree: the catalogue's names, types and lists decide. */
static char sys_root[96], proc_root[96], hdir[128];

static void make_host(void)
{
	snprintf(root, sizeof root, "/tmp/mpd-profh-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(sys_root, sizeof sys_root, "%s/sys", root);
	snprintf(proc_root, sizeof proc_root, "%s/proc", root);
	snprintf(hdir, sizeof hdir, "%s/p", root);
	put(sys_root, "kernel/mm/transparent_hugepage/enabled", "always [madvise] never");
	put(sys_root, "kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never");
	/* no shmem_enabled: a kernel without it */
	put(sys_root, "kernel/mm/transparent_hugepage/khugepaged/pages_to_scan", "8192");
	put(sys_root, "kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "10");
	put(sys_root, "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "10");
	put(proc_root, "sys/kernel/numa_balancing", "1");
	put(root, "p/ok.conf", "[knobs]\nthp.enabled = madvise\nthp.defrag = defer|madvise\n"
	    "thp.khugepaged.pages_to_scan >= 4096\nnuma.balancing = 0\nthp.size.64kB.enabled = never\n"
	    "[hugepages.2M]\nnode0 = 10\nnode1 = 4\n[hugepages.1G]\ntotal = 1\n");
	put(root, "p/req.conf", "[knobs]\nthp.shmem_enabled = advise ; required\n");
	put(root, "p/unknown.conf", "[knobs]\nthp.enabled = madvise\n  thp.nonesuch = 1\n");
	put(root, "p/notallowed.conf", "[knobs]\nthp.enabled = sometimes\n");
	put(root, "p/range.conf", "[knobs]\nnuma.balancing = 4\n");
	put(root, "p/choicecmp.conf", "[knobs]\nthp.enabled >= 1\n");
	put(root, "p/cgpath.conf", "[cgroup a/../b]\nmems = 0\n");
}

static const char *verdict(json_t *out, const char *id)
{
	size_t i;
	json_t *k;
	json_array_foreach(json_object_get(out, "keys"), i, k)
		if (!strcmp(json_string_value(json_object_get(k, "key")), id))
			return json_string_value(json_object_get(k, "verdict"));
	return "(absent)";
}

START_TEST(host_check)
{
	struct app app = { .sysfs_root = sys_root, .procfs_root = proc_root, .profiles_dir = hdir };
	static const struct { const char *name; enum mp_code code; unsigned line, col; } bad[] = {
		{ "unknown", MPE_PROFILE_UNKNOWN_KEY, 3, 3 },
		{ "notallowed", MPE_PROFILE_BAD_VALUE, 2, 1 },
		{ "range", MPE_PROFILE_BAD_VALUE, 2, 1 },
		{ "choicecmp", MPE_PROFILE_BAD_VALUE, 2, 1 },
		{ "cgpath", MPE_PROFILE_BAD_VALUE, 2, 1 },
	};
	struct prof_err pe = { 0 };
	char now[64];
	json_t *out;

	ck_assert_ptr_nonnull(app.knobs = knobs_build(sys_root, proc_root));
	ck_assert_msg(profiles_diff(&app, "ok", &out, &pe) == 0, "%s", pe.e.detail);
	ck_assert_str_eq(json_string_value(json_object_get(out, "state")), "ok");
	ck_assert_str_eq(verdict(out, "thp.enabled"), "in_sync");
	ck_assert_str_eq(verdict(out, "thp.defrag"), "in_sync");                 /* either alternative */
	ck_assert_str_eq(verdict(out, "thp.khugepaged.pages_to_scan"), "in_sync"); /* 8192 >= 4096 */
	ck_assert_str_eq(verdict(out, "numa.balancing"), "differs");
	ck_assert_str_eq(verdict(out, "thp.size.64kB.enabled"), "unsupported");
	ck_assert_str_eq(verdict(out, "hugepages.2M.node0"), "in_sync");
	ck_assert_str_eq(verdict(out, "hugepages.2M.node1"), "unsupported");     /* a node the host lacks */
	ck_assert_str_eq(verdict(out, "hugepages.1G.total"), "unsupported");     /* a size the host lacks */
	json_decref(out);
	ck_assert_int_eq(profiles_diff(&app, "req", &out, &pe), 0);
	ck_assert_str_eq(json_string_value(json_object_get(out, "state")), "degraded");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(out, "reasons"), 0)), "unsupported_required");
	json_decref(out);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&pe, 0, sizeof pe);
		ck_assert_int_eq(profiles_show(&app, bad[i].name, &out, &pe), -1);
		ck_assert_msg(pe.e.code == bad[i].code && pe.loc.line == bad[i].line && pe.loc.col == bad[i].col,
			      "%s: %s at %u:%u (%s)", bad[i].name, mp_code_name(pe.e.code), pe.loc.line, pe.loc.col,
			      pe.e.detail);
	}
	/* a dry run: nothing written */
	get(proc_root, "sys/kernel/numa_balancing", now, sizeof now);
	ck_assert_str_eq(now, "1");
	knobs_free(app.knobs);
}
END_TEST

START_TEST(missing_directory)
{
	struct app app = { .sysfs_root = "/nonexistent", .procfs_root = "/nonexistent",
			   .profiles_dir = "/nonexistent-mpd-profiles.d", .profiles_dir_default = true };
	struct prof_err pe = { 0 };
	json_t *out;

	/* the default directory missing: no profiles, and a name is simply not found */
	ck_assert_int_eq(profiles_list(&app, &out, &pe), 0);
	ck_assert_uint_eq(json_array_size(json_object_get(out, "profiles")), 0);
	json_decref(out);
	ck_assert_int_eq(profiles_show(&app, "db", &out, &pe), -1);
	ck_assert_int_eq(pe.e.code, MPE_PROFILE_NOT_FOUND);
	/* a directory given by the option and missing: an error of its own */
	app.profiles_dir_default = false;
	ck_assert_int_eq(profiles_list(&app, &out, &pe), -1);
	ck_assert_int_eq(pe.e.code, MPE_PROFILE_UNREADABLE);
	ck_assert_int_eq(pe.e.sys_errno, ENOENT);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("profiles");
	TCase *p = tcase_create("parse_merge"), *d = tcase_create("dir"), *h = tcase_create("host");

	tcase_add_test(p, example_verbatim);
	tcase_add_test(p, merge_rules);
	tcase_add_test(p, include_errors);
	tcase_add_test(p, many_keys_merge_in_order_to_the_limit);
	tcase_add_test(p, parse_errors);
	tcase_add_test(p, parse_limits);
	tcase_add_test(p, parse_accepts);
	tcase_add_checked_fixture(d, make_dirs, drop_dirs);
	tcase_add_test(d, configmap_layout);
	tcase_add_test(d, file_sizes_to_the_limit);
	tcase_add_test(d, symlinks_out_refused);
	tcase_add_test(d, missing_directory);
	tcase_add_checked_fixture(h, make_host, drop_dirs);
	tcase_add_test(h, host_check);
	suite_add_tcase(s, p);
	suite_add_tcase(s, d);
	suite_add_tcase(s, h);
	return s;
}

MPD_CHECK_MAIN(suite)
