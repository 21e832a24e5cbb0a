/* The node labels file's writer (see labels.h). */
#include "server/ops/labels.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/parse.h"
#include "server/app.h"
#include "server/clock.h"
#include "server/fleet/nfd.h"
#include "server/kernel/hugetlb.h"
#include "server/kernel/knobs.h"
#include "server/log.h"
#include "server/ops/profile_state.h"
#include "server/priv/act.h"

/* The one writer of this process. mu guards the flags; the texts are the thread's own. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;            /* CLOCK_MONOTONIC; made by labels_start */
	bool running, kicked, stopping;
	pthread_t thread;
	const struct app *app;        /* borrowed */
	const char *path;             /* borrowed from the config */
	struct nfd_text *now, *last;  /* owned: the text being built, the text last written */
	bool written;                 /* last holds what the file holds */
	int64_t written_s;            /* when it was written (the daemon's wall clock) */
	int last_err;                 /* the last write's -errno (0: it worked): logged on a change */
	unsigned last_left_out;       /* labels refused or dropped in the last text: logged on a change */
} W = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* The THP settings as labels: the knob and the label it becomes. */
static const struct { const char *knob, *label; } thp_labels[] = {
	{ "thp.enabled", "thp-enabled" },
	{ "thp.defrag", "thp-defrag" },
	{ "thp.shmem_enabled", "thp-shmem-enabled" },
};

/* name=value, or a debug line saying why it was left out. */
static void add(struct nfd_text *t, const char *name, const char *value)
{
	int rc = nfd_add(t, name, value);

	if (rc == -EINVAL)
		log_debug("node labels: %s%s='%.80s' left out: not a Kubernetes label name and value", NFD_PREFIX, name,
			  value);
}

static void add_u64(struct nfd_text *t, const char *name, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof num, "%llu", (unsigned long long)v);
	add(t, name, num);
}

/* The pools: per size the whole pool's nr_hugepages, then per size and node (last: a text that
 * is full loses per-node labels first). */
static void pools(struct nfd_text *t, const struct app *app)
{
	struct htlb_pool *p = calloc((size_t)(app->caps.n_hugetlb_sizes ? app->caps.n_hugetlb_sizes : 1), sizeof *p);
	bool ok[CAPS_MAX_SIZES] = { false };
	char size[32], name[NFD_PART_MAX + 1];

	if (!p) {
		t->dropped++;
		return;
	}
	for (int i = 0; i < app->caps.n_hugetlb_sizes; i++) {
		if (!(ok[i] = htlb_read_pool(app->sysfs_root, app->caps.hugetlb_sizes_kb[i], &p[i]) == 0))
			continue;
		format_size_kb(p[i].size_kb, size, sizeof size);
		snprintf(name, sizeof name, "hugepages-%s", size);
		add_u64(t, name, p[i].nr);
	}
	for (int i = 0; i < app->caps.n_hugetlb_sizes; i++) {
		if (!ok[i])
			continue;
		format_size_kb(p[i].size_kb, size, sizeof size);
		for (int n = 0; n < p[i].n_nodes; n++) {
			snprintf(name, sizeof name, "hugepages-%s-node%u", size, p[i].nodes[n].id);
			add_u64(t, name, p[i].nodes[n].nr);
		}
	}
	free(p);
}

/* The profile in force and its state (applied or degraded; none before an apply: no state label),
 * from the profile state; before one exists, the configured name. */
static void profile(struct nfd_text *t, const struct app *app)
{
	struct ps_snapshot snap = { 0 };

	if (!app->profile_state || profile_state_snapshot(app->profile_state, &snap) < 0) {
		if (app->profile)
			add(t, "profile", app->profile);
		return;
	}
	if (snap.name[0])
		add(t, "profile", snap.name);
	else if (app->profile)
		add(t, "profile", app->profile);
	if (snap.state != PS_NONE)
		add(t, "profile-state", ps_state_name(snap.state));
	ps_snapshot_free(&snap);
}

/* The whole text, expiring at expiry_s. What goes in is what changes only when someone changes
 * it (a setting, a pool's size, the profile) or never (what the kernel can do): no free-page
 * count or other figure that moves by itself (docs/reference/fleet.md says why). */
static void build(struct nfd_text *t, const struct app *app, int64_t expiry_s)
{
	struct knob_state ks;

	nfd_begin(t, expiry_s);
	for (size_t i = 0; i < sizeof thp_labels / sizeof thp_labels[0]; i++) {
		const struct knob *k = knobs_find(app->knobs, thp_labels[i].knob);
		if (k && knob_read(app->knobs, k, &ks) == 0 && ks.available) {
			/* A label value has no '+': the kernel's "defer+madvise" (the defrag word tuned and
			 * our own examples set) is written defer_madvise, which no THP word is, so the
			 * mapping is one to one; any other character a label refuses still leaves it out. */
			for (char *c = ks.value; *c; c++)
				if (*c == '+')
					*c = '_';
			add(t, thp_labels[i].label, ks.value);
		}
	}
	profile(t, app);
	add(t, "mpol-preferred-many", app->caps.mpol.preferred_many ? "true" : "false");
	add(t, "mpol-weighted-interleave", app->caps.weighted_interleave ? "true" : "false");
	add(t, "madv-collapse", app->caps.madv_collapse ? "true" : "false");
	pools(t, app);
}

/* One pass: rebuild, and write when the labels differ or the refresh is due. The seconds until
 * the next pass is due. */
static int64_t pass(void)
{
	int64_t now = clk_wall_ns() / 1000000000LL;
	struct nfd_text *swap;
	unsigned left_out;
	int rc;

	build(W.now, W.app, now + LABELS_EXPIRY_S);
	if ((left_out = W.now->refused + W.now->dropped) != W.last_left_out) {
		if (left_out)
			log_warn("node labels: %u label(s) left out (%u not valid as Kubernetes labels, %u past the %d-byte "
				 "bound)", left_out, W.now->refused, W.now->dropped, NFD_TEXT_MAX);
		W.last_left_out = left_out;
	}
	if (W.written && nfd_same_labels(W.now, W.last->text, W.last->len) && now < W.written_s + LABELS_REFRESH_S)
		return W.written_s + LABELS_REFRESH_S - now;
	rc = act_labels_write(W.path, W.now->text, W.now->len);
	if (rc != W.last_err) {
		if (rc < 0)
			log_warn("node labels: cannot write %s: %s (again in %d s)", W.path, strerror(-rc), LABELS_RETRY_S);
		else if (W.last_err)
			log_info("node labels: %s written again", W.path);
		W.last_err = rc;
	}
	if (rc < 0)
		return LABELS_RETRY_S;
	swap = W.last;
	W.last = W.now;
	W.now = swap;
	W.written = true;
	W.written_s = now;
	return LABELS_REFRESH_S;
}

static void *writer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&W.mu);
	while (!W.stopping) {
		int64_t wait_s;
		struct timespec until;

		W.kicked = false;
		pthread_mutex_unlock(&W.mu);
		wait_s = pass();
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (time_t)wait_s;
		pthread_mutex_lock(&W.mu);
		while (!W.kicked && !W.stopping)
			if (pthread_cond_timedwait(&W.cv, &W.mu, &until) == ETIMEDOUT)
				break;
	}
	pthread_mutex_unlock(&W.mu);
	return NULL;
}

int labels_start(const struct app *app, const char *path, mp_err *e)
{
	pthread_condattr_t ca;
	int rc;

	W.app = app;
	W.path = path;
	if (!(W.now = calloc(1, sizeof *W.now)) || !(W.last = calloc(1, sizeof *W.last))) {
		free(W.now);
		W.now = NULL;
		return mp_nomem(e);
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&W.cv, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = pthread_create(&W.thread, NULL, writer, NULL)) != 0) {
		pthread_cond_destroy(&W.cv);
		free(W.now);
		free(W.last);
		W.now = W.last = NULL;
		return mp_fail(e, MPE_INTERNAL_ERROR, rc, "cannot start the node labels writer: %s", strerror(rc));
	}
	pthread_mutex_lock(&W.mu);
	W.running = true;
	pthread_mutex_unlock(&W.mu);
	log_info("node labels: %s, expiring %d s ahead, written again every %d s and after every change", path,
		 LABELS_EXPIRY_S, LABELS_REFRESH_S);
	return 0;
}

void labels_stop(void)
{
	pthread_mutex_lock(&W.mu);
	if (!W.running) {
		pthread_mutex_unlock(&W.mu);
		return;
	}
	W.stopping = true;
	pthread_cond_signal(&W.cv);
	pthread_mutex_unlock(&W.mu);
	pthread_join(W.thread, NULL);
	pthread_mutex_lock(&W.mu);
	W.running = false;
	pthread_mutex_unlock(&W.mu);
	pthread_cond_destroy(&W.cv);
	free(W.now);
	free(W.last);
	W.now = W.last = NULL;
}

void labels_changed(void)
{
	pthread_mutex_lock(&W.mu);
	if (W.running) {
		W.kicked = true;
		pthread_cond_signal(&W.cv);
	}
	pthread_mutex_unlock(&W.mu);
}
