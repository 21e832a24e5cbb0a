#include "server/kernel/knobs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/parse.h"
#include "server/kernel/sysfs.h"

#define THP "kernel/mm/transparent_hugepage/"
#define KHP THP "khugepaged/"
#define WI  "kernel/mm/mempolicy/weighted_interleave"
#define U32 4294967295ULL

/* The knob files held open for reading. Set once each, by whichever thread reads the knob first; a
 * GET of a knob then costs a pread and an fstat, not an open, a read that sees EOF, an ioctl and a
 * close (bench/README.md §1b). */
struct held_files {
	_Atomic unsigned n;          /* held, or being opened to be: at most KNOBS_HELD_MAX */
	_Atomic int fd[];            /* per knob (its index): the file (kfs_open_held), owned; or
				      * HELD_UNTRIED before its first read, HELD_NO when it is no
				      * kernel file or the budget is spent */
};

struct knob_catalogue {
	const char *sysfs_root;      /* borrowed */
	const char *procfs_root;     /* borrowed */
	size_t n, cap;
	struct knob *k;              /* owned */
	bool writer_privileged;      /* another process, with DAC_OVERRIDE, does the writes */
	struct held_files *held;     /* owned */
	bool hold_root[2];           /* per knob_root: the root is sysfs or procfs itself, not a
				      * generated tree, so its files may be held */
};

#define HELD_UNTRIED KFS_HELD_UNTRIED
#define HELD_NO      KFS_HELD_NO

static const struct knob static_knobs[] = {
	{ "thp.enabled", THP "enabled", KNOB_SYSFS, KNOB_CHOICE, 0, 0,
	  "Anonymous THP: always, only in MADV_HUGEPAGE regions (madvise), or never" },
	{ "thp.defrag", THP "defrag", KNOB_SYSFS, KNOB_CHOICE, 0, 0,
	  "How hard a THP fault reclaims and compacts (direct, deferred to kswapd/kcompactd, or not)" },
	{ "thp.shmem_enabled", THP "shmem_enabled", KNOB_SYSFS, KNOB_CHOICE, 0, 0,
	  "THP for the internal shmem mount (SysV SHM, memfd, shared anonymous)" },
	{ "thp.use_zero_page", THP "use_zero_page", KNOB_SYSFS, KNOB_BOOLEAN, 0, 1,
	  "Read faults map the huge zero page" },
	{ "thp.khugepaged.defrag", KHP "defrag", KNOB_SYSFS, KNOB_BOOLEAN, 0, 1,
	  "khugepaged may reclaim and compact to allocate huge pages" },
	{ "thp.khugepaged.pages_to_scan", KHP "pages_to_scan", KNOB_SYSFS, KNOB_INTEGER, 1, U32,
	  "Pages khugepaged scans per wake-up" },
	{ "thp.khugepaged.scan_sleep_millisecs", KHP "scan_sleep_millisecs", KNOB_SYSFS, KNOB_INTEGER, 0, U32,
	  "Sleep between khugepaged scan passes (ms)" },
	{ "thp.khugepaged.alloc_sleep_millisecs", KHP "alloc_sleep_millisecs", KNOB_SYSFS, KNOB_INTEGER, 0, U32,
	  "Sleep after a failed huge page allocation in khugepaged (ms)" },
	{ "thp.khugepaged.max_ptes_none", KHP "max_ptes_none", KNOB_SYSFS, KNOB_INTEGER, 0, 511,
	  "Empty PTEs a range may have and still be collapsed" },
	{ "thp.khugepaged.max_ptes_swap", KHP "max_ptes_swap", KNOB_SYSFS, KNOB_INTEGER, 0, 511,
	  "Swapped-out PTEs khugepaged swaps in to collapse a range" },
	{ "thp.khugepaged.max_ptes_shared", KHP "max_ptes_shared", KNOB_SYSFS, KNOB_INTEGER, 0, 511,
	  "Shared PTEs a range may have and still be collapsed" },
	/* 0..3: 2 and 3 (memory tiering) exist since 6.0; older kernels answer EINVAL, which is
	 * recorded like any other kernel refusal rather than guessed here. */
	{ "numa.balancing", "sys/kernel/numa_balancing", KNOB_PROCFS, KNOB_INTEGER, 0, 3,
	  "Automatic NUMA balancing: 0 off, 1 normal, 2 memory tiering, 3 both" },
	{ "vm.compaction_proactiveness", "sys/vm/compaction_proactiveness", KNOB_PROCFS, KNOB_INTEGER, 0, 100,
	  "How aggressively kcompactd compacts in the background" },
	{ "vm.zone_reclaim_mode", "sys/vm/zone_reclaim_mode", KNOB_PROCFS, KNOB_INTEGER, 0, 7,
	  "Reclaim on the local node before going off-node (bitmask: 1 on, 2 write dirty, 4 swap)" },
	/* tuned's hpc profile sets both. The kernel raises min_free_kbytes itself when THP is enabled
	 * (khugepaged's recommended minimum), without a write anyone could see: the drift watcher
	 * checks it on its timer. watermark_scale_factor's ceiling is 3000 since 5.18 (1000 before:
	 * an older kernel's EINVAL is recorded as its refusal). */
	{ "vm.min_free_kbytes", "sys/vm/min_free_kbytes", KNOB_PROCFS, KNOB_INTEGER, 0, INT32_MAX,
	  "Memory (kB) the kernel keeps free: the min watermark every zone's others derive from" },
	{ "vm.watermark_scale_factor", "sys/vm/watermark_scale_factor", KNOB_PROCFS, KNOB_INTEGER, 1, 3000,
	  "Distance between the zone watermarks, in 1/10000 of memory: how early kswapd wakes" },
	{ "vm.nr_overcommit_hugepages", "sys/vm/nr_overcommit_hugepages", KNOB_PROCFS, KNOB_INTEGER, 0, INT64_MAX,
	  "Surplus hugetlb pages of the default size the kernel may allocate on demand" },
};

static int push(struct knob_catalogue *c, const struct knob *k)
{
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		struct knob *nk = realloc(c->k, ncap * sizeof *nk);
		if (!nk)
			return -1;
		c->k = nk;
		c->cap = ncap;
	}
	c->k[c->n++] = *k;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Numbers N of the entries "<prefix>N<suffix>" in dir (ascending), where N is strict decimal. */
static int list_numbered(const char *root, const char *rel, const char *prefix, const char *suffix,
			 uint64_t *out, int max)
{
	char path[PATH_MAX], num[32];
	size_t pl = strlen(prefix), sl = strlen(suffix);
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof path, "%s/%s", root, rel);
	if (!(d = opendir(path)))
		return 0;
	while ((de = readdir(d)) && n < max) {
		size_t l = strlen(de->d_name);
		uint64_t v;
		if (l <= pl + sl || l - pl - sl >= sizeof num || strncmp(de->d_name, prefix, pl) ||
		    strcmp(de->d_name + l - sl, suffix))
			continue;
		memcpy(num, de->d_name + pl, l - pl - sl);
		num[l - pl - sl] = '\0';
		/* "node01" would name the same node twice: canonical decimal only. */
		if (parse_u64(num, &v) == 0 && (num[0] != '0' || !num[1]))
			out[n++] = v;
	}
	closedir(d);
	qsort(out, (size_t)n, sizeof *out, cmp_u64);
	return n;
}

static int add_sizes(struct knob_catalogue *c)
{
	uint64_t kb[64];
	int n = list_numbered(c->sysfs_root, THP, "hugepages-", "kB", kb, 64);
	static const char *const files[] = { "enabled", "shmem_enabled" };

	for (int i = 0; i < n; i++) {
		for (size_t f = 0; f < 2; f++) {
			struct knob k = { .root = KNOB_SYSFS, .type = KNOB_CHOICE };
			snprintf(k.rel, sizeof k.rel, THP "hugepages-%llukB/%s", (unsigned long long)kb[i], files[f]);
			if (!kfs_exists(c->sysfs_root, k.rel))
				continue;
			snprintf(k.name, sizeof k.name, "thp.size.%llukB.%s", (unsigned long long)kb[i], files[f]);
			snprintf(k.desc, sizeof k.desc, "%s THP policy for %llukB folios",
				 f ? "shmem" : "Anonymous", (unsigned long long)kb[i]);
			if (push(c, &k) < 0)
				return -1;
		}
	}
	return 0;
}

static int add_weights(struct knob_catalogue *c)
{
	uint64_t node[1024];
	int n = list_numbered(c->sysfs_root, WI, "node", "", node, 1024);
	for (int i = 0; i < n; i++) {
		struct knob k = { .root = KNOB_SYSFS, .type = KNOB_INTEGER, .min = 1, .max = 255 };
		snprintf(k.rel, sizeof k.rel, WI "/node%llu", (unsigned long long)node[i]);
		snprintf(k.name, sizeof k.name, "mempolicy.weighted_interleave.node%llu", (unsigned long long)node[i]);
		snprintf(k.desc, sizeof k.desc, "Weight of node %llu in MPOL_WEIGHTED_INTERLEAVE",
			 (unsigned long long)node[i]);
		if (push(c, &k) < 0)
			return -1;
	}
	return 0;
}

struct knob_catalogue *knobs_build(const char *sysfs_root, const char *procfs_root)
{
	struct knob_catalogue *c = calloc(1, sizeof *c);

	if (!c)
		return NULL;
	c->sysfs_root = sysfs_root;
	c->procfs_root = procfs_root;
	for (size_t i = 0; i < sizeof static_knobs / sizeof static_knobs[0]; i++)
		if (push(c, &static_knobs[i]) < 0)
			goto fail;
	if (add_sizes(c) < 0 || add_weights(c) < 0 ||
	    !(c->held = malloc(sizeof *c->held + c->n * sizeof c->held->fd[0])))
		goto fail;
	atomic_init(&c->held->n, 0);
	c->hold_root[KNOB_SYSFS] = kfs_on_kernel_fs(sysfs_root) == 1;
	c->hold_root[KNOB_PROCFS] = kfs_on_kernel_fs(procfs_root) == 1;
	for (size_t i = 0; i < c->n; i++)
		atomic_init(&c->held->fd[i], HELD_UNTRIED);
	return c;
fail:
	knobs_free(c);
	return NULL;
}

void knobs_free(struct knob_catalogue *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->held && i < c->n; i++)
		if (atomic_load(&c->held->fd[i]) >= 0)
			close(atomic_load(&c->held->fd[i]));
	free(c->held);
	free(c->k);
	free(c);
}

void knobs_set_writer_privileged(struct knob_catalogue *c)
{
	c->writer_privileged = true;
}

size_t knobs_count(const struct knob_catalogue *c)
{
	return c->n;
}

const struct knob *knobs_at(const struct knob_catalogue *c, size_t i)
{
	return i < c->n ? &c->k[i] : NULL;
}

const struct knob *knobs_find(const struct knob_catalogue *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->k[i].name, name))
			return &c->k[i];
	return NULL;
}

bool knob_name_quotable(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= sizeof ((struct knob *)0)->name)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '_' || *p == '-' || *p == '+'))
			return false;
	return true;
}

/* "<digits><suffix>" exactly, canonical decimal (no leading zero). */
static bool digits_then(const char *s, const char *suffix)
{
	size_t n = strspn(s, "0123456789");
	return n > 0 && n < 20 && (s[0] != '0' || n == 1) && !strcmp(s + n, suffix);
}

bool knob_name_per_kernel(const char *name)
{
	static const char sz[] = "thp.size.", wi[] = "mempolicy.weighted_interleave.node";

	if (!strncmp(name, sz, sizeof sz - 1))
		return digits_then(name + sizeof sz - 1, "kB.enabled") ||
		       digits_then(name + sizeof sz - 1, "kB.shmem_enabled");
	if (!strncmp(name, wi, sizeof wi - 1))
		return digits_then(name + sizeof wi - 1, "");
	return false;
}

const char *knob_type_name(enum knob_type t)
{
	switch (t) {
	case KNOB_CHOICE:  return "choice";
	case KNOB_INTEGER: return "integer";
	case KNOB_BOOLEAN: return "boolean";
	}
	return "?";
}

static const char *root_of(const struct knob_catalogue *c, const struct knob *k)
{
	return k->root == KNOB_SYSFS ? c->sysfs_root : c->procfs_root;
}

void knob_path(const struct knob_catalogue *c, const struct knob *k, char *buf, size_t len)
{
	const char *root = root_of(c, k);
	size_t rl = strlen(root), kl = strlen(k->rel);

	/* Joined by hand: a knob GET builds it twice, and snprintf's were most of its printf time. */
	if (rl + 1 + kl >= len) {
		snprintf(buf, len, "%s/%s", root, k->rel);   /* cut short as before */
		return;
	}
	memcpy(buf, root, rl);
	buf[rl] = '/';
	memcpy(buf + rl + 1, k->rel, kl + 1);
}

/* Whether the file's inode flags forbid a write whatever its mode says: immutable (chattr +i), or
 * append-only, which refuses the open(O_WRONLY) without O_APPEND that knob_write makes. Even root
 * (the privileged helper) gets EPERM for both. sysfs and procfs keep no such flags (the ioctl is
 * ENOTTY there): false. fd: the file, open for reading. */
static bool write_forbidden_by_flags(int fd)
{
	int flags = 0;

	return ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL));
}

/* k's held file (struct held_files), opened on its first read; < 0 when it has none. A file
 * that cannot be opened now is tried again at the next read (it may appear); the path's own
 * open then reports why. */
static int held_fd(const struct knob_catalogue *c, const struct knob *k, const char *path)
{
	struct held_files *h = c->held;
	size_t i = (size_t)(k - c->k);
	int fd, want = HELD_UNTRIED;
	bool took;

	if (k < c->k || i >= c->n || !c->hold_root[k->root])
		return HELD_NO;   /* not the catalogue's own entry, or a generated tree's */
	if ((fd = atomic_load_explicit(&h->fd[i], memory_order_acquire)) != HELD_UNTRIED)
		return fd;
	if (atomic_fetch_add(&h->n, 1) >= KNOBS_HELD_MAX) {
		/* The open-file budget's share is spent (a host with many nodes' weights): by path. */
		atomic_fetch_sub(&h->n, 1);
		atomic_compare_exchange_strong(&h->fd[i], &want, HELD_NO);
		return HELD_NO;
	}
	fd = kfs_held_fd(&h->fd[i], path, &took);
	if (!took)
		atomic_fetch_sub(&h->n, 1);   /* the budget counts the fds kept */
	return fd;
}

/* A write bit is set on the open file and this process may write it, or the writer is another,
 * privileged process, of which this one's access() says nothing. */
static bool mode_writable(const struct knob_catalogue *c, int fd, const char *path)
{
	struct stat sb;

	return fstat(fd, &sb) == 0 && (sb.st_mode & 0222) && (c->writer_privileged || access(path, W_OK) == 0);
}

/* The file's text into st->optbuf, and st->writable too when with_writable (the mode; this
 * process's access() unless the writer is privileged; the inode flags, which only a file outside
 * sysfs and procfs can have). 0, or -errno with st->writable false. */
static int read_file(const struct knob_catalogue *c, const struct knob *k, struct knob_state *st, const char *path,
		     bool with_writable)
{
	int fd = held_fd(c, k, path), rc;

	if (fd >= 0) {
		if (with_writable)
			st->writable = mode_writable(c, fd, path);
		if ((rc = kfs_pread_text(fd, st->optbuf, sizeof st->optbuf)) >= 0)
			return 0;
		/* Gone from the kernel (ENODEV once its object is removed): the path says what is there
		 * now. The held fd stays, never closed under another thread's read. */
		st->writable = false;
	}
	/* One open serves the mode, the inode flags and the value: every GET of a knob walked the
	 * path three times before (stat, the flags' open, the read's open). */
	fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (with_writable)
		st->writable = mode_writable(c, fd, path) && !write_forbidden_by_flags(fd);
	rc = kfs_read_fd(fd, st->optbuf, sizeof st->optbuf);
	close(fd);
	if (rc < 0)
		st->writable = false;
	return rc < 0 ? rc : 0;
}

/* src into dst (len bytes), cut short as snprintf's "%s" would: a knob GET made that snprintf
 * for every choice knob's value. */
static void copy_cut(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Fills st from the file (memset first), and st->writable too when with_writable (a file that
 * cannot be read is not writable either; one that reads unparseable may be): < 0 when the file
 * could not be read. */
static int read_value(const struct knob_catalogue *c, const struct knob *k, struct knob_state *st,
		      bool with_writable)
{
	char path[PATH_MAX];
	int rc, sel;

	memset(st, 0, sizeof *st);
	knob_path(c, k, path, sizeof path);
	if ((rc = read_file(c, k, st, path, with_writable)) < 0) {
		st->read_err = rc;
		return rc;
	}
	if (k->type == KNOB_CHOICE) {
		rc = parse_bracket_list(st->optbuf, st->opts, KNOB_MAX_OPTS, &sel);
		if (rc < 0) {
			st->read_err = -EINVAL;
			st->nopts = 0;
			return 0;
		}
		st->nopts = rc;
		copy_cut(st->value, sizeof st->value, st->opts[sel]);
	} else {
		if (parse_u64(st->optbuf, &st->num) < 0 || st->num > INT64_MAX) {
			st->read_err = -EINVAL;
			return 0;
		}
		snprintf(st->value, sizeof st->value, "%llu", (unsigned long long)st->num);
		st->optbuf[0] = '\0';
	}
	st->available = true;
	return 0;
}

int knob_read(const struct knob_catalogue *c, const struct knob *k, struct knob_state *st)
{
	read_value(c, k, st, true);
	return 0;
}

int knob_read_value(const struct knob_catalogue *c, const struct knob *k, struct knob_state *st)
{
	read_value(c, k, st, false);
	return 0;
}

enum knob_check knob_check_value(const struct knob *k, const struct knob_state *st, const char *value)
{
	uint64_t v;

	if (k->type == KNOB_CHOICE) {
		for (int i = 0; i < st->nopts; i++)
			if (!strcmp(st->opts[i], value))
				return KNOB_OK;
		return KNOB_NOT_ALLOWED;
	}
	if (parse_u64(value, &v) < 0 || v < k->min || v > k->max)
		return KNOB_OUT_OF_RANGE;
	return KNOB_OK;
}

/* A generated tree (tests) holds regular files, which show what was last written rather than the
 * kernel's list with the new selection. So that a choice knob there reads back as the kernel's
 * would, a write to one rewrites the whole list with the new entry bracketed, refusing (EINVAL,
 * like the kernel) a value not in it. Files on sysfs and procfs are always written as they are. */
static int write_generated_choice(const struct knob_catalogue *c, const struct knob *k, const char *value)
{
	struct knob_state st;
	char out[256];
	size_t off = 0;
	int found = 0;

	knob_read(c, k, &st);
	if (!st.available)
		return st.read_err;
	for (int i = 0; i < st.nopts; i++) {
		bool sel = !strcmp(st.opts[i], value);
		int w = snprintf(out + off, sizeof out - off, "%s%s%s%s", i ? " " : "", sel ? "[" : "", st.opts[i],
				 sel ? "]" : "");
		if (w < 0 || (size_t)w >= sizeof out - off - 1)
			return -EFBIG;
		off += (size_t)w;
		found |= sel;
	}
	if (!found)
		return -EINVAL;
	out[off++] = '\n';
	out[off] = '\0';
	return kfs_write(root_of(c, k), k->rel, out);
}

static bool on_kernel_fs(const struct knob_catalogue *c, const struct knob *k)
{
	char path[PATH_MAX];

	knob_path(c, k, path, sizeof path);
	return kfs_on_kernel_fs(path) != 0;   /* unknown: the write itself reports the error */
}

int knob_write(const struct knob_catalogue *c, const struct knob *k, const char *value)
{
	char line[80];

	if (k->type == KNOB_CHOICE && !on_kernel_fs(c, k))
		return write_generated_choice(c, k, value);
	/* With the newline `echo` sends: every knob here ignores one (kernel-interfaces.md §0), and a
	 * generated tree then holds exactly what the kernel would print. */
	if ((size_t)snprintf(line, sizeof line, "%s\n", value) >= sizeof line)
		return -EINVAL;
	return kfs_write(root_of(c, k), k->rel, line);
}

size_t knob_write_each(const struct knob_catalogue *c, const struct knob *const *ks, const char *const *values,
		       size_t n, int *rc)
{
	for (size_t i = 0; i < n; i++) {
		struct knob_state st;
		if ((rc[i] = knob_write(c, ks[i], values[i])) == 0) {
			knob_read_value(c, ks[i], &st);
			rc[i] = !st.available ? st.read_err : strcmp(st.value, values[i]) ? 1 : 0;
		}
		if (rc[i] != 0)
			return i + 1;
	}
	return n;
}
