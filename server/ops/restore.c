#include "server/ops/restore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/app.h"
#include "server/kernel/hugetlb.h"
#include "server/kernel/knobs.h"
#include "server/log.h"
#include "server/clock.h"
#include "server/priv/act.h"
#include "server/store/db.h"
#include "server/store/history.h"
#include "server/store/restores.h"

static int save(struct restore_set *rs, const char *what, const char *target, const char *value, mp_err *e)
{
	int64_t row;

	for (int i = 0; i < rs->n; i++)
		if (!strcmp(rs->r[i].what, what) && !strcmp(rs->r[i].target, target))
			return 0;
	if (rs->n == RESTORE_MAX)
		return mp_fail(e, MPE_INTERNAL_ERROR, 0, "more than %d values to restore", RESTORE_MAX);
	if ((row = restores_db_add(rs->app->store, rs->op_id, what, target, value, e)) < 0)
		return -1;
	rs->r[rs->n].row = row;
	snprintf(rs->r[rs->n].what, sizeof rs->r[rs->n].what, "%s", what);
	snprintf(rs->r[rs->n].target, sizeof rs->r[rs->n].target, "%s", target);
	snprintf(rs->r[rs->n].value, sizeof rs->r[rs->n].value, "%s", value);
	rs->n++;
	return 0;
}

int restore_save_knob(struct restore_set *rs, const char *knob, mp_err *e)
{
	const struct knob *k = knobs_find(rs->app->knobs, knob);
	struct knob_state ks;

	if (!k)
		return mp_fail(e, MPE_KNOB_UNKNOWN, 0, "no knob %s", knob);
	knob_read(rs->app->knobs, k, &ks);
	if (!ks.available)
		return mp_fail(e, MPE_KNOB_UNAVAILABLE, -ks.read_err, "this kernel lacks %s", knob);
	return save(rs, "knob", knob, ks.value, e);
}

int restore_save_pool(struct restore_set *rs, uint64_t size_kb, int node, mp_err *e)
{
	char target[48], value[24];
	uint64_t nr;
	int rc;

	if ((rc = htlb_read_nr(rs->app->sysfs_root, size_kb, node, &nr)) < 0)
		return mp_fail(e, MPE_HUGEPAGES_READ, -rc, "reading nr_hugepages of %llukB: %s",
			       (unsigned long long)size_kb, strerror(-rc));
	if (node < 0)
		snprintf(target, sizeof target, "%llu", (unsigned long long)size_kb);
	else
		snprintf(target, sizeof target, "%llu:%d", (unsigned long long)size_kb, node);
	snprintf(value, sizeof value, "%llu", (unsigned long long)nr);
	return save(rs, "pool", target, value, e);
}

/* Writes one saved value back: 0, or -errno (with *now the pool's count when it differs). */
static int put_back(const struct app *app, const char *what, const char *target, const char *value, uint64_t *now,
		    bool *have_now)
{
	*have_now = false;
	if (!strcmp(what, "knob")) {
		const struct knob *k = knobs_find(app->knobs, target);
		return k ? act_knob_write(app->knobs, k, value) : -ENOENT;
	}
	if (!strcmp(what, "pool")) {
		char buf[48], *colon;
		uint64_t kb, want, nodeu = 0;
		int node = -1, rc;

		snprintf(buf, sizeof buf, "%s", target);
		if ((colon = strchr(buf, ':'))) {
			*colon = '\0';
			if (parse_u64(colon + 1, &nodeu) < 0 || nodeu > 4095)
				return -EINVAL;
			node = (int)nodeu;
		}
		if (parse_u64(buf, &kb) < 0 || parse_u64(value, &want) < 0)
			return -EINVAL;
		if ((rc = act_pool_write(app->sysfs_root, kb, node, want)) < 0)
			return rc;
		if ((rc = htlb_read_nr(app->sysfs_root, kb, node, now)) < 0)
			return rc;
		*have_now = true;
		return *now == want ? 0 : -EBUSY;
	}
	return -EINVAL;
}

static json_t *put_back_json(const struct app *app, const char *what, const char *target, const char *value, int *rc_out)
{
	uint64_t now = 0;
	bool have_now;
	int rc = put_back(app, what, target, value, &now, &have_now);

	*rc_out = rc;
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "what", what, "target", target, "value", value, "status",
			      rc == 0 ? "restored" : "restore_failed");

	if (rc < 0) {
		json_object_set_new(o, "errno", json_integer(-rc));
		log_warn("restoring %s %s to %s failed: %s", what, target, value, strerror(-rc));
	}
	if (rc < 0 && have_now)
		json_object_set_new(o, "now", json_integer((json_int_t)now));
	return o;
}

json_t *restore_all(struct restore_set *rs)
{
	json_t *out = json_array();
	mp_err e = { 0 };

	for (int i = rs->n - 1; i >= 0; i--) {
		int rc;
		json_array_append_new(out, put_back_json(rs->app, rs->r[i].what, rs->r[i].target, rs->r[i].value, &rc));
		/* Only a value really written back gives up its row: one that was not (the helper is
		 * gone, a pool's pages are in use) is tried again at the next start. A row that cannot be
		 * deleted is restored again then too: harmless. */
		if (rc < 0)
			log_warn("%s %s stays to be restored at the next start", rs->r[i].what, rs->r[i].target);
		else if (restores_db_done(rs->app->store, rs->r[i].row, &e) < 0)
			log_warn("deleting pending restore %lld: %s", (long long)rs->r[i].row, e.detail);
	}
	rs->n = 0;
	return out;
}

int restore_at_start(const struct app *app, mp_err *e)
{
	json_t *rows = restores_db_pending(app->store, e), *done = NULL, *row;
	bool failed = false;
	size_t i;
	int n;

	if (!rows)
		return -1;
	if (!(n = (int)json_array_size(rows))) {
		json_decref(rows);
		return 0;
	}
	done = json_array();
	int64_t now = clk_wall_ns(), *ids = calloc((size_t)n, sizeof *ids);   /* the rows to delete */
	size_t nids = 0;
	json_array_foreach(rows, i, row) {
		int rc;
		json_t *r = put_back_json(app, json_string_value(json_object_get(row, "what")),
					  json_string_value(json_object_get(row, "target")),
					  json_string_value(json_object_get(row, "value")), &rc);
		failed |= rc < 0;
		json_object_set(r, "operation_id", json_object_get(row, "op_id"));
		json_array_append_new(done, r);
		/* Written back, or never writable on this kernel (the knob or pool is gone, the value is
		 * not one it takes): the row goes. Anything else (pages in use, the helper gone) stays
		 * for the next start, and is recorded as restore_failed now. */
		if (ids && (rc == 0 || rc == -ENOENT || rc == -EINVAL))
			ids[nids++] = json_integer_value(json_object_get(row, "id"));
	}
	json_t *result = json_pack("{s:s, s:O}", "note", "values a previous daemon changed and did not put back, "
				   "restored at start", "restored", done);
	struct op_record op = {
		.kind = "probe.restore", .source = "daemon", .started_ns = now, .finished_ns = now,
		.status = failed ? "partial" : "ok", .result = result, .kernel_release = app->caps.kernel_release,
	};
	int64_t id = -1;

	/* The record and the rows' deletion are one transaction: a crash before it restores again at
	 * the next start, which is harmless; after it, nothing is restored twice. */
	if (!ids)
		mp_nomem(e);
	else
		id = restores_db_record(app->store, &op, ids, nids, e);
	free(ids);
	json_decref(result);
	json_decref(done);
	json_decref(rows);
	return id < 0 ? -1 : n;
}
