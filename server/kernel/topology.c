#include "server/kernel/topology.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/kernel/sysfs.h"

#define NODE_DIR "devices/system/node"
/* nodeN/meminfo is ~1.5 KiB on 6.x; leave room for fields later kernels add. */
#define MEMINFO_MAX 16384

static int read_idset(const char *root, const char *rel, idset *out)
{
	char buf[4096];
	int rc = kfs_read(root, rel, buf, sizeof buf);

	if (rc < 0)
		return rc;
	return idset_parse(buf, out) < 0 ? -EINVAL : 0;
}

/* Optional node masks (has_cpu appeared in 4.x, has_memory in 2.6.x): -ENOENT means "derive it". */
static int read_optional_idset(const char *root, const char *rel, idset *out, bool *present)
{
	int rc = read_idset(root, rel, out);

	*present = rc == 0;
	return rc == -ENOENT ? 0 : rc;
}

int topo_meminfo_value(const char *text, unsigned node, const char *key, uint64_t *kb)
{
	const char *p = text;

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);
		char line[256], *save = NULL, *tok[6];
		int nt = 0;

		if (n < sizeof line) {
			memcpy(line, p, n);
			line[n] = '\0';
			for (char *s = strtok_r(line, " \t", &save); s && nt < 6; s = strtok_r(NULL, " \t", &save))
				tok[nt++] = s;
			/* "Node" N "Key:" value ["kB"] */
			if (nt >= 4 && strcmp(tok[0], "Node") == 0) {
				size_t kl = strlen(tok[2]);
				uint64_t id;
				if (kl > 1 && tok[2][kl - 1] == ':' && kl - 1 == strlen(key) &&
				    strncmp(tok[2], key, kl - 1) == 0) {
					if (parse_u64(tok[1], &id) < 0 || id != node)
						return -EINVAL;
					if (parse_u64(tok[3], kb) < 0)
						return -EINVAL;
					if (nt > 5 || (nt == 5 && strcmp(tok[4], "kB") != 0))
						return -EINVAL;
					return 0;
				}
			}
		}
		p += n;
		if (*p == '\n')
			p++;
	}
	return -ENOENT;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* nodeN/hugepages/hugepages-<N>kB: absent on a node without memory, which then has no sizes. */
static int read_hp_sizes(const char *root, struct topo_node *n)
{
	char path[PATH_MAX];
	DIR *d;
	struct dirent *de;
	int len = snprintf(path, sizeof path, "%s/" NODE_DIR "/node%u/hugepages", root, n->id);

	n->n_hp_sizes = 0;
	if (len < 0 || (size_t)len >= sizeof path)
		return -ENAMETOOLONG;
	if (!(d = opendir(path)))
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d)) && n->n_hp_sizes < CAPS_MAX_SIZES) {
		static const char pre[] = "hugepages-";
		size_t l = strlen(de->d_name);
		char num[32];
		uint64_t kb;

		if (strncmp(de->d_name, pre, sizeof pre - 1) != 0 || l < sizeof pre - 1 + 3 ||
		    strcmp(de->d_name + l - 2, "kB") != 0 || l - (sizeof pre - 1) - 2 >= sizeof num)
			continue;
		memcpy(num, de->d_name + sizeof pre - 1, l - (sizeof pre - 1) - 2);
		num[l - (sizeof pre - 1) - 2] = '\0';
		if (parse_u64(num, &kb) == 0 && kb > 0)
			n->hp_sizes_kb[n->n_hp_sizes++] = kb;
	}
	closedir(d);
	qsort(n->hp_sizes_kb, (size_t)n->n_hp_sizes, sizeof n->hp_sizes_kb[0], cmp_u64);
	return 0;
}

/* "10 20 20 30": one column per online node, in id order. */
static int parse_distances(char *buf, struct topo_node *n, int want)
{
	char *save = NULL;
	int i = 0;

	for (char *s = strtok_r(buf, " \t", &save); s; s = strtok_r(NULL, " \t", &save)) {
		uint64_t v;
		if (i >= want || parse_u64(s, &v) < 0 || v > 255)
			return -EINVAL;
		n->distance[i++] = (unsigned)v;
	}
	return i == want ? 0 : -EINVAL;
}

static int read_cpus(const char *root, struct topo_node *n)
{
	char rel[128];

	snprintf(rel, sizeof rel, NODE_DIR "/node%u/cpulist", n->id);
	return read_idset(root, rel, &n->cpus);
}

/* MemTotal and MemFree from nodeN/meminfo, into buf (MEMINFO_MAX bytes). */
static int read_meminfo(const char *root, struct topo_node *n, char *buf)
{
	char rel[128];
	int rc;

	snprintf(rel, sizeof rel, NODE_DIR "/node%u/meminfo", n->id);
	if ((rc = kfs_read(root, rel, buf, MEMINFO_MAX)) < 0)
		return rc;
	if (topo_meminfo_value(buf, n->id, "MemTotal", &n->mem_total_kb) < 0 ||
	    topo_meminfo_value(buf, n->id, "MemFree", &n->mem_free_kb) < 0)
		return -EINVAL;   /* a meminfo without them is not one we understand */
	return 0;
}

static int read_node(const char *root, struct topo_node *n, int n_online, const idset *has_cpu,
		     bool have_has_cpu, const idset *has_mem, bool have_has_mem)
{
	char rel[128], *buf = NULL;
	int rc;

	if ((rc = read_cpus(root, n)) < 0)
		return rc;
	n->has_cpu = have_has_cpu ? idset_has(has_cpu, n->id) : idset_count(&n->cpus) > 0;

	if (!(buf = malloc(MEMINFO_MAX)))
		return -ENOMEM;
	snprintf(rel, sizeof rel, NODE_DIR "/node%u/distance", n->id);
	if ((rc = kfs_read(root, rel, buf, MEMINFO_MAX)) < 0)
		goto out;
	if ((rc = parse_distances(buf, n, n_online)) < 0)
		goto out;
	if ((rc = read_meminfo(root, n, buf)) < 0)
		goto out;
	n->has_memory = have_has_mem ? idset_has(has_mem, n->id) : n->mem_total_kb > 0;
	rc = read_hp_sizes(root, n);
out:
	free(buf);
	return rc;
}

/* node/online into t->online and the ids of t->nodes. */
static int read_online(const char *root, struct topology *t)
{
	int rc;

	if ((rc = read_idset(root, NODE_DIR "/online", &t->online)) < 0)
		return rc;
	if (idset_count(&t->online) > TOPO_MAX_NODES)
		return -E2BIG;
	for (int id = idset_next(&t->online, 0); id >= 0; id = idset_next(&t->online, (unsigned)id + 1))
		t->nodes[t->n_nodes++].id = (unsigned)id;
	return 0;
}

int topo_read(const char *root, struct topology *t)
{
	idset has_cpu, has_mem;
	bool have_has_cpu, have_has_mem;
	int rc;

	memset(t, 0, sizeof *t);
	if ((rc = read_idset(root, NODE_DIR "/possible", &t->possible)) < 0 || (rc = read_online(root, t)) < 0 ||
	    (rc = read_optional_idset(root, NODE_DIR "/has_cpu", &has_cpu, &have_has_cpu)) < 0 ||
	    (rc = read_optional_idset(root, NODE_DIR "/has_memory", &has_mem, &have_has_mem)) < 0)
		return rc;
	for (int i = 0; i < t->n_nodes; i++)
		if ((rc = read_node(root, &t->nodes[i], t->n_nodes, &has_cpu, have_has_cpu, &has_mem,
				    have_has_mem)) < 0)
			return rc;
	return 0;
}

int topo_read_nodes(const char *root, struct topology *t, bool with_cpus)
{
	idset has_mem;
	bool have_has_mem;
	char *buf = NULL;   /* owned: meminfo's text, only on a kernel without node/has_memory */
	int rc;

	memset(t, 0, sizeof *t);
	if ((rc = read_online(root, t)) < 0 ||
	    (rc = read_optional_idset(root, NODE_DIR "/has_memory", &has_mem, &have_has_mem)) < 0)
		return rc;
	for (int i = 0; i < t->n_nodes && rc == 0; i++) {
		struct topo_node *n = &t->nodes[i];
		if (with_cpus && (rc = read_cpus(root, n)) < 0)
			break;
		if (have_has_mem) {
			n->has_memory = idset_has(&has_mem, n->id);
			continue;
		}
		if (!buf && !(buf = malloc(MEMINFO_MAX))) {
			rc = -ENOMEM;
			break;
		}
		if ((rc = read_meminfo(root, n, buf)) == 0)
			n->has_memory = n->mem_total_kb > 0;
	}
	free(buf);
	return rc;
}

int topo_read_online(const char *root, idset *online)
{
	return read_idset(root, NODE_DIR "/online", online);
}

int topo_index(const struct topology *t, unsigned id)
{
	for (int i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].id == id)
			return i;
	return -1;
}
