/* The probe workloads called directly (as the probe child calls them), on the real kernel for
 * what only reads or maps memory (thp-fault, sparse-touch, remote-access, numa-hinting, fragment),
 * on a generated tree for the pool hugetlb-alloc grows; and their parsers' refusals. (The
 * fragmentation indices fragment reports are common/extfrag.c's: tests/unit/test_extfrag.c.)
 * Small sizes only: this runs on 2 shared cores. Run it under flock /tmp/mpd-test.lock. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/kernel/topology.h"
#include "server/probes/probe.h"
#include "server/probes/pwutil.h"
#include "server/probes/typed.h"
#include "server/probes/workloads.h"
#include "tests/unit/check_main.h"

static struct topology *topo;

static void real_env(struct pw_env *env)
{
	if (!topo) {
		topo = calloc(1, sizeof *topo);
		ck_assert_ptr_nonnull(topo);
		ck_assert_int_eq(topo_read("/sys", topo), 0);
	}
	*env = (struct pw_env){ .sysfs_root = "/sys", .procfs_root = "/proc", .topo = topo };
}

static json_int_t iget(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	ck_assert_msg(json_is_integer(v), "%s is not an integer", k);
	return json_integer_value(v);
}

/* Sums {"node": {"huge": h, "base": b}} into *h and *b. */
static void node_sums(const json_t *nodes, json_int_t *h, json_int_t *b)
{
	const char *k;
	json_t *v;
	*h = *b = 0;
	json_object_foreach((json_t *)nodes, k, v) {
		*h += iget(v, "huge");
		*b += iget(v, "base");
	}
}

static json_t *obj(const char *text)
{
	json_error_t je;
	json_t *o = json_loads(text, 0, &je);
	ck_assert_msg(o != NULL, "bad test JSON: %s", text);
	return o;
}

/* ---- thp-fault ------------------------------------------------------------------------------ */

START_TEST(thp_fault_figures_consistent)
{
	struct pw_env env;
	struct thp_fault_params p = { .size_mib = 16, .loops = 2 };
	json_t *r = NULL, *passes;
	json_int_t h, b, ok = 0, fail = 0;
	mp_err e = { 0 };
	size_t i;
	json_t *ps;

	real_env(&env);
	ck_assert_msg(probe_thp_fault(&env, &p, &r, &e) == 0, "%s", e.detail);
	ck_assert_int_eq(iget(r, "chunks"), 8);
	ck_assert_int_eq(iget(r, "loops"), 2);
	ck_assert_int_eq(iget(r, "tried"), 16);
	ck_assert_int_eq(iget(r, "succeeded") + iget(r, "failed"), iget(r, "tried"));
	node_sums(json_object_get(r, "nodes"), &h, &b);
	ck_assert_int_eq(h + b + iget(r, "unplaced"), iget(r, "tried"));
	ck_assert_int_eq(h, iget(r, "succeeded"));
	passes = json_object_get(r, "passes");
	ck_assert_int_eq(json_array_size(passes), 2);
	json_array_foreach(passes, i, ps) {
		ok += iget(ps, "succeeded");
		fail += iget(ps, "failed");
		ck_assert_int_le(iget(ps, "different"), iget(ps, "succeeded"));
		ck_assert(json_real_value(json_object_get(ps, "mib_s")) > 0);
	}
	ck_assert_int_eq(ok, iget(r, "succeeded"));
	ck_assert_int_eq(fail, iget(r, "failed"));
	/* kpageflags can only confirm what the PFN test called huge. */
	if (json_is_integer(json_object_get(r, "thp_confirmed")))
		ck_assert_int_le(iget(r, "thp_confirmed"), iget(r, "succeeded"));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "policy"), "mode")), "default");
	json_decref(r);
}
END_TEST

START_TEST(thp_fault_duration_stops)
{
	struct pw_env env;
	struct thp_fault_params p = { .size_mib = 4, .duration_s = 1 };
	json_t *r = NULL;
	mp_err e = { 0 };
	int64_t a = pw_now_ns();

	real_env(&env);
	ck_assert_msg(probe_thp_fault(&env, &p, &r, &e) == 0, "%s", e.detail);
	ck_assert_int_ge(pw_now_ns() - a, 1000000000);
	ck_assert_int_lt(pw_now_ns() - a, 5000000000);
	ck_assert_int_gt(iget(r, "loops"), 1);
	json_decref(r);
}
END_TEST

/* ---- sparse-touch / remote-access / numa-hinting / fragment --------------------------------- */

START_TEST(sparse_touch_runs)
{
	struct pw_env env;
	struct sparse_touch_params p = { .size_mib = 16, .threads = 3, .touches = 4, .passes = 2 };
	json_t *r = NULL, *v;
	json_int_t pages = 0;
	const char *k;
	mp_err e = { 0 };

	real_env(&env);
	ck_assert_msg(probe_sparse_touch(&env, &p, &r, &e) == 0, "%s", e.detail);
	ck_assert(json_real_value(json_object_get(r, "wall_s")) >= json_real_value(json_object_get(r, "max_thread_s")));
	ck_assert(json_real_value(json_object_get(r, "max_thread_s")) >= json_real_value(json_object_get(r, "min_thread_s")));
	/* 8 chunks / 3 threads = 2 each: 6 touched chunks, each placed (or unplaced) once. */
	json_object_foreach(json_object_get(r, "chunk_nodes"), k, v)
		pages += json_integer_value(v);
	ck_assert_int_eq(pages, 6);
	/* At least one fault per touched base page (4 per chunk): 6 * 4 unless THP served them. */
	ck_assert_int_gt(iget(r, "page_faults"), 0);
	json_decref(r);
}
END_TEST

START_TEST(remote_access_matrix)
{
	struct pw_env env;
	struct remote_access_params p = { .size_mib = 4, .passes = 1, .chase_steps = 20000 };
	json_t *r = NULL, *lat, *kd;
	mp_err e = { 0 };

	real_env(&env);
	ck_assert_msg(probe_remote_access(&env, &p, &r, &e) == 0, "%s", e.detail);
	lat = json_object_get(r, "latency_ns");
	kd = json_object_get(r, "kernel_distance");
	ck_assert_int_eq(json_array_size(lat), (size_t)topo->n_nodes);
	ck_assert_int_eq(json_array_size(kd), (size_t)topo->n_nodes);
	ck_assert(json_real_value(json_array_get(json_array_get(lat, 0), 0)) > 0);
	/* Local is 10 by definition on the measured scale, as in the kernel's. */
	ck_assert(json_real_value(json_array_get(json_array_get(json_object_get(r, "measured_distance"), 0), 0)) == 10.0);
	ck_assert(json_real_value(json_array_get(json_array_get(json_object_get(r, "placed_pct"), 0), 0)) == 100.0);
	json_decref(r);
}
END_TEST

START_TEST(numa_hinting_one_pass)
{
	struct pw_env env;
	struct numa_hinting_params p = { .size_mib = 4, .threads = 1, .mem_node = 0, .cpu_node = 0, .duration_s = 1 };
	json_t *r = NULL, *after, *v;
	json_int_t pages = 0;
	const char *k;
	mp_err e = { 0 };

	real_env(&env);
	p.mem_node = p.cpu_node = (int)topo->nodes[0].id;
	ck_assert_msg(probe_numa_hinting(&env, &p, &r, &e) == 0, "%s", e.detail);
	after = json_object_get(r, "pages_after");
	json_object_foreach(after, k, v)
		pages += json_integer_value(v);
	ck_assert_int_eq(pages, 4 * 256);
	ck_assert_int_gt(iget(r, "loops"), 0);
	ck_assert(json_is_object(json_object_get(r, "vmstat")));
	ck_assert(json_is_integer(json_object_get(json_object_get(r, "vmstat"), "numa_hint_faults")));
	json_decref(r);
}
END_TEST

START_TEST(fragment_holds_and_releases)
{
	struct pw_env env;
	struct fragment_params p = { .share_pct = 1, .max_mib = 8 };
	struct fragment_hold h;
	json_t *r = NULL, *n;
	mp_err e = { 0 };
	char key[16];

	real_env(&env);
	p.node = (int)topo->nodes[0].id;
	ck_assert_msg(probe_fragment(&env, &p, &h, &r, &e) == 0, "%s", e.detail);
	ck_assert_ptr_nonnull(h.base);
	ck_assert_int_eq(iget(r, "taken_mib"), 8);
	ck_assert_int_eq(iget(r, "held_pages") + iget(r, "freed_pages"), 8 * 256);
	ck_assert_int_eq(iget(r, "freed_pages"), 8 * 128);
	snprintf(key, sizeof key, "%d", p.node);
	n = json_object_get(json_object_get(r, "buddy_fragmented"), key);
	ck_assert_ptr_nonnull(n);
	ck_assert(json_real_value(json_object_get(n, "unusable_index_order9")) >= 0.0);
	/* The held pages really are held: every other page is still present. */
	ck_assert_int_eq(((char *)h.base)[0], 1);
	probe_fragment_release(&h);
	ck_assert_ptr_null(h.base);
	json_decref(r);
}
END_TEST

/* ---- hugetlb-alloc on a generated pool file ---------------------------------------------------- */

START_TEST(hugetlb_alloc_grows_in_batches_and_restores)
{
	char root[] = "/tmp/mpd-probe-XXXXXX", path[PATH_MAX];
	struct hugetlb_alloc_params p = { .size_kb = 2048, .node = -1, .target = 25, .batch = 10, .timeout_s = 1 };
	struct pw_env env;
	json_t *r = NULL, *batches;
	mp_err e = { 0 };
	FILE *f;
	uint64_t nr;

	ck_assert_ptr_nonnull(mkdtemp(root));
	{
		char cmd[PATH_MAX + 32];
		snprintf(cmd, sizeof cmd, "mkdir -p %s/kernel/mm/hugepages/hugepages-2048kB", root);
		ck_assert_int_eq(system(cmd), 0);
	}
	snprintf(path, sizeof path, "%s/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", root);
	f = fopen(path, "w");
	fputs("7\n", f);
	fclose(f);
	env = (struct pw_env){ .sysfs_root = root, .procfs_root = root };
	ck_assert_msg(probe_hugetlb_alloc(&env, &p, &r, &e) == 0, "%s", e.detail);
	ck_assert_int_eq(iget(r, "nr_before"), 7);
	ck_assert_int_eq(iget(r, "target"), 32);
	ck_assert_int_eq(iget(r, "reached"), 32);
	ck_assert_int_eq(iget(r, "gained"), 25);
	batches = json_object_get(r, "batches");
	ck_assert_int_eq(json_array_size(batches), 3);          /* 10 + 10 + 5 */
	ck_assert_int_eq(iget(json_array_get(batches, 2), "requested"), 5);
	ck_assert_int_eq(iget(json_object_get(r, "latency_ms"), "count"), 3);
	ck_assert(json_is_true(json_object_get(json_object_get(r, "restore"), "ok")));
	f = fopen(path, "r");
	ck_assert_int_eq(fscanf(f, "%lu", &nr), 1);
	fclose(f);
	ck_assert_uint_eq(nr, 7);                               /* put back */
	json_decref(r);
	{
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof cmd, "rm -rf %s", root);
		ck_assert_int_eq(system(cmd), 0);
	}
}
END_TEST

/* ---- parsers: bad input is refused with the member named ------------------------------------- */

START_TEST(parsers_refuse_bad_input)
{
	struct pw_env env;
	struct thp_fault_params tf;
	struct sparse_touch_params st;
	struct numa_hinting_params nh;
	struct hugetlb_alloc_params ha;
	struct remote_access_params ra;
	struct fragment_params fp;
	bool cmp;
	mp_err e = { 0 };
	json_t *o;

	real_env(&env);
#define REFUSE(call, text, want)                                                        \
	do {                                                                                \
		o = obj(text);                                                              \
		memset(&e, 0, sizeof e);                                                    \
		ck_assert_msg((call) < 0, "accepted %s", text);                             \
		ck_assert_msg(e.code == (want), "%s: %s", text, mp_code_name(e.code));      \
		json_decref(o);                                                             \
	} while (0)
	REFUSE(thp_fault_parse(o, &tf, &e), "{\"sise\": 4}", MPE_REQUEST_UNKNOWN_FIELD);
	REFUSE(thp_fault_parse(o, &tf, &e), "{\"size\": \"1P\"}", MPE_PROBE_BAD_PARAM);
	REFUSE(thp_fault_parse(o, &tf, &e), "{\"size\": 3145728}", MPE_PROBE_BAD_PARAM);    /* 3 MiB */
	REFUSE(thp_fault_parse(o, &tf, &e), "{\"size\": \"4T\"}", MPE_PROBE_BAD_PARAM);
	REFUSE(thp_fault_parse(o, &tf, &e), "{\"size\": -2}", MPE_PROBE_BAD_PARAM);
	REFUSE(thp_fault_parse(o, &tf, &e), "{\"size\": true}", MPE_REQUEST_WRONG_TYPE);
	REFUSE(thp_fault_parse(o, &tf, &e), "{\"loops\": 0}", MPE_PROBE_BAD_PARAM);
	REFUSE(thp_fault_parse(o, &tf, &e), "{\"duration_s\": 86400000}", MPE_PROBE_BAD_PARAM);
	REFUSE(thp_fault_parse(o, &tf, &e), "{\"loops\": 2, \"duration_s\": 2}", MPE_PROBE_BAD_PARAM);
	REFUSE(thp_fault_parse(o, &tf, &e), "{\"loops\": 2.5}", MPE_REQUEST_WRONG_TYPE);
	REFUSE(sparse_touch_parse(o, &st, &cmp, &e), "{\"threads\": 0}", MPE_PROBE_BAD_PARAM);
	REFUSE(sparse_touch_parse(o, &st, &cmp, &e), "{\"threads\": 8, \"size\": \"4M\"}", MPE_PROBE_BAD_PARAM);
	REFUSE(sparse_touch_parse(o, &st, &cmp, &e), "{\"compare_thp\": 1}", MPE_REQUEST_WRONG_TYPE);
	REFUSE(numa_hinting_parse(o, topo, &nh, &e), "{\"mem_node\": 4095}", MPE_PROBE_BAD_PARAM);
	REFUSE(numa_hinting_parse(o, topo, &nh, &e), "{\"cpu_node\": 99999}", MPE_PROBE_BAD_PARAM);
	REFUSE(numa_hinting_parse(o, topo, &nh, &e), "{\"cpu_node\": \"0\"}", MPE_REQUEST_WRONG_TYPE);
	REFUSE(numa_hinting_parse(o, topo, &nh, &e), "{\"duration_s\": 0}", MPE_PROBE_BAD_PARAM);
	REFUSE(numa_hinting_parse(o, topo, &nh, &e), "{\"threads\": 0}", MPE_PROBE_BAD_PARAM);
	REFUSE(hugetlb_alloc_parse(o, topo, &ha, &e), "{}", MPE_REQUEST_MISSING_FIELD);
	REFUSE(hugetlb_alloc_parse(o, topo, &ha, &e), "{\"pages\": 0}", MPE_PROBE_BAD_PARAM);
	REFUSE(hugetlb_alloc_parse(o, topo, &ha, &e), "{\"pages\": 999999999}", MPE_PROBE_BAD_PARAM);
	REFUSE(hugetlb_alloc_parse(o, topo, &ha, &e), "{\"pages\": 2, \"page_size\": \"3M\"}", MPE_HUGEPAGES_UNKNOWN_SIZE);
	REFUSE(hugetlb_alloc_parse(o, topo, &ha, &e), "{\"pages\": 2, \"node\": 77}", MPE_PROBE_BAD_PARAM);
	REFUSE(hugetlb_alloc_parse(o, topo, &ha, &e), "{\"pages\": 2, \"batch\": 3}", MPE_PROBE_BAD_PARAM);
	REFUSE(remote_access_parse(o, &ra, &e), "{\"chase_steps\": 1}", MPE_PROBE_BAD_PARAM);
	REFUSE(remote_access_parse(o, &ra, &e), "{\"passes\": 0}", MPE_PROBE_BAD_PARAM);
	REFUSE(fragment_parse(o, topo, NULL, &fp, &e), "{\"share_pct\": 100}", MPE_PROBE_BAD_PARAM);
	REFUSE(fragment_parse(o, topo, NULL, &fp, &e), "{\"node\": 5000}", MPE_PROBE_BAD_PARAM);
	REFUSE(fragment_parse(o, topo, NULL, &fp, &e), "{\"during\": {}}", MPE_REQUEST_UNKNOWN_FIELD);
#undef REFUSE
	/* What parses, normalises to a request that parses back to the same thing. */
	o = obj("{\"size\": \"8M\", \"duration_s\": 2}");
	ck_assert_int_eq(thp_fault_parse(o, &tf, &e), 0);
	json_decref(o);
	o = thp_fault_params_json(&tf);
	memset(&tf, 0, sizeof tf);
	ck_assert_int_eq(thp_fault_parse(o, &tf, &e), 0);
	ck_assert_uint_eq(tf.size_mib, 8);
	ck_assert_uint_eq(tf.duration_s, 2);
	ck_assert_uint_eq(tf.loops, 0);
	json_decref(o);
}
END_TEST

/* Every kind's typed parameters (probes/typed.h) are its normalised ones: pack what parse returned,
 * unpack it, parse that again (as the privileged helper does), and the parameters and the plan
 * are the same. A kind whose pack and unpack disagree would have the helper check, or run, another
 * probe than the one asked for. */
START_TEST(typed_parameters_round_trip_every_kind)
{
	static const struct { const char *kind, *params; } cases[] = {
		{ "touch", "{\"size\": \"8M\", \"hold_ms\": 5, \"thp\": [\"always\", \"never\"]}" },
		{ "thp-fault", "{\"size\": \"64M\", \"duration_s\": 2}" },
		{ "hugetlb-alloc", "{\"page_size\": \"2M\", \"pages\": 4, \"batch\": 2}" },
		{ "sparse-touch", "{\"size\": \"64M\", \"threads\": 2, \"compare_thp\": true}" },
		{ "remote-access", "{\"size\": \"8M\", \"passes\": 2}" },
		{ "numa-hinting", "{\"size\": \"16M\", \"threads\": 2}" },
		{ "fragment", "{\"share_pct\": 30, \"during\": {\"probe\": \"touch\", \"size\": \"4M\"}}" },
	};
	struct pw_env pw;
	struct probe_env env;

	real_env(&pw);
	probe_env_from(topo, &env);
	ck_assert_uint_eq(sizeof cases / sizeof cases[0], probe_nkinds);   /* every kind */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct probe_kind *k = probe_find(cases[i].kind);
		struct probe_plan p1 = { 0 }, p2 = { 0 };
		union probe_params typed;
		json_t *in, *n1, *n2, *back;
		mp_err e = { 0 };

		ck_assert_ptr_nonnull(k);
		ck_assert_ptr_nonnull(in = json_loads(cases[i].params, 0, NULL));
		ck_assert_msg((n1 = k->parse(in, &env, &p1, &e)) != NULL, "%s: %s", k->name, e.detail);
		memset(&typed, 0xa5, sizeof typed);
		ck_assert_msg(k->pack(n1, &env, &typed, &e) == 0, "%s: %s", k->name, e.detail);
		ck_assert_ptr_nonnull(back = k->unpack(&typed));
		ck_assert_msg((n2 = k->parse(back, &env, &p2, &e)) != NULL, "%s: %s", k->name, e.detail);
		ck_assert_msg(json_equal(n1, n2), "%s: %s became %s", k->name, json_dumps(n1, 0), json_dumps(n2, 0));
		ck_assert_int_eq(p1.npasses, p2.npasses);
		ck_assert_uint_eq(p1.bytes, p2.bytes);
		ck_assert_int_eq(p1.nsaves, p2.nsaves);
		json_decref(in);
		json_decref(n1);
		json_decref(n2);
		json_decref(back);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("probes");
	TCase *tc = tcase_create("probes");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, parsers_refuse_bad_input);
	tcase_add_test(tc, typed_parameters_round_trip_every_kind);
	tcase_add_test(tc, hugetlb_alloc_grows_in_batches_and_restores);
	tcase_add_test(tc, thp_fault_figures_consistent);
	tcase_add_test(tc, thp_fault_duration_stops);
	tcase_add_test(tc, sparse_touch_runs);
	tcase_add_test(tc, remote_access_matrix);
	tcase_add_test(tc, numa_hinting_one_pass);
	tcase_add_test(tc, fragment_holds_and_releases);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(suite)
