#include "server/kernel/sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"

static int build_path(char *out, size_t len, const char *root, const char *rel)
{
	int n = snprintf(out, len, "%s/%s", root, rel);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int kfs_read(const char *root, const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX];
	int fd, rc;
	size_t off = 0;

	if ((rc = build_path(path, sizeof path, root, rel)) < 0)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r = read(fd, buf + off, len - 1 - off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		if (r == 0)
			break;
		off += (size_t)r;
		if (off == len - 1) {
			rc = -EFBIG;
			goto out;
		}
	}
	if (off > 0 && buf[off - 1] == '\n')
		off--;
	buf[off] = '\0';
	rc = (int)off;
out:
	close(fd);
	return rc;
}

int kfs_read_u64(const char *root, const char *rel, uint64_t *out)
{
	char buf[64];
	int rc = kfs_read(root, rel, buf, sizeof buf);

	if (rc < 0)
		return rc;
	return parse_u64(buf, out) < 0 ? -EINVAL : 0;
}

int kfs_write(const char *root, const char *rel, const char *val)
{
	char path[PATH_MAX];
	size_t n = strlen(val);
	ssize_t w;
	int fd, rc;

	if ((rc = build_path(path, sizeof path, root, rel)) < 0)
		return rc;
	/* O_TRUNC matters only for generated trees (regular files); sysfs ignores it. */
	fd = open(path, O_WRONLY | O_CLOEXEC | O_TRUNC);
	if (fd < 0)
		return -errno;
	do
		w = write(fd, val, n);
	while (w < 0 && errno == EINTR);
	rc = w < 0 ? -errno : (size_t)w != n ? -EIO : 0;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

int kfs_write_u64(const char *root, const char *rel, uint64_t val)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)val);
	return kfs_write(root, rel, buf);
}

int kfs_exists(const char *root, const char *rel)
{
	char path[PATH_MAX];
	return build_path(path, sizeof path, root, rel) == 0 && access(path, F_OK) == 0;
}

int kfs_writable(const char *root, const char *rel)
{
	char path[PATH_MAX];
	return build_path(path, sizeof path, root, rel) == 0 && access(path, W_OK) == 0;
}
