/* remote-access: a measured distance matrix beside the kernel's (seed 001: remote THP access cost).
 * For every node A with memory: one buffer bound to A (mbind MPOL_BIND, then written, so every page
 * is A's; move_pages checks how many really are); then for every node B with CPUs, the thread
 * binds itself to B's CPUs and measures
 *   read bandwidth: sequential 8-byte reads over the whole buffer, `passes` times, the best pass;
 *   latency: a pointer chase over the buffer's cache lines in one random cycle (Sattolo), so every
 *            load depends on the previous one and the prefetcher cannot guess: ns per load.
 * rows are the CPU node, columns the memory node. "measured_distance" scales each row's latency to
 * the kernel's convention (local = 10), so the two matrices read the same way. An emulator (QEMU
 * TCG) has no remote cost: then the matrix is flat and "remote_over_local" says so. */
#include "server/probes/workloads.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/kernel/mpol.h"
#include "server/probes/probe.h"
#include "server/probes/pwutil.h"
#include "server/probes/typed.h"

#define LINE 64

static uint64_t rng_next(uint64_t *s)        /* xorshift64*: the chase needs no crypto */
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Writes one random cycle through the buffer's lines: line i holds the address of its successor. */
static void build_chase(char *buf, uint64_t lines)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint32_t *perm = malloc(lines * sizeof *perm);
	if (!perm) {
		for (uint64_t i = 0; i < lines; i++)
			*(char **)(buf + i * LINE) = buf + ((i + 1) % lines) * LINE;
		return;
	}
	for (uint64_t i = 0; i < lines; i++)
		perm[i] = (uint32_t)i;
	for (uint64_t i = lines - 1; i > 0; i--) {   /* Sattolo: one cycle through all */
		uint64_t j = rng_next(&seed) % i;
		uint32_t x = perm[i];
		perm[i] = perm[j];
		perm[j] = x;
	}
	for (uint64_t i = 0; i < lines; i++)
		*(char **)(buf + (uint64_t)perm[i] * LINE) = buf + (uint64_t)perm[(i + 1) % lines] * LINE;
	free(perm);
}

static double read_mib_s(const char *buf, uint64_t len, uint32_t passes)
{
	double best = 0;
	for (uint32_t p = 0; p < passes; p++) {
		const volatile uint64_t *w = (const volatile uint64_t *)buf;
		uint64_t sum = 0;
		int64_t a = pw_now_ns();
		for (uint64_t i = 0; i < len / 8; i += 8)   /* one load per word, unrolled by the loop */
			sum += w[i] + w[i + 1] + w[i + 2] + w[i + 3] + w[i + 4] + w[i + 5] + w[i + 6] + w[i + 7];
		int64_t ns = pw_now_ns() - a;
		__asm__ volatile("" : : "r"(sum));
		double v = ns > 0 ? (double)len / MIB / ((double)ns / 1e9) : 0;
		best = v > best ? v : best;
	}
	return best;
}

static double chase_ns(char *buf, uint64_t steps)
{
	char *volatile *p = (char *volatile *)buf;
	int64_t a = pw_now_ns();
	for (uint64_t i = 0; i < steps; i++)
		p = (char *volatile *)*p;
	int64_t ns = pw_now_ns() - a;
	__asm__ volatile("" : : "r"(p));
	return (double)ns / (double)steps;
}

int probe_remote_access(const struct pw_env *env, const struct remote_access_params *p, json_t **result,
			mp_err *e)
{
	const struct topology *t = env->topo;
	uint64_t len = p->size_mib * MIB;
	cpu_set_t saved;
	json_t *ids = json_array(), *kd = json_array(), *bw = json_array(), *lat = json_array(), *placed = json_array();
	json_t *md = json_array(), *out = NULL;
	double local_sum = 0, remote_sum = 0;
	int nlocal = 0, nremote = 0, rc = -1;
	double lat_m[TOPO_MAX_NODES][TOPO_MAX_NODES];
	bool have[TOPO_MAX_NODES][TOPO_MAX_NODES];

	*result = NULL;
	memset(have, 0, sizeof have);
	if (!ids || !kd || !bw || !lat || !placed || !md) {
		mp_nomem(e);
		goto out;
	}
	sched_getaffinity(0, sizeof saved, &saved);
	for (int i = 0; i < t->n_nodes; i++) {
		json_t *row = json_array();
		json_array_append_new(ids, json_integer(t->nodes[i].id));
		for (int j = 0; j < t->n_nodes; j++)
			json_array_append_new(row, json_integer(t->nodes[i].distance[j]));
		json_array_append_new(kd, row);
	}
	/* Rows (CPU node) are filled column by column (memory node): start with null rows. */
	for (int b = 0; b < t->n_nodes; b++) {
		json_t *r1 = json_array(), *r2 = json_array(), *r3 = json_array();
		for (int a = 0; a < t->n_nodes; a++) {
			json_array_append_new(r1, json_null());
			json_array_append_new(r2, json_null());
			json_array_append_new(r3, json_null());
		}
		json_array_append_new(bw, r1);
		json_array_append_new(lat, r2);
		json_array_append_new(placed, r3);
	}
	for (int a = 0; a < t->n_nodes; a++) {
		struct mpol_mask m;
		idset one;
		char *buf;
		uint64_t on_a = 0, sampled = 0;

		if (!t->nodes[a].has_memory)
			continue;
		buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
		if (buf == MAP_FAILED) {
			mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, errno, "mmap of %llu MiB", (unsigned long long)p->size_mib);
			goto out;
		}
		idset_clear(&one);
		idset_add(&one, t->nodes[a].id);
		mpol_mask_from(&one, &m);
		if (syscall(SYS_mbind, buf, len, MPD_MPOL_BIND, m.bits, m.maxnode, 0) < 0) {
			mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, errno, "mbind to node %u", t->nodes[a].id);
			munmap(buf, len);
			goto out;
		}
		memset(buf, 1, len);
		build_chase(buf, len / LINE);
		for (uint64_t off = 0; off < len; off += 64 * 4096, sampled++)
			on_a += pw_page_node(buf + off) == (int)t->nodes[a].id;
		for (int b = 0; b < t->n_nodes; b++) {
			if (!t->nodes[b].has_cpu || pw_bind_thread_to_node(t, t->nodes[b].id) < 0)
				continue;
			double mbs = read_mib_s(buf, len, p->passes);
			double ns = chase_ns(buf, p->chase_steps);
			json_array_set_new(json_array_get(bw, b), a, json_real(mbs));
			json_array_set_new(json_array_get(lat, b), a, json_real(ns));
			json_array_set_new(json_array_get(placed, b), a,
					   json_real(sampled ? 100.0 * (double)on_a / (double)sampled : 0));
			lat_m[b][a] = ns;
			have[b][a] = true;
			if (a == b) {
				local_sum += ns;
				nlocal++;
			} else {
				remote_sum += ns;
				nremote++;
			}
			if (pw_past(env))
				break;
		}
		munmap(buf, len);
		if (pw_past(env))
			break;
	}
	sched_setaffinity(0, sizeof saved, &saved);
	/* The ratio first, then the scale: 10.0 * x / x can round to 10.000000000000002, and the
	 * diagonal must read exactly 10 like the kernel's. */
	for (int b = 0; b < t->n_nodes; b++) {
		json_t *row = json_array();
		for (int a = 0; a < t->n_nodes; a++)
			json_array_append_new(row, have[b][a] && have[b][b] && lat_m[b][b] > 0
						   ? json_real(10.0 * (lat_m[b][a] / lat_m[b][b])) : json_null());
		json_array_append_new(md, row);
	}
	out = json_pack("{s:I, s:i, s:I, s:O, s:O, s:O, s:O, s:O, s:O}", "size_mib", (json_int_t)p->size_mib,
		"passes", (int)p->passes, "chase_steps", (json_int_t)p->chase_steps, "nodes", ids,
		"kernel_distance", kd, "read_mib_s", bw, "latency_ns", lat, "placed_pct", placed,
		"measured_distance", md);
	if (!out) {
		mp_nomem(e);
		goto out;
	}
	json_object_set_new(out, "local_ns", nlocal ? json_real(local_sum / nlocal) : json_null());
	json_object_set_new(out, "remote_ns", nremote ? json_real(remote_sum / nremote) : json_null());
	json_object_set_new(out, "remote_over_local",
			    nlocal && nremote && local_sum > 0
				    ? json_real((remote_sum / nremote) / (local_sum / nlocal)) : json_null());
	*result = out;
	rc = 0;
out:
	json_decref(ids);
	json_decref(kd);
	json_decref(bw);
	json_decref(lat);
	json_decref(placed);
	json_decref(md);
	return rc;
}

/* ---- parameters ------------------------------------------------------------------------------- */

/* The kind's own parameters: what the parser takes, what GET /v1/probes lists. */
static const struct probe_param remote_access_params_table[] = {
	{ "size", PROBE_PARAM_SIZE },
	{ "passes", PROBE_PARAM_INTEGER },
	{ "chase_steps", PROBE_PARAM_INTEGER },
	{ NULL, 0 },
};

int remote_access_parse(const json_t *params, struct remote_access_params *p, mp_err *e)
{
	int64_t passes, steps;

	if (probe_params_only(params, remote_access_params_table, e) < 0 ||
	    pp_size_mib(params, "size", 1, 1, 1 << 16, 32, &p->size_mib, e) < 0 ||
	    pp_int(params, "passes", 1, 1000, 3, &passes, e) < 0 ||
	    pp_int(params, "chase_steps", 1000, 1000000000, 2000000, &steps, e) < 0)
		return -1;
	p->passes = (uint32_t)passes;
	p->chase_steps = (uint32_t)steps;
	return 0;
}

json_t *remote_access_params_json(const struct remote_access_params *p)
{
	return json_pack("{s:I, s:i, s:I}", "size", (json_int_t)(p->size_mib * MIB), "passes", (int)p->passes,
			 "chase_steps", (json_int_t)p->chase_steps);
}

/* ---- the probe table's entry ------------------------------------------------------------------ */

static json_t *kind_parse(const json_t *params, const struct probe_env *env, struct probe_plan *plan, mp_err *e)
{
	struct remote_access_params p;

	(void)env;
	if (remote_access_parse(params, &p, e) < 0)
		return NULL;
	plan->npasses = 1;
	plan->bytes = p.size_mib * MIB;    /* one buffer at a time */
	return remote_access_params_json(&p);
}

static int kind_workload(const json_t *params, json_t **result, char *err, size_t errlen)
{
	struct remote_access_params p;
	struct pw_env env;
	mp_err e = { 0 };

	if (pw_child_env(&env, err, errlen) < 0)
		return -1;
	if (remote_access_parse(params, &p, &e) < 0 || probe_remote_access(&env, &p, result, &e) < 0)
		return pw_child_fail(&e, err, errlen);
	return 0;
}

/* Local and remote latency, their ratio, and every pair: latency_ns_cpu<B>_mem<A>. */
static json_t *kind_summary(const json_t *r)
{
	json_t *s = json_object(), *ids = json_object_get(r, "nodes");
	for (const char *const *f = (const char *const[]){ "local_ns", "remote_ns", "remote_over_local", NULL }; *f; f++)
		if (json_is_number(json_object_get(r, *f)))
			json_object_set(s, *f, json_object_get(r, *f));
	for (size_t b = 0; b < json_array_size(ids); b++)
		for (size_t a = 0; a < json_array_size(ids); a++) {
			char name[64];
			json_t *lat = json_array_get(json_array_get(json_object_get(r, "latency_ns"), b), a);
			json_t *bw = json_array_get(json_array_get(json_object_get(r, "read_mib_s"), b), a);
			if (!json_is_number(lat))
				continue;
			snprintf(name, sizeof name, "latency_ns_cpu%lld_mem%lld", json_integer_value(json_array_get(ids, b)),
				 json_integer_value(json_array_get(ids, a)));
			json_object_set(s, name, lat);
			snprintf(name, sizeof name, "read_mib_s_cpu%lld_mem%lld", json_integer_value(json_array_get(ids, b)),
				 json_integer_value(json_array_get(ids, a)));
			json_object_set(s, name, bw);
		}
	return s;
}

static int kind_pack(const json_t *norm, const struct probe_env *env, union probe_params *out, mp_err *e)
{
	(void)env;
	return remote_access_parse(norm, &out->leaf.remote_access, e) < 0 ? -1 : 0;
}

static json_t *kind_unpack(const union probe_params *p)
{
	return remote_access_params_json(&p->leaf.remote_access);
}

const struct probe_kind probe_remote_access_kind = {
	.name = "remote-access",
	.job = "probe.remote-access",
	.params = remote_access_params_table,
	.parse = kind_parse,
	.pack = kind_pack,
	.unpack = kind_unpack,
	.workload = kind_workload,
	.summary = kind_summary,
};
