/* fragment: seed 001's setting made on purpose — a node whose free memory is cut into base pages,
 * so that a THP fault there has to fall back to small pages (or take a remote huge page). The
 * workload takes share_pct of the node's free memory (at most max) in one mapping bound to the node
 * with MADV_NOHUGEPAGE, writes every base page, then frees every other one (MADV_DONTNEED page by
 * page): each freed page's buddy is still held, so none of them can merge back into an order-1 or
 * larger block, let alone order 9. /proc/buddyinfo is read before and after, and the kernel's
 * unusable and fragmentation indices for order 9 are computed from it per node
 * (kernel/buddyinfo.h says how). The memory stays taken until probe_fragment_release(), so another
 * workload can run meanwhile ("during"). */
#include "server/probes/workloads.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/kernel/buddyinfo.h"
#include "server/kernel/mpol.h"
#include "server/probes/pwutil.h"

#define PAGE 4096ull

/* Per node: free blocks per order and the order-9 indices, as {"0": {...}}. */
static json_t *buddy_json(const struct buddyinfo *b, const struct topology *t)
{
	json_t *o = json_object();

	for (int i = 0; o && i < t->n_nodes; i++) {
		uint64_t fr[BUDDY_MAX_ORDERS];
		struct buddy_index x9;
		char key[16];
		int n = buddy_node(b, t->nodes[i].id, fr);
		json_t *orders = json_array();

		if (!n) {
			json_decref(orders);
			continue;
		}
		for (int k = 0; k < n; k++)
			json_array_append_new(orders, json_integer((json_int_t)fr[k]));
		buddy_index(fr, n, 9, &x9);
		snprintf(key, sizeof key, "%u", t->nodes[i].id);
		json_object_set_new(o, key, json_pack("{s:o, s:I, s:I, s:f, s:f}", "free_blocks", orders,
			"free_pages", (json_int_t)x9.free_pages, "order9_blocks", (json_int_t)x9.free_blocks_suitable,
			"unusable_index_order9", x9.unusable / 1000.0,
			"fragmentation_index_order9", x9.fragmentation / 1000.0));
	}
	return o;
}

void probe_fragment_release(struct fragment_hold *h)
{
	if (h->base)
		munmap(h->base, h->len);
	h->base = NULL;
	h->len = 0;
}

int probe_fragment(const struct pw_env *env, const struct fragment_params *p, struct fragment_hold *h,
		   json_t **result, mp_err *e)
{
	const struct topology *t = env->topo;
	struct buddyinfo *before = malloc(sizeof *before), *after = malloc(sizeof *after);
	struct mpol_mask m;
	idset one;
	uint64_t free_kb, len, freed = 0;
	int i = topo_index(t, (unsigned)p->node), r, rc = -1;
	int64_t a, b;
	char *base;

	*result = NULL;
	h->base = NULL;
	h->len = 0;
	if (!before || !after) {
		mp_nomem(e);
		goto out;
	}
	if (i < 0) {
		mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "node %d is not online", p->node);
		goto out;
	}
	free_kb = t->nodes[i].mem_free_kb;
	len = free_kb * 1024 / 100 * p->share_pct;
	if (len > p->max_mib * MIB)
		len = p->max_mib * MIB;
	len = len / HPAGE_2M * HPAGE_2M;
	if (len < HPAGE_2M) {
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, 0, "node %d has %llu kB free: too little to fragment", p->node,
			(unsigned long long)free_kb);
		goto out;
	}
	if ((r = buddy_read(env->procfs_root, before)) < 0) {
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, -r, "read /proc/buddyinfo");
		goto out;
	}
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, errno, "mmap of %llu MiB", (unsigned long long)(len / MIB));
		goto out;
	}
	h->base = base;
	h->len = len;
	idset_clear(&one);
	idset_add(&one, (unsigned)p->node);
	mpol_mask_from(&one, &m);
	/* Bound to the node whatever the process's own policy (the "during" workload runs under that),
	 * and base pages only: a THP here would be one block taken, not 512 scattered ones. */
	if (syscall(SYS_mbind, base, len, MPD_MPOL_BIND, m.bits, m.maxnode, 0) < 0) {
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, errno, "mbind to node %d", p->node);
		goto out;
	}
	madvise(base, len, MADV_NOHUGEPAGE);
	a = pw_now_ns();
	for (uint64_t off = 0; off < len; off += PAGE)
		base[off] = 1;
	for (uint64_t off = PAGE; off < len; off += 2 * PAGE, freed++)
		if (madvise(base + off, PAGE, MADV_DONTNEED) < 0) {
			mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, errno, "madvise MADV_DONTNEED");
			goto out;
		}
	b = pw_now_ns();
	if ((r = buddy_read(env->procfs_root, after)) < 0) {
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, -r, "read /proc/buddyinfo");
		goto out;
	}
	*result = json_pack("{s:i, s:i, s:I, s:I, s:I, s:I, s:f, s:o, s:o}", "node", p->node,
		"share_pct", (int)p->share_pct, "node_free_kb", (json_int_t)free_kb, "taken_mib", (json_int_t)(len / MIB),
		"held_pages", (json_int_t)(len / PAGE - freed), "freed_pages", (json_int_t)freed,
		"elapsed_s", (double)(b - a) / 1e9, "buddy_before", buddy_json(before, t), "buddy_fragmented",
		buddy_json(after, t));
	if (!*result) {
		mp_nomem(e);
		goto out;
	}
	rc = 0;
out:
	if (rc < 0)
		probe_fragment_release(h);
	free(before);
	free(after);
	return rc;
}

/* ---- parameters ------------------------------------------------------------------------------- */

int fragment_parse(const json_t *params, const struct topology *t, const char *const *extra,
		   struct fragment_params *p, mp_err *e)
{
	const char *names[8] = { "node", "share_pct", "max", NULL };
	int64_t share;
	int dflt = -1, k = 3;

	/* extra: members the caller handles itself ("during"). */
	for (; extra && *extra && k < 7; extra++)
		names[k++] = *extra;
	names[k] = NULL;
	for (int i = 0; i < t->n_nodes && dflt < 0; i++)
		if (t->nodes[i].has_memory)
			dflt = (int)t->nodes[i].id;
	if (pp_fields(params, names, e) < 0 ||
	    pp_node(params, "node", t, true, false, dflt, &p->node, e) < 0 ||
	    pp_int(params, "share_pct", 1, 95, 50, &share, e) < 0 ||
	    pp_size_mib(params, "max", 2, 2, 1 << 20, 256, &p->max_mib, e) < 0)
		return -1;
	if (p->node < 0)
		return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "no node has memory");
	p->share_pct = (uint32_t)share;
	return 0;
}

json_t *fragment_params_json(const struct fragment_params *p)
{
	return json_pack("{s:i, s:i, s:I}", "node", p->node, "share_pct", (int)p->share_pct, "max",
			 (json_int_t)(p->max_mib * MIB));
}

uint64_t fragment_bytes(const struct fragment_params *p, const struct topology *t)
{
	int i = topo_index(t, (unsigned)p->node);
	uint64_t len = i < 0 ? 0 : t->nodes[i].mem_free_kb * 1024 / 100 * p->share_pct;
	return len < p->max_mib * MIB ? len : p->max_mib * MIB;
}
