#include "server/kernel/caps.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include "server/kernel/sysfs.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Lists "hugepages-<N>kB" entries of root/rel into sizes, ascending. */
static int list_sizes(const char *root, const char *rel, uint64_t *sizes, int max)
{
	char path[PATH_MAX];
	DIR *d;
	struct dirent *de;
	int n = 0;

	snprintf(path, sizeof path, "%s/%s", root, rel);
	if (!(d = opendir(path)))
		return 0;
	while ((de = readdir(d)) && n < max) {
		unsigned long long kb;
		char tail[4];
		if (sscanf(de->d_name, "hugepages-%llukB%3s", &kb, tail) == 1 && kb > 0)
			sizes[n++] = kb;
	}
	closedir(d);
	qsort(sizes, (size_t)n, sizeof *sizes, cmp_u64);
	return n;
}

void caps_detect(struct caps *c, const char *sysfs_root, const char *procfs_root)
{
	char buf[256];
	struct utsname u;

	memset(c, 0, sizeof *c);
	/* In a generated tree the release comes from its own proc/sys/kernel/osrelease. */
	if (kfs_read(procfs_root, "sys/kernel/osrelease", buf, sizeof buf) > 0)
		snprintf(c->kernel_release, sizeof c->kernel_release, "%.64s", buf);
	else if (uname(&u) == 0)
		snprintf(c->kernel_release, sizeof c->kernel_release, "%.64s", u.release);
	c->thp = kfs_exists(sysfs_root, "kernel/mm/transparent_hugepage/enabled");
	c->n_mthp_sizes = list_sizes(sysfs_root, "kernel/mm/transparent_hugepage", c->mthp_sizes_kb,
				     CAPS_MAX_SIZES);
	c->n_hugetlb_sizes = list_sizes(sysfs_root, "kernel/mm/hugepages", c->hugetlb_sizes_kb, CAPS_MAX_SIZES);
	c->weighted_interleave = kfs_exists(sysfs_root, "kernel/mm/mempolicy/weighted_interleave");
	c->numa_balancing = kfs_exists(procfs_root, "sys/kernel/numa_balancing");
	/* madvise(NULL, 0, advice) returns 0 exactly when the advice is known (madvise(2)). */
	c->madv_collapse = madvise(NULL, 0, MADV_COLLAPSE) == 0;
	if (kfs_exists(sysfs_root, "fs/cgroup/cgroup.controllers"))
		c->cgroup_version = 2;
	else if (kfs_exists(sysfs_root, "fs/cgroup/cpuset") || kfs_exists(sysfs_root, "fs/cgroup/memory"))
		c->cgroup_version = 1;
	mpol_probe(&c->mpol);
}
