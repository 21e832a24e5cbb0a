/* cpuset.mems of cgroups, v2 or v1, with every client path confined to the cpuset hierarchy.
 *
 * Where the hierarchy is (under the sysfs root, so tests can generate one): cgroup v2 at fs/cgroup
 * when its cgroup.controllers offers cpuset (or at fs/cgroup/unified on a hybrid host), else the
 * v1 cpuset hierarchy at fs/cgroup/cpuset. A path is walked one segment at a time with
 * openat(O_NOFOLLOW | O_DIRECTORY) from the mount's directory, so a symlink anywhere on the way is
 * refused (ELOOP/ENOTDIR) rather than followed out, and no string is ever joined into a path. */
#ifndef MPD_KERNEL_CGROUP_H
#define MPD_KERNEL_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

#include "common/parse.h"

#define CG_PATH_MAX 512

struct cg_hier {
	int version;                 /* 2 or 1 */
	char mount_rel[32];          /* under the sysfs root: "fs/cgroup", "fs/cgroup/unified", "fs/cgroup/cpuset" */
};

/* Finds the cpuset hierarchy. 0, or -ENOENT when there is none. */
int cg_detect(const char *sysfs_root, struct cg_hier *h);

/* A client's cgroup path, relative to the hierarchy: segments of 1..255 bytes separated by single
 * '/', none "." or ".." or starting with '.', no control characters, no leading or trailing '/'.
 * "" is the root. 0 or -EINVAL. */
int cg_path_check(const char *path);

/* Opens the cgroup's directory: an fd (the caller closes it), -ENOENT (no such cgroup),
 * -ELOOP / -ENOTDIR (a symlink or a file on the way), another -errno. */
int cg_open(const char *sysfs_root, const struct cg_hier *h, const char *path);

struct cg_state {
	bool is_root;
	bool cpuset;                 /* the cgroup has cpuset.mems (v2: the parent enables cpuset) */
	char mems[1024];             /* as the kernel prints it; "" = empty (v2: inherit) */
	char effective[1024];
	idset mems_set, effective_set;
	int memory_migrate;          /* v1 cpuset.memory_migrate (0/1); -1 on v2, where a write always migrates */
	long procs;                  /* lines of cgroup.procs */
};

/* Reads the cgroup at dirfd. 0 or -errno (-EINVAL for text that does not parse). */
int cg_read(int dirfd, const struct cg_hier *h, bool is_root, struct cg_state *st);

/* The children's names (directories), sorted, into names (each owned, free them and the array);
 * *n how many. 0 or -errno. */
int cg_children(int dirfd, char ***names, size_t *n);

/* Writes cpuset.mems with one write(2), in this process. 0 or -errno (the kernel's: EINVAL,
 * EACCES, EBUSY, ENOSPC, ...). */
int cg_write_mems(int dirfd, const char *text);

#endif
