/* numa-hinting: autonumabench's NUMA01 shape (kernel-interfaces.md §10, seed 004), bounded in size
 * and time. The buffer is first placed on node A (the placing thread prefers A with its own
 * set_mempolicy while it writes every page, then drops the policy, so the pages carry no VMA policy
 * that would forbid migrating them); then `threads` threads bound to node B's CPUs all zero the
 * whole buffer over and over for duration_s. The probe is two passes, kernel.numa_balancing = 1 and
 * then 0, which the framework sets before each child and puts back after.
 * Per phase: wall time, MiB zeroed per second, the /proc/vmstat deltas mmtests shows in its "Ops
 * NUMA ..." rows (numa_hint_faults, numa_hint_faults_local, numa_pages_migrated, numa_pte_updates,
 * ...), and the pages per node at the end (move_pages query): with balancing on, the pages should
 * move towards B. */
#include "server/probes/workloads.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/kernel/mpol.h"
#include "server/kernel/sysfs.h"
#include "server/probes/probe.h"
#include "server/probes/pwutil.h"
#include "server/probes/typed.h"

#define NUMA_BALANCING "sys/kernel/numa_balancing"

struct zeroer {
	pthread_t th;
	char *buf;
	uint64_t len;
	const struct topology *t;
	unsigned node;
	int64_t until_ns;
	uint64_t loops;
};

static void *zero_main(void *arg)
{
	struct zeroer *z = arg;
	pw_bind_thread_to_node(z->t, z->node);
	do {
		memset(z->buf, (int)z->loops, z->len);
		__asm__ volatile("" : : "r"(z->buf) : "memory");
		z->loops++;
	} while (pw_now_ns() < z->until_ns);
	return NULL;
}

static json_t *pages_per_node(char *buf, uint64_t len)
{
	uint64_t n = len / 4096;
	void **pages = calloc(n, sizeof *pages);
	int *st = calloc(n, sizeof *st);
	json_t *o = json_object();

	if (pages && st && o) {
		for (uint64_t i = 0; i < n; i++)
			pages[i] = buf + i * 4096;
		if (pw_pages_nodes(pages, n, st) == 0)
			for (uint64_t i = 0; i < n; i++) {
				char key[16];
				if (st[i] < 0)
					snprintf(key, sizeof key, "unplaced");
				else
					snprintf(key, sizeof key, "%d", st[i]);
				json_t *v = json_object_get(o, key);
				json_object_set_new(o, key, json_integer(v ? json_integer_value(v) + 1 : 1));
			}
	}
	free(pages);
	free(st);
	return o;
}

static json_t *phase(const struct pw_env *env, const struct numa_hinting_params *p, int balancing, mp_err *e)
{
	static const char *const vm_names[] = { "numa_hint_faults", "numa_hint_faults_local", "numa_pages_migrated",
		"numa_pte_updates", "numa_huge_pte_updates", "pgmigrate_success", "pgmigrate_fail", "numa_hit",
		"numa_miss", "numa_local", "numa_other", NULL };
	uint64_t len = p->size_mib * MIB, loops = 0;
	struct zeroer *z = calloc(p->threads, sizeof *z);
	struct pw_vmstat vb, va;
	struct mpol_mask m;
	idset one;
	char *buf;
	json_t *out = NULL, *placed_before;
	uint32_t started = 0;
	int64_t a, b;

	if (!z)
		return mp_nomem(e), NULL;
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (buf == MAP_FAILED) {
		free(z);
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, errno, "mmap of %llu MiB", (unsigned long long)p->size_mib);
		return NULL;
	}
	idset_clear(&one);
	idset_add(&one, (unsigned)p->mem_node);
	mpol_mask_from(&one, &m);
	mpol_set(MPD_MPOL_PREFERRED, &m);
	memset(buf, 1, len);
	mpol_set(MPD_MPOL_DEFAULT, &(struct mpol_mask){ .maxnode = 0 });
	placed_before = pages_per_node(buf, len);

	pw_vmstat_read(env->procfs_root, vm_names, &vb);
	a = pw_now_ns();
	for (uint32_t i = 0; i < p->threads; i++) {
		z[i] = (struct zeroer){ .buf = buf, .len = len, .t = env->topo, .node = (unsigned)p->cpu_node,
					.until_ns = a + (int64_t)p->duration_s * 1000000000 };
		if ((errno = pthread_create(&z[i].th, NULL, zero_main, &z[i])) != 0)
			break;
		started++;
	}
	for (uint32_t i = 0; i < started; i++) {
		pthread_join(z[i].th, NULL);
		loops += z[i].loops;
	}
	b = pw_now_ns();
	pw_vmstat_read(env->procfs_root, vm_names, &va);
	if (started < p->threads) {
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, errno, "pthread_create (thread %u of %u)", started + 1, p->threads);
		json_decref(placed_before);
	} else {
		json_t *d = pw_vmstat_delta(&vb, &va);
		json_int_t hf = json_integer_value(json_object_get(d, "numa_hint_faults"));
		json_int_t hl = json_integer_value(json_object_get(d, "numa_hint_faults_local"));
		double s = (double)(b - a) / 1e9;
		out = json_pack("{s:i, s:f, s:I, s:f, s:o, s:o, s:o, s:f}", "numa_balancing", balancing, "wall_s", s,
			"loops", (json_int_t)loops, "mib_s", s > 0 ? (double)(loops * len) / MIB / s : 0.0,
			"vmstat", d, "pages_before", placed_before, "pages_after", pages_per_node(buf, len),
			/* mmtests "NUMA hint local percent": 100 when there were no hint faults */
			"hint_local_pct", hf ? 100.0 * (double)hl / (double)hf : 100.0);
		if (!out)
			mp_nomem(e);
	}
	munmap(buf, len);
	free(z);
	return out;
}

int probe_numa_hinting(const struct pw_env *env, const struct numa_hinting_params *p, json_t **result,
		       mp_err *e)
{
	uint64_t bal = 0;
	json_t *ph;
	int r;

	*result = NULL;
	if ((r = kfs_read_u64(env->procfs_root, NUMA_BALANCING, &bal)) < 0)
		return mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, -r, "kernel.numa_balancing cannot be read (CONFIG_NUMA_BALANCING?)");
	if (!(ph = phase(env, p, (int)bal, e)))
		return -1;
	if (json_object_update_new(ph, json_pack("{s:I, s:i, s:i, s:i, s:i}", "size_mib", (json_int_t)p->size_mib,
						 "threads", (int)p->threads, "mem_node", p->mem_node,
						 "cpu_node", p->cpu_node, "duration_s", (int)p->duration_s)) < 0) {
		json_decref(ph);
		return mp_nomem(e);
	}
	*result = ph;
	return 0;
}

/* ---- parameters ------------------------------------------------------------------------------- */

/* The kind's own parameters: what the parser takes, what GET /v1/probes lists. */
static const struct probe_param numa_hinting_params_table[] = {
	{ "size", PROBE_PARAM_SIZE },
	{ "threads", PROBE_PARAM_INTEGER },
	{ "mem_node", PROBE_PARAM_INTEGER },
	{ "cpu_node", PROBE_PARAM_INTEGER },
	{ "duration_s", PROBE_PARAM_INTEGER },
	{ NULL, 0 },
};

int numa_hinting_parse(const json_t *params, const struct topology *t, struct numa_hinting_params *p, mp_err *e)
{
	int64_t threads, dur;
	int a_dflt = -1, b_dflt = -1, a, b;

	/* Defaults: A is the first node with memory, B the first other node with CPUs (A itself on a
	 * machine of one node, where the probe still measures the scanning's cost). */
	for (int i = 0; i < t->n_nodes && a_dflt < 0; i++)
		if (t->nodes[i].has_memory)
			a_dflt = (int)t->nodes[i].id;
	for (int i = 0; i < t->n_nodes && b_dflt < 0; i++)
		if (t->nodes[i].has_cpu && (int)t->nodes[i].id != a_dflt)
			b_dflt = (int)t->nodes[i].id;
	if (b_dflt < 0)
		b_dflt = a_dflt;
	if (probe_params_only(params, numa_hinting_params_table, e) < 0 ||
	    pp_size_mib(params, "size", 1, 1, 1 << 20, 64, &p->size_mib, e) < 0 ||
	    pp_int(params, "threads", 1, 1024, 2, &threads, e) < 0 ||
	    pp_int(params, "duration_s", 1, 600, 3, &dur, e) < 0 ||
	    pp_node(params, "mem_node", t, true, false, a_dflt, &a, e) < 0 ||
	    pp_node(params, "cpu_node", t, false, true, b_dflt, &b, e) < 0)
		return -1;
	if (a < 0 || b < 0)
		return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "no node with memory and CPUs to run on");
	p->threads = (uint32_t)threads;
	p->duration_s = (uint32_t)dur;
	p->mem_node = a;
	p->cpu_node = b;
	return 0;
}

json_t *numa_hinting_params_json(const struct numa_hinting_params *p)
{
	return json_pack("{s:I, s:i, s:i, s:i, s:i}", "size", (json_int_t)(p->size_mib * MIB), "threads",
			 (int)p->threads, "mem_node", p->mem_node, "cpu_node", p->cpu_node, "duration_s",
			 (int)p->duration_s);
}

/* ---- the probe table's entry ------------------------------------------------------------------ */

static json_t *kind_parse(const json_t *params, const struct probe_env *env, struct probe_plan *plan, mp_err *e)
{
	struct numa_hinting_params p;

	if (numa_hinting_parse(params, env->topo, &p, e) < 0)
		return NULL;
	plan->bytes = p.size_mib * MIB;
	plan->npasses = 2;
	plan->pass[0] = (struct probe_pass){ .label = "on", .nset = 1, .set = { { "numa.balancing", "1" } } };
	plan->pass[1] = (struct probe_pass){ .label = "off", .nset = 1, .set = { { "numa.balancing", "0" } } };
	return numa_hinting_params_json(&p);
}

static int kind_workload(const json_t *params, json_t **result, char *err, size_t errlen)
{
	struct numa_hinting_params p;
	struct pw_env env;
	json_t *own = json_deep_copy(params);
	mp_err e = { 0 };
	int rc;

	if (!own)
		return snprintf(err, errlen, "out of memory"), -1;
	json_object_del(own, "pass");
	rc = pw_child_env(&env, err, errlen) < 0 ? -1
	     : numa_hinting_parse(own, env.topo, &p, &e) < 0 || probe_numa_hinting(&env, &p, result, &e) < 0
		     ? pw_child_fail(&e, err, errlen) : 0;
	json_decref(own);
	return rc;
}

/* autonumabench's rows: time, throughput, and the "Ops NUMA ..." vmstat deltas. */
static json_t *kind_summary(const json_t *r)
{
	json_t *s = json_object();
	for (const char *const *f = (const char *const[]){ "wall_s", "mib_s", "hint_local_pct", NULL }; *f; f++)
		json_object_set(s, *f, json_object_get(r, *f));
	json_object_update(s, json_object_get(r, "vmstat"));
	pw_summary_counts(s, json_object_get(r, "pages_after"), "pages_after_node");
	return s;
}

static int kind_pack(const json_t *norm, const struct probe_env *env, union probe_params *out, mp_err *e)
{
	return numa_hinting_parse(norm, env->topo, &out->leaf.numa_hinting, e) < 0 ? -1 : 0;
}

static json_t *kind_unpack(const union probe_params *p)
{
	return numa_hinting_params_json(&p->leaf.numa_hinting);
}

const struct probe_kind probe_numa_hinting_kind = {
	.name = "numa-hinting",
	.job = "probe.numa-hinting",
	.params = numa_hinting_params_table,
	.parse = kind_parse,
	.pack = kind_pack,
	.unpack = kind_unpack,
	.workload = kind_workload,
	.summary = kind_summary,
};
