#include "server/kernel/topology.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/kernel/sysfs.h"

#define NODE_DIR "devices/system/node"
/* nodeN/meminfo is ~1.5 KiB on 6.x; leave room for fields later kernels add. */
#define MEMINFO_MAX 16384

/* The node masks topo_read_nodes_held may hold (struct topo_held's fd[]). */
enum held_mask { HELD_ONLINE, HELD_HAS_MEMORY, HELD__COUNT };
static const char *const held_rel[HELD__COUNT] = { NODE_DIR "/online", NODE_DIR "/has_memory" };


struct topo_held {
	const char *root;            /* borrowed */
	bool hold;                   /* root is sysfs itself */
	_Atomic int fd[HELD__COUNT]; /* per held_mask: the file (kfs_open_held), owned; or KFS_HELD_* */
};

/* m's text into buf (by a pread of the held file, or by path), as kfs_read returns it. */
static int read_mask_text(const char *root, struct topo_held *h, enum held_mask m, char *buf, size_t len)
{
	if (h && h->hold)
		return kfs_held_read(&h->fd[m], root, held_rel[m], buf, len);
	return kfs_read(root, held_rel[m], buf, len);
}

static int parse_mask(int rc, const char *buf, idset *out)
{
	if (rc < 0)
		return rc;
	return idset_parse(buf, out) < 0 ? -EINVAL : 0;
}

static int read_idset(const char *root, const char *rel, idset *out)
{
	char buf[4096];

	return parse_mask(kfs_read(root, rel, buf, sizeof buf), buf, out);
}

/* An optional mask's read (has_cpu appeared in 4.x, has_memory in 2.6.x): -ENOENT means "derive
 * it", so *present is false and 0 is returned. */
static int optional(int rc, bool *present)
{
	*present = rc == 0;
	return rc == -ENOENT ? 0 : rc;
}

static int read_optional_idset(const char *root, const char *rel, idset *out, bool *present)
{
	return optional(read_idset(root, rel, out), present);
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

/* node/online into t->online and the ids of t->nodes (through h when it is not NULL). */
static int read_online(const char *root, struct topo_held *h, struct topology *t)
{
	char buf[4096];
	int rc;

	if ((rc = parse_mask(read_mask_text(root, h, HELD_ONLINE, buf, sizeof buf), buf, &t->online)) < 0)
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
	if ((rc = read_idset(root, NODE_DIR "/possible", &t->possible)) < 0 || (rc = read_online(root, NULL, t)) < 0 ||
	    (rc = read_optional_idset(root, NODE_DIR "/has_cpu", &has_cpu, &have_has_cpu)) < 0 ||
	    (rc = read_optional_idset(root, NODE_DIR "/has_memory", &has_mem, &have_has_mem)) < 0)
		return rc;
	for (int i = 0; i < t->n_nodes; i++)
		if ((rc = read_node(root, &t->nodes[i], t->n_nodes, &has_cpu, have_has_cpu, &has_mem,
				    have_has_mem)) < 0)
			return rc;
	return 0;
}

static int read_nodes(const char *root, struct topo_held *h, struct topology *t, bool with_cpus)
{
	idset has_mem;
	bool have_has_mem;
	char *buf = NULL;   /* owned: meminfo's text, only on a kernel without node/has_memory */
	char text[4096];
	int rc;

	memset(t, 0, sizeof *t);
	if ((rc = read_online(root, h, t)) < 0 ||
	    (rc = optional(parse_mask(read_mask_text(root, h, HELD_HAS_MEMORY, text, sizeof text), text, &has_mem),
			   &have_has_mem)) < 0)
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

int topo_read_nodes(const char *root, struct topology *t, bool with_cpus)
{
	return read_nodes(root, NULL, t, with_cpus);
}

struct topo_held *topo_held_new(const char *sysfs_root)
{
	struct topo_held *h = calloc(1, sizeof *h);

	if (!h)
		return NULL;
	h->root = sysfs_root;
	h->hold = kfs_on_kernel_fs(sysfs_root) == 1;
	for (int m = 0; m < HELD__COUNT; m++)
		atomic_init(&h->fd[m], h->hold ? KFS_HELD_UNTRIED : KFS_HELD_NO);
	return h;
}

void topo_held_free(struct topo_held *h)
{
	if (!h)
		return;
	for (int m = 0; m < HELD__COUNT; m++)
		if (atomic_load(&h->fd[m]) >= 0)
			close(atomic_load(&h->fd[m]));
	free(h);
}

int topo_read_nodes_held(struct topo_held *h, struct topology *t, bool with_cpus)
{
	return read_nodes(h->root, h, t, with_cpus);
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
