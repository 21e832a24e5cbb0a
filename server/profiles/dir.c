#include "server/profiles/dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PROF_DIR_NAMES_MAX 1000
#define CM_DATA "..data"

/* prof_dir_snapshot of the directory open as dfd (the caller's). */
static int snapshot_at(int dfd, char *snap, size_t n)
{
	char buf[PROF_SNAP_MAX + 1];
	ssize_t l = readlinkat(dfd, CM_DATA, buf, sizeof buf);

	if (l < 0)
		/* EINVAL: "..data" is there and is no symlink (not the kubelet's: refused). */
		return errno == ENOENT ? 0 : errno == EINVAL ? -EXDEV : -errno;
	buf[l] = '\0';
	/* The kubelet's target is one entry of the directory named "..TIMESTAMP": nothing else is
	 * read (not "..", not a path, not a name that could be a profile). */
	if ((size_t)l >= sizeof buf - 1 || (size_t)l >= n || strncmp(buf, "..", 2) || !strcmp(buf, "..") ||
	    strchr(buf, '/'))
		return -EXDEV;
	memcpy(snap, buf, (size_t)l + 1);
	return 1;
}

int prof_dir_snapshot(const char *path, char *snap, size_t n)
{
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

	if (dfd < 0)
		return -errno;
	rc = snapshot_at(dfd, snap, n);
	close(dfd);
	return rc;
}

/* Where NAME.conf is read from, relative to the directory (open as dfd, or -1: opened here): the
 * pinned snapshot, "..data" in a ConfigMap volume, or the directory itself. 0 or -errno
 * (prof_dir_snapshot's). */
static int rel_prefix(const struct prof_dir *dir, int dfd, char *buf, size_t n)
{
	char snap[PROF_SNAP_MAX];
	int rc;

	if (dir->snap) {
		snprintf(buf, n, "%s/", dir->snap);
		return 0;
	}
	if ((rc = dfd >= 0 ? snapshot_at(dfd, snap, sizeof snap) : prof_dir_snapshot(dir->path, snap, sizeof snap)) < 0)
		return rc;
	snprintf(buf, n, "%s", rc ? CM_DATA "/" : "");
	return 0;
}

/* Without openat2 (before 5.6): the resolved path must still be inside the resolved directory. */
static int open_beneath_fallback(int dfd, const char *dir, const char *file)
{
	char rdir[PATH_MAX], joined[PATH_MAX], rfile[PATH_MAX];
	size_t n;

	if (!realpath(dir, rdir))
		return -errno;
	snprintf(joined, sizeof joined, "%s/%s", dir, file);
	if (!realpath(joined, rfile))
		return -errno;
	n = strlen(rdir);
	if (strncmp(rfile, rdir, n) || rfile[n] != '/')
		return -EXDEV;
	(void)dfd;
	return open(rfile, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
}

static int open_beneath(int dfd, const char *dir, const char *file)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dfd, file, &how, sizeof how);

	if (fd >= 0)
		return (int)fd;
	if (errno == ENOSYS)
		return open_beneath_fallback(dfd, dir, file);
	return -errno;
}

int prof_dir_load(void *dirp, const char *name, const struct prof_loc *from, char **text, size_t *len,
		  struct prof_err *err)
{
	const struct prof_dir *dir = dirp;
	struct prof_loc here = { .line = 0 };
	char file[PROF_FILE_NAME_MAX], prefix[PROF_SNAP_MAX + 2], rel[PROF_SNAP_MAX + PROF_FILE_NAME_MAX + 2];
	char *buf = NULL;            /* owned until handed over */
	struct stat sb;
	size_t got = 0;
	int dfd = -1, fd = -1, rc = -1;
	ssize_t r;

	snprintf(file, sizeof file, "%s.conf", name);
	snprintf(here.file, sizeof here.file, "%s", file);
	if (!from)
		from = &here;
	if (!prof_name_ok(name)) {
		prof_fail(err, from, MPE_PROFILE_NOT_FOUND, "'%s' is not a profile name", name);
		goto out;
	}
	/* A missing directory holds no profile: the same answer as a missing file. */
	if ((dfd = open(dir->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		fd = -errno;
	else if ((fd = rel_prefix(dir, dfd, prefix, sizeof prefix)) == 0) {
		snprintf(rel, sizeof rel, "%s%s", prefix, file);
		fd = open_beneath(dfd, dir->path, rel);
	}
	if (fd < 0) {
		if (dfd < 0 && fd != -ENOENT) {
			prof_fail(err, from, MPE_PROFILE_UNREADABLE, "the profiles directory %s: %s", dir->path,
				  strerror(-fd));
			goto out;
		}
		if (fd == -EXDEV)
			prof_fail(err, from, MPE_PROFILE_INCLUDE_ESCAPE,
				  "%s leads outside the profiles directory (a symlink to an absolute path or out of it)",
				  from == &here ? "the file" : file);
		else if (fd == -ENOENT)
			prof_fail(err, from, from == &here ? MPE_PROFILE_NOT_FOUND : MPE_PROFILE_INCLUDE_MISSING,
				  "no profile %s in the profiles directory", file);
		else
			prof_fail(err, from, MPE_PROFILE_UNREADABLE, "%s: %s", file, strerror(-fd));
		goto out;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		prof_fail(err, from, MPE_PROFILE_UNREADABLE, "%s is not a regular file", from == &here ? "the file" : file);
		goto out;
	}
	if (sb.st_size > PROF_FILE_MAX) {
		prof_fail(err, &here, MPE_PROFILE_LIMIT, "larger than %d bytes", PROF_FILE_MAX);
		goto out;
	}
	/* Room for the size fstat gave and one byte more: a read that fills it finds a file that grew
	 * since, which is read on to the limit and one byte past it, so that one grown too large is
	 * still caught. A read that returns less than asked of a regular file is its end: no read to
	 * see EOF (the 64 KiB buffer and the second read were each apply's, twice). */
	size_t room = (size_t)sb.st_size + 1;
	if (!(buf = malloc(room + 1))) {
		mp_nomem(err ? &err->e : NULL);
		goto out;
	}
	for (;;) {
		r = read(fd, buf + got, room - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got < room)
			break;
		if (room > PROF_FILE_MAX)
			break;
		char *more = realloc(buf, PROF_FILE_MAX + 2);
		if (!more) {
			mp_nomem(err ? &err->e : NULL);
			goto out;
		}
		buf = more;
		room = PROF_FILE_MAX + 1;
	}
	if (r < 0) {
		prof_fail(err, &here, MPE_PROFILE_UNREADABLE, "%s", strerror(errno));
		goto out;
	}
	if (got > PROF_FILE_MAX) {
		prof_fail(err, &here, MPE_PROFILE_LIMIT, "larger than %d bytes", PROF_FILE_MAX);
		goto out;
	}
	*text = buf;
	*len = got;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int prof_dir_list(const char *path, char ***names, size_t *n)
{
	struct prof_dir dir = { .path = path };

	return prof_dir_list_in(&dir, names, n);
}

int prof_dir_list_in(const struct prof_dir *dir, char ***names, size_t *n)
{
	char prefix[PROF_SNAP_MAX + 2], sub[PATH_MAX];
	struct dirent *de;
	DIR *d;
	char **v = NULL;             /* owned until handed over */
	size_t cnt = 0;
	int rc = 0;

	*names = NULL;
	*n = 0;
	if ((rc = rel_prefix(dir, -1, prefix, sizeof prefix)) < 0)
		return rc;
	snprintf(sub, sizeof sub, "%s/%s", dir->path, prefix);
	if (!(d = opendir(sub)))
		return -errno;
	if (!(v = calloc(PROF_DIR_NAMES_MAX, sizeof *v))) {
		closedir(d);
		return -ENOMEM;
	}
	while ((de = readdir(d)) && cnt < PROF_DIR_NAMES_MAX) {
		size_t l = strlen(de->d_name);
		char name[PROF_NAME_MAX];
		if (l <= 5 || l - 5 >= sizeof name || strcmp(de->d_name + l - 5, ".conf"))
			continue;
		memcpy(name, de->d_name, l - 5);
		name[l - 5] = '\0';
		if (!prof_name_ok(name))
			continue;
		if (!(v[cnt] = strdup(name))) {
			rc = -ENOMEM;
			break;
		}
		cnt++;
	}
	closedir(d);
	if (rc < 0) {
		prof_dir_names_free(v, cnt);
		return rc;
	}
	qsort(v, cnt, sizeof *v, cmp_str);
	*names = v;
	*n = cnt;
	return 0;
}

void prof_dir_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}
