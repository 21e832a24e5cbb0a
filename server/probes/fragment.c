/* fragment: seed 001's setting made on purpose — a node whose free memory is cut into base pages,
 * so that a THP fault there has to fall back to small pages (or take a remote huge page). The
 * workload takes share_pct of the node's free memory (at most max) in one mapping bound to the node
 * with MADV_NOHUGEPAGE, writes every base page, then frees every other one (MADV_DONTNEED page by
 * page): each freed page's buddy is still held, so none of them can merge back into an order-1 or
 * larger block, let alone order 9. /proc/buddyinfo is read before and after, and the kernel's
 * unusable and fragmentation indices for order 9 are computed from it per node
 * (common/extfrag.h says how). The memory stays taken until probe_fragment_release(), so another
 * workload can run meanwhile ("during"). */
#include "server/probes/workloads.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "common/extfrag.h"
#include "server/kernel/mmcounters.h"
#include "server/kernel/mpol.h"
#include "server/probes/probe.h"
#include "server/probes/pwutil.h"
#include "server/probes/typed.h"

#define PAGE 4096ull

/* Per node: free blocks per order (the node's zones summed) and the order-9 indices, as
 * {"0": {...}}, from one snapshot of /proc/buddyinfo (kernel/mmcounters.h, common/extfrag.h: the
 * same reading and the same arithmetic as every operation's recorded conditions). */
static json_t *buddy_json(const struct mm_snapshot *snap)
{
	json_t *o = json_object();

	for (int i = 0; o && i < snap->nnodes; i++) {
		const struct mm_node *n = &snap->nodes[i];
		uint64_t fr[MMC_MAX_ORDERS] = { 0 };
		struct frag_info fi;
		json_t *orders = json_array();
		char key[16];

		if (!n->nzones) {
			json_decref(orders);
			continue;
		}
		for (int z = 0; z < n->nzones; z++)
			for (int k = 0; k < snap->norders; k++)
				fr[k] += n->zone[z].nr_free[k];
		for (int k = 0; k < snap->norders; k++)
			json_array_append_new(orders, json_integer((json_int_t)fr[k]));
		frag_fill(fr, snap->norders, 9, &fi);
		snprintf(key, sizeof key, "%u", n->id);
		json_object_set_new(o, key, json_pack("{s:o, s:I, s:I, s:f, s:f}", "free_blocks", orders,
			"free_pages", (json_int_t)fi.free_pages, "order9_blocks", (json_int_t)fi.free_blocks_suitable,
			"unusable_index_order9", frag_unusable_index(9, &fi) / 1000.0,
			"fragmentation_index_order9", frag_fragmentation_index(9, &fi) / 1000.0));
	}
	return o;
}

/* Reads buddyinfo into *snap (0, or -errno). */
static int buddy_read(const struct pw_env *env, struct mm_snapshot *snap)
{
	return mmc_read(env->procfs_root, env->sysfs_root, snap);
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
	struct mm_snapshot *before = malloc(sizeof *before), *after = malloc(sizeof *after);
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
	if ((r = buddy_read(env, before)) < 0) {
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
	if ((r = buddy_read(env, after)) < 0) {
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, -r, "read /proc/buddyinfo");
		goto out;
	}
	*result = json_pack("{s:i, s:i, s:I, s:I, s:I, s:I, s:f, s:o, s:o}", "node", p->node,
		"share_pct", (int)p->share_pct, "node_free_kb", (json_int_t)free_kb, "taken_mib", (json_int_t)(len / MIB),
		"held_pages", (json_int_t)(len / PAGE - freed), "freed_pages", (json_int_t)freed,
		"elapsed_s", (double)(b - a) / 1e9, "buddy_before", buddy_json(before), "buddy_fragmented",
		buddy_json(after));
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

/* The kind's own parameters: what the parser takes, what GET /v1/probes lists ("during" is the
 * kind's entry's to check, not fragment_parse's: see extra). */
static const struct probe_param fragment_params_table[] = {
	{ "node", PROBE_PARAM_INTEGER },
	{ "share_pct", PROBE_PARAM_INTEGER },
	{ "max", PROBE_PARAM_SIZE },
	{ "during", PROBE_PARAM_OBJECT },
	{ NULL, 0 },
};

int fragment_parse(const json_t *params, const struct topology *t, const char *const *extra,
		   struct fragment_params *p, mp_err *e)
{
	const char *names[8];
	int64_t share;
	int dflt = -1, k = 0;

	/* The table's members but those the caller handles itself (extra: "during"), which are
	 * taken only when the caller names them. */
	for (const struct probe_param *q = fragment_params_table; q->name && k < 7; q++) {
		bool theirs = strcmp(q->name, "during") == 0, named = false;
		for (const char *const *x = extra; x && *x; x++)
			named |= strcmp(*x, q->name) == 0;
		if (!theirs || named)
			names[k++] = q->name;
	}
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

/* ---- the probe table's entry ------------------------------------------------------------------ */

/* "during": {"probe": KIND, ...KIND's members}: KIND's parser checks them; it must be one pass
 * without settings (a knob changed between passes would be changed under the held memory too). */
static json_t *kind_parse(const json_t *params, const struct probe_env *env, struct probe_plan *plan, mp_err *e)
{
	static const char *const extra[] = { "during", NULL };
	const json_t *during = json_object_get(params, "during"), *kind;
	const struct probe_kind *inner = NULL;
	struct fragment_params p;
	struct probe_plan ip = { 0 };
	json_t *own = NULL, *norm = NULL, *out;

	if (fragment_parse(params, env->topo, extra, &p, e) < 0)
		return NULL;
	plan->npasses = 1;
	plan->bytes = fragment_bytes(&p, env->topo);   /* every page is written before half are freed */
	if (during) {
		if (!json_is_object(during))
			return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "during must be an object: {\"probe\": KIND, ...}"), NULL;
		kind = json_object_get(during, "probe");
		if (!kind)
			return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "during.probe (the probe to run while fragmented) "
				       "is required"), NULL;
		if (!json_is_string(kind))
			return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "during.probe must be a probe kind's name"), NULL;
		inner = probe_find(json_string_value(kind));
		if (!inner || !strcmp(inner->name, "fragment"))
			return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "during.probe must name another probe kind "
				       "(GET /v1/probes lists them)"), NULL;
		if (!(own = json_deep_copy(during)))
			return mp_nomem(e), NULL;
		json_object_del(own, "probe");
		norm = inner->parse(own, env, &ip, e);
		json_decref(own);
		if (!norm)
			return NULL;
		if (ip.npasses != 1 || ip.pass[0].nset) {
			json_decref(norm);
			return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "during: %s here runs %d passes with settings; only a "
				       "probe of one pass without settings can run inside fragment", inner->name,
				       ip.npasses), NULL;
		}
		for (int i = 0; i < ip.nsaves && plan->nsaves < PROBE_MAX_SAVES; i++)
			plan->save[plan->nsaves++] = ip.save[i];
		plan->bytes += ip.bytes;
	}
	if (!(out = fragment_params_json(&p))) {
		json_decref(norm);
		return mp_nomem(e), NULL;
	}
	if (inner)
		json_object_set_new(out, "during", json_pack("{s:s, s:o}", "probe", inner->name, "params", norm));
	return out;
}

/* Runs the inner workload in a process of its own (a fork of this single-threaded child: it
 * inherits the request's policy and CPU binding, and its figures, RSS included, are its own), and
 * returns its result. PR_SET_PDEATHSIG: a cancel that kills this child kills it too. */
static json_t *run_during(const struct probe_kind *k, const json_t *params, char *err, size_t errlen)
{
	int fd[2];
	pid_t parent = getpid(), pid;
	json_t *doc = NULL, *r = NULL;
	json_error_t je;
	int st;

	if (pipe2(fd, O_CLOEXEC) < 0)
		return snprintf(err, errlen, "pipe: %s", strerror(errno)), NULL;
	if ((pid = fork()) < 0) {
		close(fd[0]);
		close(fd[1]);
		return snprintf(err, errlen, "fork: %s", strerror(errno)), NULL;
	}
	if (pid == 0) {
		char e2[512] = "";
		json_t *res = NULL, *o;
		FILE *f;
		close(fd[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		o = k->workload(params, &res, e2, sizeof e2) == 0 ? json_pack("{s:b, s:o}", "ok", 1, "result", res)
								   : json_pack("{s:b, s:s}", "ok", 0, "error", e2);
		f = fdopen(fd[1], "w");
		if (!o || !f || json_dumpf(o, f, JSON_COMPACT) < 0 || fclose(f) != 0)
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	{
		FILE *f = fdopen(fd[0], "r");
		doc = f ? json_loadf(f, 0, &je) : NULL;
		if (f)
			fclose(f);
		else
			close(fd[0]);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!doc || !json_is_true(json_object_get(doc, "ok")))
		snprintf(err, errlen, "the %s probe during the fragmentation failed: %s", k->name,
			 doc ? json_string_value(json_object_get(doc, "error")) : "no result (it died)");
	else
		r = json_incref(json_object_get(doc, "result"));
	json_decref(doc);
	return r;
}

static int kind_workload(const json_t *params, json_t **result, char *err, size_t errlen)
{
	static const char *const extra[] = { "during", NULL };
	const json_t *during = json_object_get(params, "during");
	const struct probe_kind *inner = during ? probe_find(json_string_value(json_object_get(during, "probe"))) : NULL;
	struct fragment_params p;
	struct fragment_hold h = { 0 };
	struct mm_snapshot *b = NULL;
	struct pw_env env;
	json_t *r = NULL, *dr;
	mp_err e = { 0 };

	*result = NULL;
	if (pw_child_env(&env, err, errlen) < 0)
		return -1;
	if (fragment_parse(params, env.topo, extra, &p, &e) < 0 || probe_fragment(&env, &p, &h, &r, &e) < 0)
		return pw_child_fail(&e, err, errlen);
	if (during) {
		if (!inner || !(dr = run_during(inner, json_object_get(during, "params"), err, errlen))) {
			if (!err[0])
				snprintf(err, errlen, "during names no probe kind");
			probe_fragment_release(&h);
			json_decref(r);
			return -1;
		}
		json_object_set_new(r, "during", json_pack("{s:s, s:o}", "probe", inner->name, "result", dr));
	}
	/* What the inner probe left, then what releasing gave back. */
	if ((b = malloc(sizeof *b)) && buddy_read(&env, b) == 0)
		json_object_set_new(r, "buddy_held_end", buddy_json(b));
	probe_fragment_release(&h);
	if (b && buddy_read(&env, b) == 0)
		json_object_set_new(r, "buddy_released", buddy_json(b));
	free(b);
	*result = r;
	return 0;
}

/* The node's order-9 indices before and while fragmented, and the inner probe's figures as
 * during_<name>. */
static json_t *kind_summary(const json_t *r)
{
	json_t *s = json_object(), *inner_sum = NULL, *dur = json_object_get(r, "during");
	char node[16];
	const char *k;
	json_t *v;

	snprintf(node, sizeof node, "%lld", json_integer_value(json_object_get(r, "node")));
	for (const char *const *f = (const char *const[]){ "buddy_before", "buddy_fragmented", NULL }; *f; f++) {
		const json_t *n = json_object_get(json_object_get(r, *f), node);
		char name[96];
		snprintf(name, sizeof name, "%s_unusable_index_order9", *f + strlen("buddy_"));
		json_object_set(s, name, json_object_get(n, "unusable_index_order9"));
		snprintf(name, sizeof name, "%s_fragmentation_index_order9", *f + strlen("buddy_"));
		json_object_set(s, name, json_object_get(n, "fragmentation_index_order9"));
		snprintf(name, sizeof name, "%s_order9_blocks", *f + strlen("buddy_"));
		json_object_set(s, name, json_object_get(n, "order9_blocks"));
	}
	json_object_set(s, "taken_mib", json_object_get(r, "taken_mib"));
	if (dur) {
		const struct probe_kind *k2 = probe_find(json_string_value(json_object_get(dur, "probe")));
		inner_sum = k2 && k2->summary ? k2->summary(json_object_get(dur, "result")) : NULL;
		json_object_foreach(inner_sum, k, v) {
			char name[96];
			snprintf(name, sizeof name, "during_%s", k);
			json_object_set(s, name, v);
		}
		json_decref(inner_sum);
	}
	return s;
}

extern const struct probe_kind probe_fragment_kind;

/* norm is what kind_parse returned: {own members, "during": {"probe": NAME, "params": {...}}}. */
static int kind_pack(const json_t *norm, const struct probe_env *env, union probe_params *out, mp_err *e)
{
	static const char *const extra[] = { "during", NULL };
	const json_t *during = json_object_get(norm, "during");
	struct fragment_typed *f = &out->fragment;
	union probe_params inner;
	size_t k = 0;

	if (fragment_parse(norm, env->topo, extra, &f->own, e) < 0)
		return -1;
	f->inner_kind = (uint32_t)probe_nkinds;
	if (!during)
		return 0;
	while (k < probe_nkinds && strcmp(probe_kinds[k]->name, json_string_value(json_object_get(during, "probe")) ?
					 json_string_value(json_object_get(during, "probe")) : ""))
		k++;
	if (k == probe_nkinds || probe_kinds[k] == &probe_fragment_kind)
		return mp_fail(e, MPE_INTERNAL_ERROR, 0, "fragment: a normalised during it cannot pack");
	if (probe_kinds[k]->pack(json_object_get(during, "params"), env, &inner, e) < 0)
		return -1;
	f->inner_kind = (uint32_t)k;
	f->inner = inner.leaf;
	return 0;
}

/* As kind_parse takes it: the inner kind's members beside "probe" in "during". */
static json_t *kind_unpack(const union probe_params *p)
{
	const struct fragment_typed *f = &p->fragment;
	union probe_params inner = { .leaf = f->inner };
	json_t *o = fragment_params_json(&f->own), *during;

	if (!o || f->inner_kind >= probe_nkinds)
		return o;
	/* An index of fragment itself unpacks to a name kind_parse refuses. */
	if (probe_kinds[f->inner_kind] == &probe_fragment_kind || !(during = probe_kinds[f->inner_kind]->unpack(&inner))) {
		json_object_set_new(o, "during", json_pack("{s:s}", "probe", "fragment"));
		return o;
	}
	json_object_set_new(during, "probe", json_string(probe_kinds[f->inner_kind]->name));
	json_object_set_new(o, "during", during);
	return o;
}

const struct probe_kind probe_fragment_kind = {
	.name = "fragment",
	.job = "probe.fragment",
	.params = fragment_params_table,
	.parse = kind_parse,
	.pack = kind_pack,
	.unpack = kind_unpack,
	.workload = kind_workload,
	.summary = kind_summary,
};
