#include "server/kernel/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "server/kernel/sysfs.h"

/* 1 when the controllers file under rel lists "cpuset" as a word. */
static int offers_cpuset(const char *root, const char *rel)
{
	char buf[1024], *tok, *save = NULL;

	if (kfs_read(root, rel, buf, sizeof buf) < 0)
		return 0;
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (!strcmp(tok, "cpuset"))
			return 1;
	return 0;
}

int cg_detect(const char *sysfs_root, struct cg_hier *h)
{
	static const struct {
		int version;
		const char *mount, *probe;
	} places[] = {
		{ 2, "fs/cgroup", "fs/cgroup/cgroup.controllers" },
		{ 2, "fs/cgroup/unified", "fs/cgroup/unified/cgroup.controllers" },
		{ 1, "fs/cgroup/cpuset", "fs/cgroup/cpuset/cpuset.mems" },
	};

	for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
		if (places[i].version == 2 ? !offers_cpuset(sysfs_root, places[i].probe)
					   : !kfs_exists(sysfs_root, places[i].probe))
			continue;
		h->version = places[i].version;
		snprintf(h->mount_rel, sizeof h->mount_rel, "%s", places[i].mount);
		return 0;
	}
	return -ENOENT;
}

int cg_path_check(const char *path)
{
	const char *s = path;

	if (strlen(path) >= CG_PATH_MAX)
		return -EINVAL;
	if (!*s)
		return 0;
	for (;;) {
		size_t n = strcspn(s, "/");
		if (n == 0 || n > 255 || s[0] == '.')
			return -EINVAL;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
				return -EINVAL;
		s += n;
		if (!*s)
			return 0;
		s++; /* '/', and a trailing one leaves an empty segment: refused above */
	}
}

int cg_open(const char *sysfs_root, const struct cg_hier *h, const char *path)
{
	char mount[PATH_MAX], seg[256];
	const char *s = path;
	int fd;

	if (cg_path_check(path) < 0)
		return -EINVAL;
	if (snprintf(mount, sizeof mount, "%s/%s", sysfs_root, h->mount_rel) >= (int)sizeof mount)
		return -ENAMETOOLONG;
	if ((fd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	while (*s) {
		size_t n = strcspn(s, "/");
		int next;
		memcpy(seg, s, n);
		seg[n] = '\0';
		next = openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			int err = errno;
			close(fd);
			return -err;
		}
		close(fd);
		fd = next;
		s += n;
		if (*s == '/')
			s++;
	}
	return fd;
}

/* Reads name in dirfd (not following a symlink), one trailing '\n' removed. Length or -errno. */
static int read_at(int dirfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	size_t off = 0;
	int rc = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r = read(fd, buf + off, len - 1 - off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		off += (size_t)r;
		if (off == len - 1) {
			rc = -EFBIG;
			break;
		}
	}
	close(fd);
	if (rc < 0)
		return rc;
	if (off && buf[off - 1] == '\n')
		off--;
	buf[off] = '\0';
	return (int)off;
}

static long count_lines(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char buf[8192];
	long n = 0;
	ssize_t r;

	if (fd < 0)
		return -errno;
	while ((r = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
	close(fd);
	return r < 0 ? -1 : n;
}

int cg_read(int dirfd, const struct cg_hier *h, bool is_root, struct cg_state *st)
{
	const char *eff = h->version == 2 ? "cpuset.mems.effective" : "cpuset.effective_mems";
	char buf[8];
	int rc;

	memset(st, 0, sizeof *st);
	st->is_root = is_root;
	st->memory_migrate = -1;
	/* v2's root has no cpuset.mems, only the effective set; a v2 child has neither until its
	 * parent enables cpuset in cgroup.subtree_control. */
	rc = read_at(dirfd, "cpuset.mems", st->mems, sizeof st->mems);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	st->cpuset = rc >= 0;
	if (st->cpuset && idset_parse(st->mems, &st->mems_set) < 0)
		return -EINVAL;
	rc = read_at(dirfd, eff, st->effective, sizeof st->effective);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (rc >= 0) {
		st->cpuset = st->cpuset || is_root;
		if (idset_parse(st->effective, &st->effective_set) < 0)
			return -EINVAL;
	}
	if (h->version == 1 && read_at(dirfd, "cpuset.memory_migrate", buf, sizeof buf) >= 0)
		st->memory_migrate = buf[0] == '1';
	st->procs = count_lines(dirfd, "cgroup.procs");
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cg_children(int dirfd, char ***names, size_t *n)
{
	int fd = dup(dirfd);
	DIR *d;
	struct dirent *de;
	char **out = NULL; /* owned until returned */
	size_t cnt = 0, cap = 0;
	int rc = 0;

	*names = NULL;
	*n = 0;
	if (fd < 0)
		return -errno;
	if (!(d = fdopendir(fd))) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (cnt == cap) {
			char **no = realloc(out, (cap ? cap * 2 : 16) * sizeof *out);
			if (!no) {
				rc = -ENOMEM;
				break;
			}
			out = no;
			cap = cap ? cap * 2 : 16;
		}
		if (!(out[cnt] = strdup(de->d_name))) {
			rc = -ENOMEM;
			break;
		}
		cnt++;
	}
	closedir(d);
	if (rc < 0) {
		for (size_t i = 0; i < cnt; i++)
			free(out[i]);
		free(out);
		return rc;
	}
	if (cnt)
		qsort(out, cnt, sizeof *out, by_name);
	*names = out;
	*n = cnt;
	return 0;
}

int cg_write_mems(int dirfd, const char *text)
{
	int fd = openat(dirfd, "cpuset.mems", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	size_t n = strlen(text);
	struct statfs sf;
	ssize_t w;
	int rc = 0;

	if (fd < 0)
		return -errno;
	/* A generated tree's regular file keeps old bytes past a shorter write; the kernel's
	 * cgroup files are never truncated, only written. */
	if (fstatfs(fd, &sf) == 0 && sf.f_type != CGROUP_SUPER_MAGIC && sf.f_type != CGROUP2_SUPER_MAGIC &&
	    ftruncate(fd, 0) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	/* An empty write must still reach the kernel (v2: inherit): write "\n". */
	w = n ? write(fd, text, n) : write(fd, "\n", 1);
	if (w < 0)
		rc = -errno;
	else if ((size_t)w != (n ? n : 1))
		rc = -EIO;
	close(fd);
	return rc;
}
