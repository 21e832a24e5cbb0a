/* The only code that opens kernel files. Every path is relative to a root (the real "/sys" and
 * "/proc", or a generated tree in tests), and is built by the kernel layer from its own tables,
 * never from client text. Results are plain -errno. */
#ifndef MPD_KERNEL_SYSFS_H
#define MPD_KERNEL_SYSFS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads the whole file into buf (NUL-terminated, one trailing '\n' removed). Returns the length
 * or -errno; -EFBIG if it does not fit. */
int kfs_read(const char *root, const char *rel, char *buf, size_t len);
/* The same from an open file (read from its current offset; fd stays the caller's). */
int kfs_read_fd(int fd, char *buf, size_t len);
/* Reads an unsigned decimal value. 0 or -errno (-EINVAL if the text is not a number). */
int kfs_read_u64(const char *root, const char *rel, uint64_t *out);
/* Writes val with exactly one write(2), as the kernel wants. 0 or -errno. */
int kfs_write(const char *root, const char *rel, const char *val);
int kfs_write_u64(const char *root, const char *rel, uint64_t val);
/* 1 if rel exists under root, 0 if not. */
int kfs_exists(const char *root, const char *rel);
/* 1 if rel exists and is writable by us (access(W_OK)), 0 otherwise. */
int kfs_writable(const char *root, const char *rel);

/* A kernel file kept open for a run of writes and read-backs (a pool resize), so that the
 * measurement covers the kernel's work and not two path lookups per batch. Each write is one
 * pwrite(2) at offset 0, each read one pread(2) at offset 0 (sysfs and procfs regenerate the text
 * on a read from offset 0). */
struct kfs_file {
	int fd;                 /* owned; -1 when closed */
	bool regular;           /* a generated tree's regular file: truncated before each write */
};
int kfs_open(const char *root, const char *rel, struct kfs_file *f);   /* 0 or -errno */
/* Whether path is on sysfs or procfs: 1 yes, 0 no, -errno when statfs(2) cannot tell. */
int kfs_on_kernel_fs(const char *path);
/* The file at path opened for reading, to be held and read again with kfs_pread_text: the fd, or
 * -EMEDIUMTYPE when it is not on sysfs or procfs, or -errno. Only for a file under a root that is
 * itself sysfs or procfs (kfs_on_kernel_fs): a generated tree's file may be replaced (a test puts
 * a symlink into /proc in its place, then a regular file again), and a held fd would go on
 * reading what it opened. */
int kfs_open_held(const char *path);
/* The same opened with access (O_RDONLY or O_WRONLY): the privileged helper holds the knobs'
 * files for writing. */
int kfs_open_held_as(const char *path, int access);
/* A held file's slot, shared by the threads that read it: KFS_HELD_UNTRIED until a read opened it,
 * KFS_HELD_NO when the file is read by path (not a kernel file), else the fd, owned by whoever
 * owns the slot. kfs_held_fd opens path with kfs_open_held on the slot's first use, from any
 * thread (the open that loses a race is closed): the fd, KFS_HELD_NO, or KFS_HELD_UNTRIED when
 * the open failed for a reason that may pass (tried again next time; the caller reads by path).
 * *took is true when this call's open is the one the slot keeps. */
#define KFS_HELD_UNTRIED -1
#define KFS_HELD_NO      -2
int kfs_held_fd(_Atomic int *slot, const char *path, bool *took);
int kfs_held_fd_as(_Atomic int *slot, const char *path, int access, bool *took);   /* kfs_open_held_as */
/* The whole text of a sysfs or procfs file, read by pread(2) from offset 0 (both regenerate it
 * there: the kernel's value now, not a cached one; a seq_file gives a page or more a read, so a
 * /proc/vmstat longer than that takes a second pread at the offset reached), NUL-terminated, one
 * trailing '\n' removed. Several threads may read one fd at once (the kernel serialises the
 * reads of an open file). The length or -errno; -EFBIG if it does not fit. */
int kfs_pread_text(int fd, char *buf, size_t len);
/* root/rel's text as kfs_read gives it, through the held file in *slot (KFS_HELD_UNTRIED: opened
 * here by kfs_held_fd; a slot set to KFS_HELD_NO reads by path): a pread instead of an open, a
 * read and a close. A held read that fails reads by path (but -EFBIG, which the path would
 * give too). The slot's fd is its owner's. */
int kfs_held_read(_Atomic int *slot, const char *root, const char *rel, char *buf, size_t len);
int kfs_file_write_u64(struct kfs_file *f, uint64_t val);
int kfs_file_read_u64(struct kfs_file *f, uint64_t *out);
void kfs_close(struct kfs_file *f);                                    /* fd -1 is fine */

#endif
