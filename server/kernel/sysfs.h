/* The only code that opens kernel files. Every path is relative to a root (the real "/sys" and
 * "/proc", or a generated tree in tests), and is built by the kernel layer from its own tables,
 * never from client text. Results are plain -errno. */
#ifndef MPD_KERNEL_SYSFS_H
#define MPD_KERNEL_SYSFS_H

#include <stddef.h>
#include <stdint.h>

/* Reads the whole file into buf (NUL-terminated, one trailing '\n' removed). Returns the length
 * or -errno; -EFBIG if it does not fit. */
int kfs_read(const char *root, const char *rel, char *buf, size_t len);
/* Reads an unsigned decimal value. 0 or -errno (-EINVAL if the text is not a number). */
int kfs_read_u64(const char *root, const char *rel, uint64_t *out);
/* Writes val with exactly one write(2), as the kernel wants. 0 or -errno. */
int kfs_write(const char *root, const char *rel, const char *val);
int kfs_write_u64(const char *root, const char *rel, uint64_t val);
/* 1 if rel exists under root, 0 if not. */
int kfs_exists(const char *root, const char *rel);
/* 1 if rel exists and is writable by us (access(W_OK)), 0 otherwise. */
int kfs_writable(const char *root, const char *rel);

#endif
