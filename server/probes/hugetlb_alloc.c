/* hugetlb-alloc: the mmtests hpagealloc method (kernel-interfaces.md §8): grow one pool (a page
 * size, globally or on one node) from its current count by `pages`, `batch` pages per step; each
 * step writes the step's target to nr_hugepages and reads it back, again while it falls short
 * and the step's time lasts (timed-hpagealloc.pl's inner loop), and records per_page_ms =
 * elapsed / pages gained (elapsed when none). A step that gains nothing ends the growth. Then the
 * pool is written back to the count it had before, and the read-back says whether it got there.
 * Latency is summarised the mmtests way (common/mmstats.h). */
#include "server/probes/workloads.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mmstats.h"
#include "server/kernel/hugetlb.h"
#include "server/probes/probe.h"
#include "server/probes/pwutil.h"
#include "server/probes/typed.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int probe_hugetlb_alloc(const struct pw_env *env, const struct hugetlb_alloc_params *p, json_t **result,
			mp_err *e)
{
	static const char *const vm_names[] = { "htlb_buddy_alloc_success", "htlb_buddy_alloc_fail", "compact_stall",
				   "compact_success", "compact_fail", "compact_migrate_scanned", "compact_free_scanned",
				   "cma_alloc_success", "cma_alloc_fail", NULL };
	struct kfs_file f = { .fd = -1 };
	struct pw_vmstat vb, va;
	uint64_t before = 0, cur, goal, after = 0;
	double *lat = NULL;              /* owned: per-page ms per step that gained pages */
	size_t nlat = 0;
	json_t *batches = json_array(), *out = NULL;
	const char *stop = "target";
	int r, rc = -1;
	uint64_t total_gained = 0;
	int64_t total_ns = 0;

	*result = NULL;
	if (!batches)
		return mp_nomem(e);
	if ((r = htlb_open_nr(env->sysfs_root, p->size_kb, p->node, &f)) < 0 ||
	    (r = kfs_file_read_u64(&f, &before)) < 0) {
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, -r, "open the pool's nr_hugepages");
		goto out;
	}
	if (!(lat = calloc(p->target / (p->batch ? p->batch : 1) + 2, sizeof *lat))) {
		mp_nomem(e);
		goto out;
	}
	pw_vmstat_read(env->procfs_root, vm_names, &vb);
	cur = before;
	goal = before + p->target;
	while (cur < goal) {
		uint64_t want = cur + (goal - cur < p->batch ? goal - cur : p->batch), got = cur;
		int64_t a = pw_now_ns(), el;
		int writes = 0, idle = 0;

		/* Retry while short: the kernel may free or compact between writes. Stop a step after 10
		 * writes in a row that gained nothing, or when its time is up. */
		do {
			uint64_t prev = got;
			if ((r = kfs_file_write_u64(&f, want)) < 0 && r != -ENOMEM && r != -EBUSY) {
				mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, -r, "write nr_hugepages=%llu", (unsigned long long)want);
				goto restore;
			}
			if ((r = kfs_file_read_u64(&f, &got)) < 0) {
				mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, -r, "read back nr_hugepages");
				goto restore;
			}
			writes++;
			idle = got > prev ? 0 : idle + 1;
			el = pw_now_ns() - a;
		} while (got < want && idle < 10 && el < (int64_t)p->timeout_s * 1000000000 && !pw_past(env));
		uint64_t gained = got > cur ? got - cur : 0;
		double ms = (double)el / 1e6, per = gained ? ms / (double)gained : ms;
		json_array_append_new(batches, json_pack("{s:I, s:I, s:I, s:i, s:f, s:f}",
			"requested", (json_int_t)(want - cur), "achieved", (json_int_t)gained, "nr_after", (json_int_t)got,
			"writes", writes, "elapsed_ms", ms, "per_page_ms", per));
		total_ns += el;
		total_gained += gained;
		if (gained)
			lat[nlat++] = per;
		cur = got;
		if (!gained) {
			stop = "no_progress";
			break;
		}
		if (pw_past(env)) {
			stop = "deadline";
			break;
		}
	}
	rc = 0;
restore:
	pw_vmstat_read(env->procfs_root, vm_names, &va);
	/* Put the pool back however the growth ended; the framework's restore row covers a kill. */
	r = kfs_file_write_u64(&f, before);
	if (kfs_file_read_u64(&f, &after) < 0)
		after = UINT64_MAX;
	if (rc == 0) {
		struct mmstats st;
		char size[32];
		json_t *lj;
		qsort(lat, nlat, sizeof *lat, cmp_double);
		mmstats_sorted(lat, nlat, &st);
		lj = nlat ? json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "count", (json_int_t)st.count,
				      "min", st.min, "q1", st.q1, "q2", st.q2, "q3", st.q3, "max", st.max,
				      "amean", st.amean, "stddev", isnan(st.stddev) ? 0.0 : st.stddev)
			  : json_pack("{s:i}", "count", 0);
		format_size_kb(p->size_kb, size, sizeof size);
		out = json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:s, s:f, s:o, s:o, s:o, s:{s:I, s:I, s:b}}",
			"size", size, "node", p->node < 0 ? json_null() : json_integer(p->node),
			"nr_before", (json_int_t)before, "target", (json_int_t)goal, "reached", (json_int_t)cur,
			"gained", (json_int_t)total_gained, "stopped", stop, "elapsed_ms", (double)total_ns / 1e6,
			"latency_ms", lj, "batches", batches, "vmstat", pw_vmstat_delta(&vb, &va),
			"restore", "to", (json_int_t)before, "read_back", (json_int_t)(after == UINT64_MAX ? -1 : (json_int_t)after),
			"ok", r == 0 && after == before);
		batches = NULL;
		if (!out) {
			rc = mp_nomem(e);
			goto out;
		}
		*result = out;
	}
out:
	kfs_close(&f);
	free(lat);
	json_decref(batches);
	return rc;
}

/* ---- parameters ------------------------------------------------------------------------------- */

/* The kind's own parameters: what the parser takes, what GET /v1/probes lists. */
static const struct probe_param hugetlb_alloc_params_table[] = {
	{ "page_size", PROBE_PARAM_STRING },
	{ "node", PROBE_PARAM_INTEGER },
	{ "pages", PROBE_PARAM_INTEGER },
	{ "batch", PROBE_PARAM_INTEGER },
	{ "timeout_s", PROBE_PARAM_INTEGER },
	{ NULL, 0 },
};

int hugetlb_alloc_parse(const json_t *params, const struct topology *t, struct hugetlb_alloc_params *p, mp_err *e)
{
	const json_t *sz = json_object_get(params, "page_size");
	uint64_t size_kb = 2048, mem_kb = 0;
	int64_t pages, batch, timeout;
	bool offered = false;
	int node;

	if (probe_params_only(params, hugetlb_alloc_params_table, e) < 0)
		return -1;
	if (sz && !json_is_string(sz))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "page_size must be a string such as \"2M\" or \"1G\"");
	if (sz && (strlen(json_string_value(sz)) > 32 || parse_size_kb(json_string_value(sz), &size_kb) < 0))
		return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "page_size is not a page size such as \"2M\" or \"1G\"");
	if (pp_node(params, "node", t, true, false, -1, &node, e) < 0)
		return -1;
	for (int i = 0; i < t->n_nodes; i++) {
		if (node >= 0 && t->nodes[i].id != (unsigned)node)
			continue;
		mem_kb += t->nodes[i].mem_total_kb;
		for (int k = 0; k < t->nodes[i].n_hp_sizes; k++)
			offered |= t->nodes[i].hp_sizes_kb[k] == size_kb;
	}
	if (!offered)
		return mp_fail(e, MPE_HUGEPAGES_UNKNOWN_SIZE, 0, "no hugetlb pool of %llu kB%s",
			       (unsigned long long)size_kb, node >= 0 ? " on that node" : "");
	if (!pp_has(params, "pages"))
		return mp_fail(e, MPE_REQUEST_MISSING_FIELD, 0, "pages (how many pages to grow the pool by) is required");
	/* Bounded by the memory that could hold the pages; the framework bounds it by free memory. */
	if (pp_int(params, "pages", 1, (int64_t)(mem_kb / size_kb ? mem_kb / size_kb : 1), 0, &pages, e) < 0 ||
	    pp_int(params, "batch", 1, pages, pages < 10 ? pages : 10, &batch, e) < 0 ||
	    pp_int(params, "timeout_s", 1, 600, 10, &timeout, e) < 0)
		return -1;
	p->size_kb = size_kb;
	p->node = node;
	p->target = (uint64_t)pages;
	p->batch = (uint32_t)batch;
	p->timeout_s = (uint32_t)timeout;
	return 0;
}

json_t *hugetlb_alloc_params_json(const struct hugetlb_alloc_params *p)
{
	char size[32];
	json_t *o;

	format_size_kb(p->size_kb, size, sizeof size);
	o = json_pack("{s:s, s:I, s:I, s:I}", "page_size", size, "pages", (json_int_t)p->target, "batch",
		      (json_int_t)p->batch, "timeout_s", (json_int_t)p->timeout_s);
	if (o && p->node >= 0)
		json_object_set_new(o, "node", json_integer(p->node));
	return o;
}

/* ---- the probe table's entry ------------------------------------------------------------------ */

static json_t *kind_parse(const json_t *params, const struct probe_env *env, struct probe_plan *plan, mp_err *e)
{
	struct hugetlb_alloc_params p;

	if (hugetlb_alloc_parse(params, env->topo, &p, e) < 0)
		return NULL;
	plan->npasses = 1;
	plan->bytes = p.target * p.size_kb * 1024;
	/* The workload puts the pool back itself; this row does it when the child is killed. */
	plan->nsaves = 1;
	plan->save[0] = (struct probe_save){ .what = PROBE_SAVE_POOL, .size_kb = p.size_kb, .node = p.node };
	return hugetlb_alloc_params_json(&p);
}

static int kind_workload(const json_t *params, json_t **result, char *err, size_t errlen)
{
	struct hugetlb_alloc_params p;
	struct pw_env env;
	mp_err e = { 0 };

	if (pw_child_env(&env, err, errlen) < 0)
		return -1;
	if (hugetlb_alloc_parse(params, env.topo, &p, &e) < 0 || probe_hugetlb_alloc(&env, &p, result, &e) < 0)
		return pw_child_fail(&e, err, errlen);
	return 0;
}

/* hpagealloc's compare rows: per-page latency quartiles, and what the kernel gave. */
static json_t *kind_summary(const json_t *r)
{
	json_t *s = json_object(), *lat = json_object_get(r, "latency_ms");
	const char *k;
	json_t *v;

	json_object_foreach(lat, k, v) {
		char name[48];
		snprintf(name, sizeof name, "latency_ms_%s", k);
		json_object_set(s, name, v);
	}
	for (const char *const *f = (const char *const[]){ "gained", "reached", "elapsed_ms", NULL }; *f; f++)
		json_object_set(s, *f, json_object_get(r, *f));
	json_object_update(s, json_object_get(r, "vmstat"));
	return s;
}

static int kind_pack(const json_t *norm, const struct probe_env *env, union probe_params *out, mp_err *e)
{
	return hugetlb_alloc_parse(norm, env->topo, &out->leaf.hugetlb_alloc, e) < 0 ? -1 : 0;
}

static json_t *kind_unpack(const union probe_params *p)
{
	return hugetlb_alloc_params_json(&p->leaf.hugetlb_alloc);
}

const struct probe_kind probe_hugetlb_alloc_kind = {
	.name = "hugetlb-alloc",
	.job = "probe.hugetlb-alloc",
	.params = hugetlb_alloc_params_table,
	.parse = kind_parse,
	.pack = kind_pack,
	.unpack = kind_unpack,
	.workload = kind_workload,
	.summary = kind_summary,
};
