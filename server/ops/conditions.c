#include "server/ops/conditions.h"

#include <stdlib.h>
#include <string.h>

#include "common/extfrag.h"
#include "server/app.h"
#include "server/kernel/knobs.h"
#include "server/kernel/mmcounters.h"

/* The settings that change what a memory measurement means. */
static const char *const settings[] = {
	"thp.enabled", "thp.defrag", "thp.khugepaged.defrag", "thp.shmem_enabled", "numa.balancing",
	"vm.zone_reclaim_mode", "vm.compaction_proactiveness",
};

struct cond_snap {
	struct mm_snapshot *m;       /* owned: sized to the host's nodes (mmc_snap) */
};

/* The counters now, through the held files: NULL when they cannot be read. */
static struct mm_snapshot *snap_now(const struct app *app)
{
	int err;

	return mmc_snap(app->mm_files, app->procfs_root, app->sysfs_root, &err);
}

struct cond_snap *cond_begin(const struct app *app)
{
	struct cond_snap *s = malloc(sizeof *s);

	if (s && !(s->m = snap_now(app))) {
		free(s);
		return NULL;
	}
	return s;
}

static uint64_t find(const struct mm_counter *c, int n, const char *name, int *found)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(c[i].name, name)) {
			*found = 1;
			return c[i].v;
		}
	*found = 0;
	return 0;
}

/* Deltas of the counters in after that moved (counters only grow; a counter that went down — a
 * kernel that resets one — is reported as its signed difference). */
static json_t *delta(const struct mm_counter *b, int nb, const struct mm_counter *a, int na)
{
	json_t *o = json_object();

	for (int i = 0; i < na; i++) {
		/* Both snapshots list the counters in the file's order, so the same position is the
		 * same counter: one compare, and the scan only when it is not (a line one of the two
		 * reads skipped). The scan for each was ~3600 strcmp a snapshot pair. */
		int found = i < nb && !strcmp(b[i].name, a[i].name);
		uint64_t v0 = found ? b[i].v : find(b, nb, a[i].name, &found);
		if (found && a[i].v != v0)
			json_object_set_new(o, a[i].name, json_integer((json_int_t)(a[i].v - v0)));
	}
	return o;
}

static const struct mm_node *node_in(const struct mm_snapshot *m, unsigned id)
{
	for (int i = 0; i < m->nnodes; i++)
		if (m->nodes[i].id == id)
			return &m->nodes[i];
	return NULL;
}

json_t *cond_buddy_json(const struct mm_snapshot *m)
{
	json_t *out = json_object();

	for (int i = 0; i < m->nnodes; i++) {
		const struct mm_node *nd = &m->nodes[i];
		uint64_t sum[MMC_MAX_ORDERS] = { 0 };
		json_t *zones;
		char key[16];

		if (!nd->nzones)
			continue;
		zones = json_array();
		for (int z = 0; z < nd->nzones; z++) {
			json_array_append_new(zones, json_string(nd->zone[z].name));
			for (int o = 0; o < m->norders; o++)
				sum[o] += nd->zone[z].nr_free[o];
		}
		snprintf(key, sizeof key, "%u", nd->id);
		json_object_set_new(out, key, frag_node_json(zones, sum, m->norders));
	}
	return out;
}

json_t *cond_end(const struct app *app, struct cond_snap *s)
{
	struct mm_snapshot *a = s ? snap_now(app) : NULL;   /* owned */
	json_t *out = NULL, *set, *numa;

	if (!a)
		goto done;
	set = json_object();
	for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
		const struct knob *k = knobs_find(app->knobs, settings[i]);
		struct knob_state ks;
		if (!k)
			continue;
		/* The value only: knob_read's mode, access and inode-flag checks are a GET's, not
		 * what the conditions record. */
		knob_read_value(app->knobs, k, &ks);
		if (ks.available)
			json_object_set_new(set, settings[i], json_string(ks.value));
	}
	numa = json_object();
	for (int i = 0; i < a->nnodes; i++) {
		const struct mm_node *nb = node_in(s->m, a->nodes[i].id);
		char key[16];
		if (!nb || !a->nodes[i].nstat)
			continue;
		snprintf(key, sizeof key, "%u", a->nodes[i].id);
		json_object_set_new(numa, key, delta(nb->stat, nb->nstat, a->nodes[i].stat, a->nodes[i].nstat));
	}
	out = json_pack("{s:s, s:o, s:o, s:o, s:{s:o, s:o}}", "kernel_release", app->caps.kernel_release, "settings",
			set, "vmstat_delta", delta(s->m->c, s->m->n, a->c, a->n), "numastat_delta", numa, "buddyinfo",
			"before", cond_buddy_json(s->m), "after", cond_buddy_json(a));
done:
	free(a);
	if (s)
		free(s->m);
	free(s);
	return out;
}

static void *measure_begin(const struct app *app)
{
	return cond_begin(app);
}

static void measure_end(const struct app *app, void *snap, struct job_outcome *out)
{
	json_t *c = cond_end(app, snap);

	if (!c)
		return;
	if (!out->result)
		out->result = json_object();
	if (json_is_object(out->result))
		json_object_set_new(out->result, "conditions", c);
	else
		json_decref(c);
}

const struct job_measure cond_job_measure = { measure_begin, measure_end };
