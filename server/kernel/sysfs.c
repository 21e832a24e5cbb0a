#include "server/kernel/sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/parse.h"

static int build_path(char *out, size_t len, const char *root, const char *rel)
{
	int n = snprintf(out, len, "%s/%s", root, rel);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The text's end: one trailing '\n' dropped, NUL-terminated (buf holds off + 1). Its length. */
static int text_end(char *buf, size_t off)
{
	if (off > 0 && buf[off - 1] == '\n')
		off--;
	buf[off] = '\0';
	return (int)off;
}

#define SYSFS_MAGIC_NR 0x62656572
#define PROC_MAGIC_NR  0x9fa0

static bool kernel_fs(const struct statfs *sfs)
{
	return sfs->f_type == SYSFS_MAGIC_NR || sfs->f_type == PROC_MAGIC_NR;
}

int kfs_read_fd(int fd, char *buf, size_t len)
{
	size_t off = 0;

	for (;;) {
		ssize_t r = read(fd, buf + off, len - 1 - off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		off += (size_t)r;
		if (off == len - 1)
			return -EFBIG;
	}
	return text_end(buf, off);
}

int kfs_read(const char *root, const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX];
	int fd, rc;

	if ((rc = build_path(path, sizeof path, root, rel)) < 0)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = kfs_read_fd(fd, buf, len);
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

int kfs_open(const char *root, const char *rel, struct kfs_file *f)
{
	char path[PATH_MAX];
	struct statfs sfs;
	int rc;

	f->fd = -1;
	f->regular = false;
	if ((rc = build_path(path, sizeof path, root, rel)) < 0)
		return rc;
	f->fd = open(path, O_RDWR | O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	f->regular = fstatfs(f->fd, &sfs) == 0 && !kernel_fs(&sfs);
	return 0;
}

int kfs_on_kernel_fs(const char *path)
{
	struct statfs sfs;

	if (statfs(path, &sfs) < 0)
		return -errno;
	return kernel_fs(&sfs);
}

int kfs_open_held(const char *path)
{
	return kfs_open_held_as(path, O_RDONLY);
}

int kfs_open_held_as(const char *path, int access)
{
	struct statfs sfs;
	int fd = open(path, access | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	if (fstatfs(fd, &sfs) == 0 && kernel_fs(&sfs))
		return fd;
	close(fd);
	return -EMEDIUMTYPE;
}

int kfs_held_fd(_Atomic int *slot, const char *path, bool *took)
{
	return kfs_held_fd_as(slot, path, O_RDONLY, took);
}

int kfs_held_fd_as(_Atomic int *slot, const char *path, int access, bool *took)
{
	int fd = atomic_load_explicit(slot, memory_order_acquire), want = KFS_HELD_UNTRIED;

	*took = false;
	if (fd != KFS_HELD_UNTRIED)
		return fd;
	if ((fd = kfs_open_held_as(path, access)) == -EMEDIUMTYPE)
		fd = KFS_HELD_NO;
	else if (fd < 0)
		return KFS_HELD_UNTRIED;
	if (atomic_compare_exchange_strong_explicit(slot, &want, fd, memory_order_acq_rel, memory_order_acquire)) {
		*took = fd >= 0;
		return fd;
	}
	if (fd >= 0)
		close(fd);   /* another thread's open won */
	return want;
}

/* A read of a kernel file that returns less than this, and less than was asked, is the text's end:
 * sysfs gives an attribute's whole text (at most a page) to one read, and a seq_file such as
 * /proc/vmstat fills at least a page per read, stopping short of it only at the end or before a
 * record that does not fit — and no file read here has a record near this long (a vmstat line, a
 * node's zones in buddyinfo). Without it each read would take one more pread(2) to see the end. */
#define KFS_SHORT_READ 2048

int kfs_pread_text(int fd, char *buf, size_t len)
{
	size_t off = 0;

	for (;;) {
		ssize_t r = pread(fd, buf + off, len - 1 - off, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (size_t)r;
		/* A text that fills the buffer may go on. */
		if (off == len - 1)
			return -EFBIG;
		if (r == 0 || r < KFS_SHORT_READ)
			break;
	}
	return text_end(buf, off);
}

int kfs_held_read(_Atomic int *slot, const char *root, const char *rel, char *buf, size_t len)
{
	int fd = atomic_load_explicit(slot, memory_order_acquire), rc;
	char path[PATH_MAX];
	bool took;

	if (fd == KFS_HELD_UNTRIED && build_path(path, sizeof path, root, rel) == 0)
		fd = kfs_held_fd(slot, path, &took);
	/* A held read that fails falls back to the path, which says what is there now (a node
	 * taken offline takes its files with it); a text too long for buf is as long by path. */
	if (fd >= 0 && ((rc = kfs_pread_text(fd, buf, len)) >= 0 || rc == -EFBIG))
		return rc;
	return kfs_read(root, rel, buf, len);
}

int kfs_file_write_u64(struct kfs_file *f, uint64_t val)
{
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)val);
	ssize_t w;

	if (f->regular && ftruncate(f->fd, 0) < 0)
		return -errno;
	do
		w = pwrite(f->fd, buf, (size_t)n, 0);
	while (w < 0 && errno == EINTR);
	return w < 0 ? -errno : w != n ? -EIO : 0;
}

int kfs_file_read_u64(struct kfs_file *f, uint64_t *out)
{
	char buf[64];
	ssize_t r;

	do
		r = pread(f->fd, buf, sizeof buf - 1, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r > 0 && buf[r - 1] == '\n')
		r--;
	buf[r] = '\0';
	return parse_u64(buf, out) < 0 ? -EINVAL : 0;
}

void kfs_close(struct kfs_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}
