/* Resize targets against a topology built here: which "nodes" keys are planned and which refused. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server/app.h"
#include "server/api/api.h"
#include "server/ops/resize.h"
#include "server/ops/resize_plan.h"
#include "tests/unit/check_main.h"

static char root[64];

/* Node 0 online with 4 GiB and a 2M pool directory, the 2M size; nothing else. */
static void setup(struct app *app, struct topology *t, struct resize_args *a)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(root, sizeof root, "/tmp/mpd-plan-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(path, sizeof path, "mkdir -p '%s/devices/system/node/node0/hugepages/hugepages-2048kB'", root);
	ck_assert_int_eq(system(path), 0);
	snprintf(path, sizeof path, "mkdir -p '%s/kernel/mm/hugepages/hugepages-2048kB' && echo 0 > "
		 "'%s/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages'", root, root);
	ck_assert_int_eq(system(path), 0);
	snprintf(path, sizeof path, "%s/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", root);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs("0\n", f);
	fclose(f);
	memset(app, 0, sizeof *app);
	app->sysfs_root = root;
	memset(t, 0, sizeof *t);
	t->n_nodes = 1;
	t->nodes[0].id = 0;
	t->nodes[0].mem_total_kb = 4194304;
	idset_add(&t->online, 0);
	memset(a, 0, sizeof *a);
	a->app = app;
	a->size_kb = 2048;
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

/* Found by tests/fuzz/fuzz_resize: {"nodes": {"00": 4}} passed validation (00 is node 0, which is
 * online) but was looked up as "0", so the plan had no target at all and the resize did nothing. */
START_TEST(node_keys_must_be_canonical)
{
	static const char *const bad[] = { "{\"nodes\": {\"00\": 4}}", "{\"nodes\": {\"0\\n\": 4}}",
					   "{\"nodes\": {\"0\": 4, \"000\": 9}}" };
	struct app app;
	struct topology *t = malloc(sizeof *t);
	struct resize_args *a = malloc(sizeof *a);

	struct resize_req r;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		json_t *target = json_loads(bad[i], 0, NULL);
		mp_err e = { 0 };
		setup(&app, t, a);
		ck_assert_ptr_nonnull(target);
		ck_assert_msg(resize_parse(&app, target, "2M", RESIZE_PUT, &r, &e) == -1 ||
			      plan_targets(&r, a, t, &e) == -1, "accepted %s (%d targets)", bad[i], a->n);
		ck_assert_int_eq(api_status(&e), 422);
		ck_assert_str_eq(mp_code_name(e.code), "resize.bad_node");
		json_decref(target);
		teardown();
	}

	json_t *good = json_loads("{\"nodes\": {\"0\": 4}}", 0, NULL);
	mp_err e = { 0 };
	setup(&app, t, a);
	ck_assert_msg(resize_parse(&app, good, "2M", RESIZE_PUT, &r, &e) == 0, "%s", e.detail);
	ck_assert_int_eq(plan_targets(&r, a, t, &e), 0);
	ck_assert_int_eq(a->n, 1);
	ck_assert_int_eq(a->t[0].node, 0);
	ck_assert_uint_eq(a->t[0].goal, 4);
	json_decref(good);
	teardown();
	free(t);
	free(a);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("resize_plan");
	TCase *tc = tcase_create("targets");
	tcase_add_test(tc, node_keys_must_be_canonical);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(suite)
