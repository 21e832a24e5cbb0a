/* The kubelet's atomic writer (kubernetes pkg/volume/util/atomic_writer.go, AtomicWriter.Write)
 * as a test harness: the same system calls on a directory, in the same order, with a call back
 * after each one so that a test can look at the directory at every step of a swap.
 *
 *  1. mkdir "..YYYY_MM_DD_HH_MM_SS.NNNNNNNNN" (os.MkdirTemp with the time as prefix: Go appends
 *     a random decimal number), chmod 0755
 *  2. each file written into it, then chmod
 *  3. the user-visible links NAME -> ..data/NAME, for names that have none yet
 *     (KUBELET_LINKS_BEFORE: the order of kubernetes commit 19e8ce7, in which a new link exists
 *     before its target does, kubernetes #93686)
 *  4. readlink ..data (the old swap)
 *  5. symlink "..data_tmp" -> the new directory
 *  6. rename "..data_tmp" over "..data" (the atomic swap)
 *  7. the user-visible links (KUBELET_LINKS_AFTER: made after the swap, the later order)
 *  8. the user-visible names no longer in the payload removed
 *  9. the old directory removed (os.RemoveAll)
 * A header of static functions: each test program that includes it is its own binary. */
#ifndef MPD_TESTS_KUBELET_H
#define MPD_TESTS_KUBELET_H

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The paths are the test's own, under PATH_MAX: gcc cannot know that of a d_name. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

enum kubelet_order { KUBELET_LINKS_BEFORE, KUBELET_LINKS_AFTER };

struct kubelet_file {
	const char *name;            /* "db.conf" */
	const char *text;
};

/* Called after each system call: step is 1..9 as above, what says which call. */
typedef void (*kubelet_step_fn)(void *ctx, int step, const char *what);

static void kubelet_call(kubelet_step_fn cb, void *ctx, int step, const char *fmt, const char *arg)
{
	char what[256];

	snprintf(what, sizeof what, fmt, arg);
	if (cb)
		cb(ctx, step, what);
}

static int kubelet_links(const char *dir, const struct kubelet_file *f, size_t n, int step, kubelet_step_fn cb,
			 void *ctx)
{
	char path[PATH_MAX], target[300], buf[300];

	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, f[i].name);
		if (readlink(path, buf, sizeof buf) >= 0 || errno != ENOENT)
			continue;   /* the link is there already */
		snprintf(target, sizeof target, "..data/%s", f[i].name);
		if (symlink(target, path) < 0)
			return -1;
		kubelet_call(cb, ctx, step, "symlink %s", f[i].name);
	}
	return 0;
}

static int kubelet_rmtree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char sub[PATH_MAX];

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
		unlink(sub);
	}
	closedir(d);
	return rmdir(path);
}

/* One Write of the payload files[n] into dir. 0, or -1 with errno. */
static int kubelet_write(const char *dir, const struct kubelet_file *files, size_t n, enum kubelet_order order,
			 kubelet_step_fn cb, void *ctx)
{
	static unsigned seq;
	char ts[128], tsdir[PATH_MAX], path[PATH_MAX], old[300] = "", tmp[PATH_MAX], data[PATH_MAX];
	time_t now = time(NULL);
	struct tm tm;
	DIR *d;
	struct dirent *de;
	ssize_t l;

	/* 1 */
	gmtime_r(&now, &tm);
	strftime(ts, 64, "..%Y_%m_%d_%H_%M_%S.", &tm);
	snprintf(ts + strlen(ts), sizeof ts - strlen(ts), "%09u", 100000000u + (unsigned)getpid() * 1000u + ++seq);
	snprintf(tsdir, sizeof tsdir, "%s/%s", dir, ts);
	if (mkdir(tsdir, 0700) < 0 || chmod(tsdir, 0755) < 0)
		return -1;
	kubelet_call(cb, ctx, 1, "mkdir %s", ts);
	/* 2 */
	for (size_t i = 0; i < n; i++) {
		int fd;
		snprintf(path, sizeof path, "%s/%s", tsdir, files[i].name);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
			return -1;
		if (write(fd, files[i].text, strlen(files[i].text)) != (ssize_t)strlen(files[i].text)) {
			close(fd);
			return -1;
		}
		close(fd);
		if (chmod(path, 0644) < 0)
			return -1;
		kubelet_call(cb, ctx, 2, "write %s", files[i].name);
	}
	/* 3 */
	if (order == KUBELET_LINKS_BEFORE && kubelet_links(dir, files, n, 3, cb, ctx) < 0)
		return -1;
	/* 4 */
	snprintf(data, sizeof data, "%s/..data", dir);
	if ((l = readlink(data, old, sizeof old - 1)) >= 0)
		old[l] = '\0';
	else if (errno != ENOENT)
		return -1;
	/* 5, 6 */
	snprintf(tmp, sizeof tmp, "%s/..data_tmp", dir);
	if (symlink(ts, tmp) < 0)
		return -1;
	kubelet_call(cb, ctx, 5, "symlink ..data_tmp -> %s", ts);
	if (rename(tmp, data) < 0)
		return -1;
	kubelet_call(cb, ctx, 6, "rename ..data_tmp over ..data (now %s)", ts);
	/* 7 */
	if (order == KUBELET_LINKS_AFTER && kubelet_links(dir, files, n, 7, cb, ctx) < 0)
		return -1;
	/* 8: user-visible names (not "..") that the payload no longer has */
	if (!(d = opendir(dir)))
		return -1;
	while ((de = readdir(d))) {
		bool keep = !strncmp(de->d_name, "..", 2) || !strcmp(de->d_name, ".");
		for (size_t i = 0; i < n && !keep; i++)
			keep = !strcmp(de->d_name, files[i].name);
		if (keep)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (unlink(path) == 0)
			kubelet_call(cb, ctx, 8, "remove %s", de->d_name);
	}
	closedir(d);
	/* 9 */
	if (old[0]) {
		snprintf(path, sizeof path, "%s/%s", dir, old);
		if (kubelet_rmtree(path) < 0)
			return -1;
		kubelet_call(cb, ctx, 9, "remove %s", old);
	}
	return 0;
}

#endif
