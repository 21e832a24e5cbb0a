/* The profiles directory's watch and reload decision (profiles/watch.c, ops/profile_reload.c)
 * driven by the kubelet's own sequence of system calls (tests/unit/kubelet.h), in both of its
 * orders: the watch is read after every single call (inotify queues an event when the call
 * returns, so this is deterministic), and a swap is a change exactly once, at the rename over
 * ..data; the set read then is the new swap's whole set (a profile whose user-visible link is
 * not made yet included), and at every step before it the directory reads as the old set. A
 * broken set is refused with its file:line:column; plain-directory edits are changes when a
 * file is complete. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/app.h"
#include "server/kernel/knobs.h"
#include "server/ops/profile_reload.h"
#include "server/profiles/dir.h"
#include "server/profiles/watch.h"
#include "tests/unit/check_main.h"

static char root[64];

#include "tests/unit/kubelet.h"
#include "tests/unit/tree.h"

/* tree.h's reader: this test reads the directory, not the tree. */
static void (*const unused_get)(const char *, const char *, char *, size_t) __attribute__((unused)) = get;

static char sys_root[96], proc_root[96], pdir[96];
static struct app app;

static const char BASE[] = "[knobs]\nthp.enabled = madvise\n";
static const char DB[] = "[profile]\ninclude = base\n[knobs]\nthp.defrag = defer|madvise\n";
static const char EXTRA[] = "[knobs]\nthp.enabled = never\n";
/* line 3: "sometimes" is not in the knob's list */
static const char BROKEN[] = "# the base, broken\n[knobs]\nthp.enabled = sometimes\n";

static void make_host(void)
{
	snprintf(root, sizeof root, "/tmp/mpd-pwatch-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(sys_root, sizeof sys_root, "%s/sys", root);
	snprintf(proc_root, sizeof proc_root, "%s/proc", root);
	snprintf(pdir, sizeof pdir, "%s/p", root);
	put(sys_root, "kernel/mm/transparent_hugepage/enabled", "always [madvise] never");
	put(sys_root, "kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never");
	put(proc_root, "sys/kernel/numa_balancing", "1");
	ck_assert_int_eq(mkdir(pdir, 0755), 0);
	memset(&app, 0, sizeof app);
	app.sysfs_root = sys_root;
	app.procfs_root = proc_root;
	app.profiles_dir = pdir;
	ck_assert_ptr_nonnull(app.knobs = knobs_build(sys_root, proc_root));
}

static void drop_host(void)
{
	char cmd[128];
	knobs_free(app.knobs);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

/* What one swap looked like from the watch. */
struct seen {
	struct prof_watch *w;
	const char *active;
	int changes, change_step;
	char change_what[256];
	struct reload_verdict v;     /* the set read at the change, from its pinned swap */
	size_t old_n;                /* the set's size before the swap: every step before it reads so */
	int reads_before;            /* steps before the rename at which the set read old_n profiles */
	int steps_before;
};

static void on_step(void *ctx, int step, const char *what)
{
	struct seen *s = ctx;
	struct prof_change c;

	ck_assert_int_eq(prof_watch_read(s->w, &c), 0);
	ck_assert_msg(!c.lost, "the watch was lost at step %d (%s)", step, what);
	if (step < 6) {
		char **names;
		size_t n;
		/* A half-made swap: what a read finds now is the old set, whole. */
		if (s->old_n && prof_dir_list(pdir, &names, &n) == 0) {
			s->reads_before += n == s->old_n;
			prof_dir_names_free(names, n);
		}
		/* The volume's first write has no old set: with the links made first its directory is
		 * plain and holds dangling links until ..data exists, which nothing reads (no change). */
		s->steps_before += s->old_n > 0;
	}
	if (!c.changed)
		return;
	ck_assert(c.configmap);
	s->changes++;
	s->change_step = step;
	snprintf(s->change_what, sizeof s->change_what, "%s", what);
	{
		struct prof_dir d = { .path = pdir, .snap = c.snap };
		ck_assert_int_eq(profile_reload_check(&app, &d, s->active, &s->v), 0);
		ck_assert(prof_watch_still(s->w, c.snap));
	}
}

static void swap(struct prof_watch *w, enum kubelet_order order, const struct kubelet_file *f, size_t n,
		 const char *active, size_t old_n, struct seen *s)
{
	memset(s, 0, sizeof *s);
	s->w = w;
	s->active = active;
	s->old_n = old_n;
	ck_assert_int_eq(kubelet_write(pdir, f, n, order, on_step, s), 0);
	ck_assert_msg(s->changes == 1, "%d changes for one swap (last at step %d: %s)", s->changes, s->change_step,
		      s->change_what);
	ck_assert_msg(s->change_step == 6, "the change came at step %d (%s), not at the rename", s->change_step,
		      s->change_what);
	ck_assert_int_eq(s->reads_before, s->steps_before);
}

static void swaps_in_order(enum kubelet_order order)
{
	const struct kubelet_file v1[] = { { "base.conf", BASE }, { "db.conf", DB } };
	const struct kubelet_file v2[] = { { "base.conf", BASE }, { "db.conf", DB }, { "extra.conf", EXTRA } };
	const struct kubelet_file v3[] = { { "base.conf", BROKEN }, { "db.conf", DB }, { "extra.conf", EXTRA } };
	const struct kubelet_file v4[] = { { "base.conf", BASE }, { "extra.conf", EXTRA } };
	struct prof_watch *w;
	struct prof_change c;
	struct seen s;
	int err = 0;

	ck_assert_ptr_nonnull(w = prof_watch_open(pdir, &err));
	/* The volume's first write. */
	swap(w, order, v1, 2, "db", 0, &s);
	ck_assert_msg(s.v.ok, "%s", s.v.err.e.detail);
	ck_assert_uint_eq(s.v.nprofiles, 2);
	ck_assert_str_eq(s.v.activate, "db");
	/* A profile added: the set read at the rename has it, though (KUBELET_LINKS_AFTER) its
	 * extra.conf link is not made yet, and (KUBELET_LINKS_BEFORE) its link made before the swap
	 * dangled and was read by nobody. */
	swap(w, order, v2, 3, "db", 2, &s);
	ck_assert_msg(s.v.ok, "%s", s.v.err.e.detail);
	ck_assert_uint_eq(s.v.nprofiles, 3);
	/* A broken base: the set is refused, with the place; nothing to activate. */
	swap(w, order, v3, 3, "db", 3, &s);
	ck_assert(!s.v.ok);
	ck_assert_str_eq(s.v.invalid, "base");
	ck_assert_int_eq(s.v.err.e.code, MPE_PROFILE_BAD_VALUE);
	ck_assert_str_eq(s.v.err.loc.file, "base.conf");
	ck_assert_uint_eq(s.v.err.loc.line, 3);
	ck_assert_msg(strstr(s.v.err.e.detail, "base.conf:3:"), "%s", s.v.err.e.detail);
	ck_assert_str_eq(s.v.activate, "");
	/* The profile in force removed from the set: refused too. */
	swap(w, order, v4, 2, "db", 3, &s);
	ck_assert(!s.v.ok);
	ck_assert_int_eq(s.v.err.e.code, MPE_PROFILE_NOT_FOUND);
	ck_assert_str_eq(s.v.invalid, "db");
	/* Nothing after the last swap: no change left over. */
	ck_assert_int_eq(prof_watch_read(w, &c), 0);
	ck_assert(!c.changed);
	prof_watch_close(w);
}

START_TEST(kubelet_links_before_swap)
{
	swaps_in_order(KUBELET_LINKS_BEFORE);
}
END_TEST

START_TEST(kubelet_links_after_swap)
{
	swaps_in_order(KUBELET_LINKS_AFTER);
}
END_TEST

/* Whether the events that wait are a change. */
static bool changed(struct prof_watch *w)
{
	struct prof_change c;
	ck_assert_int_eq(prof_watch_read(w, &c), 0);
	ck_assert(!c.configmap);
	return c.changed;
}

START_TEST(plain_directory_edits)
{
	char path[256], tmp[256];
	struct prof_watch *w;
	FILE *f;
	int err = 0;

	ck_assert_ptr_nonnull(w = prof_watch_open(pdir, &err));
	snprintf(path, sizeof path, "%s/base.conf", pdir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	ck_assert(!changed(w));                 /* made, empty: not a change yet */
	fputs(BASE, f);
	fflush(f);
	ck_assert(!changed(w));                 /* written, still open */
	fclose(f);
	ck_assert(changed(w));                  /* closed after writing */
	ck_assert(!changed(w));                 /* once */
	/* An editor's save: a temporary file renamed over. The temporary is no profile. */
	snprintf(tmp, sizeof tmp, "%s/.base.conf.swp", pdir);
	ck_assert_ptr_nonnull(f = fopen(tmp, "w"));
	fputs(BASE, f);
	fclose(f);
	ck_assert(!changed(w));
	ck_assert_int_eq(rename(tmp, path), 0);
	ck_assert(changed(w));
	/* A symlink made (complete when made), and one removed. */
	snprintf(tmp, sizeof tmp, "%s/db.conf", pdir);
	ck_assert_int_eq(symlink("base.conf", tmp), 0);
	ck_assert(changed(w));
	ck_assert_int_eq(unlink(tmp), 0);
	ck_assert(changed(w));
	/* Other files: not profiles. */
	snprintf(tmp, sizeof tmp, "%s/README", pdir);
	ck_assert_ptr_nonnull(f = fopen(tmp, "w"));
	fclose(f);
	ck_assert(!changed(w));
	prof_watch_close(w);
}
END_TEST

START_TEST(directory_removed_ends_the_watch)
{
	struct prof_watch *w;
	struct prof_change c;
	int err = 0;

	ck_assert_ptr_nonnull(w = prof_watch_open(pdir, &err));
	ck_assert_int_eq(rmdir(pdir), 0);
	ck_assert_int_eq(prof_watch_read(w, &c), 0);
	ck_assert(c.lost);
	prof_watch_close(w);
	ck_assert_ptr_null(prof_watch_open(pdir, &err));
	ck_assert_int_eq(err, -ENOENT);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("profile_watch");
	TCase *t = tcase_create("watch");

	tcase_add_checked_fixture(t, make_host, drop_host);
	tcase_add_test(t, kubelet_links_before_swap);
	tcase_add_test(t, kubelet_links_after_swap);
	tcase_add_test(t, plain_directory_edits);
	tcase_add_test(t, directory_removed_ends_the_watch);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
