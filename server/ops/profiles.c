#include "server/ops/profiles.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"
#include "server/kernel/cgroup.h"
#include "server/kernel/hugetlb.h"
#include "server/kernel/knobs.h"
#include "server/kernel/topology.h"
#include "server/log.h"
#include "server/ops/profile_state.h"
#include "server/profiles/dir.h"

static const char *const verdict_names[] = { "in_sync", "differs", "unsupported" };

static int knob_values_ok(const struct knob *kn, const struct knob_state *st, const struct prof_key *k,
			  struct prof_err *pe)
{
	if (k->cmp != PROF_EQ && kn->type == KNOB_CHOICE)
		return prof_fail(pe, &k->loc, MPE_PROFILE_BAD_VALUE, "%s is a choice knob: '%s' needs an integer knob",
				 k->key, prof_cmp_text(k->cmp));
	for (int i = 0; i < k->nvals; i++) {
		if (knob_check_value(kn, st, k->vals[i]) == KNOB_OK)
			continue;
		if (kn->type == KNOB_CHOICE) {
			char list[256] = "";
			for (int j = 0; j < st->nopts; j++)
				snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "", st->opts[j]);
			return prof_fail(pe, &k->loc, MPE_PROFILE_BAD_VALUE, "%s does not allow '%s' (this kernel's list: %s)",
					 k->key, k->vals[i], list);
		}
		return prof_fail(pe, &k->loc, MPE_PROFILE_BAD_VALUE, "%s takes %s %llu..%llu, not '%s'", k->key,
				 knob_type_name(kn->type), (unsigned long long)kn->min, (unsigned long long)kn->max,
				 k->vals[i]);
	}
	return 0;
}

/* now against the comparator; numbers compare as numbers. */
static bool satisfied(const struct prof_key *k, const char *now, bool numeric, uint64_t now_num)
{
	for (int i = 0; i < k->nvals; i++) {
		uint64_t v;
		if (!numeric) {
			if (!strcmp(now, k->vals[i]))
				return true;
			continue;
		}
		if (parse_u64(k->vals[i], &v) < 0)
			continue;
		if ((k->cmp == PROF_EQ && now_num == v) || (k->cmp == PROF_GE && now_num >= v) ||
		    (k->cmp == PROF_LE && now_num <= v))
			return true;
	}
	return false;
}

bool profiles_satisfied(const struct prof_key *k, const char *now, bool numeric, uint64_t now_num)
{
	return satisfied(k, now, numeric, now_num);
}

static void set_target(const struct prof_key *k, bool numeric, struct profile_eval *ev)
{
	uint64_t v;
	if (numeric && parse_u64(k->vals[0], &v) == 0)
		snprintf(ev->target, sizeof ev->target, "%llu", (unsigned long long)v);
	else
		snprintf(ev->target, sizeof ev->target, "%s", k->vals[0]);
}

static int eval_knob(const struct app *app, const struct prof_key *k, struct profile_eval *ev, struct prof_err *pe)
{
	const struct knob *kn = knobs_find(app->knobs, k->key);
	struct knob_state st;

	if (!kn) {
		if (!knob_name_per_kernel(k->key))
			return prof_fail(pe, &k->loc, MPE_PROFILE_UNKNOWN_KEY,
					 "no knob is named '%s' (GET /v1/knobs lists them)", k->key);
		ev->verdict = PROF_UNSUPPORTED;
		snprintf(ev->reason, sizeof ev->reason, "this kernel lacks the knob");
		return 0;
	}
	knob_read_value(app->knobs, kn, &st);
	if (!st.available) {
		ev->verdict = PROF_UNSUPPORTED;
		snprintf(ev->reason, sizeof ev->reason, "this kernel lacks the knob (%s)", strerror(-st.read_err));
		return 0;
	}
	if (knob_values_ok(kn, &st, k, pe) < 0)
		return -1;
	ev->have_now = true;
	snprintf(ev->now, sizeof ev->now, "%s", st.value);
	ev->verdict = satisfied(k, st.value, kn->type != KNOB_CHOICE, st.num) ? PROF_IN_SYNC : PROF_DIFFERS;
	set_target(k, kn->type != KNOB_CHOICE, ev);
	return 0;
}

static void eval_pool(const struct app *app, const struct prof_key *k, struct profile_eval *ev)
{
	char sz[32];
	uint64_t nr;
	int rc;

	format_size_kb(k->size_kb, sz, sizeof sz);
	ev->verdict = PROF_UNSUPPORTED;
	if (htlb_size_exists(app->sysfs_root, k->size_kb) != 1) {
		snprintf(ev->reason, sizeof ev->reason, "this host has no %s hugetlb pages", sz);
		return;
	}
	if (k->node >= 0 && htlb_node_exists(app->sysfs_root, k->size_kb, (unsigned)k->node) != 1) {
		snprintf(ev->reason, sizeof ev->reason, "node %d has no %s pool (no such node, or no memory on it)",
			 k->node, sz);
		return;
	}
	if ((rc = htlb_read_nr(app->sysfs_root, k->size_kb, k->node, &nr)) < 0) {
		snprintf(ev->reason, sizeof ev->reason, "the pool cannot be read: %s", strerror(-rc));
		return;
	}
	ev->have_now = true;
	snprintf(ev->now, sizeof ev->now, "%llu", (unsigned long long)nr);
	ev->verdict = satisfied(k, ev->now, true, nr) ? PROF_IN_SYNC : PROF_DIFFERS;
	set_target(k, true, ev);
}

static int eval_cgroup(struct profile_checked *ck, const struct app *app, const struct prof_key *k,
		       struct profile_eval *ev, struct prof_err *pe)
{
	struct cg_state st;
	idset want;
	int fd;

	if (cg_path_check(k->cgpath) < 0 || !k->cgpath[0])
		return prof_fail(pe, &k->loc, MPE_PROFILE_BAD_VALUE,
				 "[cgroup %s]: a cgroup path is segments separated by '/', none empty, '.' or '..' "
				 "or starting with '.', no leading or trailing '/'", k->cgpath);
	idset_parse_client(k->vals[0], &want);   /* checked by the parser */
	idset_format(&want, ev->target, sizeof ev->target);
	ev->verdict = PROF_UNSUPPORTED;
	for (unsigned n = 0; n < IDSET_MAX; n++)
		if (idset_has(&want, n) && (!ck->topo || !idset_has(&ck->topo->online, n))) {
			snprintf(ev->reason, sizeof ev->reason, "node %u is not online on this host", n);
			return 0;
		}
	if (!ck->have_cg) {
		snprintf(ev->reason, sizeof ev->reason, "this host has no cpuset cgroup hierarchy");
		return 0;
	}
	if ((fd = cg_open(app->sysfs_root, &ck->cg, k->cgpath)) < 0) {
		snprintf(ev->reason, sizeof ev->reason, "%s", fd == -ENOENT ? "no such cgroup" : strerror(-fd));
		return 0;
	}
	if (cg_read(fd, &ck->cg, false, &st) < 0 || !st.cpuset) {
		close(fd);
		snprintf(ev->reason, sizeof ev->reason, "the cgroup has no cpuset.mems (cpuset not enabled for it)");
		return 0;
	}
	close(fd);
	ev->have_now = true;
	snprintf(ev->now, sizeof ev->now, "%s", st.mems);
	ev->verdict = !memcmp(&st.mems_set, &want, sizeof want) ? PROF_IN_SYNC : PROF_DIFFERS;
	return 0;
}

void profiles_checked_free(struct profile_checked *ck)
{
	prof_doc_free(&ck->doc);
	free(ck->ev);
	free(ck->topo);
}

/* The merger's loader over the directory, hashing what it reads (FNV-1a over each file's name and
 * text, in the order read): the digest tells one version of a profile's files from another. */
struct hashing_dir {
	struct prof_dir dir;
	uint64_t h;
};

static void fnv(uint64_t *h, const void *p, size_t n)
{
	for (const unsigned char *c = p; n--; c++)
		*h = (*h ^ *c) * 1099511628211ULL;
}

static int hashing_load(void *ctx, const char *name, const struct prof_loc *from, char **text, size_t *len,
			struct prof_err *err)
{
	struct hashing_dir *d = ctx;
	int rc = prof_dir_load(&d->dir, name, from, text, len, err);

	if (rc == 0) {
		fnv(&d->h, name, strlen(name) + 1);
		fnv(&d->h, *text, *len);
	}
	return rc;
}

static int merge(const struct prof_dir *dir, const char *name, struct prof_doc *doc, uint64_t *digest,
		 struct prof_err *pe)
{
	struct hashing_dir d = { .dir = *dir, .h = 14695981039346656037ULL };
	int rc = prof_merge(name, hashing_load, &d, doc, pe);

	*digest = d.h;
	return rc;
}

int profiles_digest(const struct app *app, const struct prof_doc *doc, uint64_t *digest, struct prof_err *pe)
{
	struct hashing_dir d = { .dir = { .path = app->profiles_dir }, .h = 14695981039346656037ULL };

	/* The chain's files in the order the merge loaded them (each before the one it includes),
	 * hashed as the merge hashed them, without parsing or merging again: while every text is
	 * the same, so is every include line, so the chain and the digest are the merge's. A text
	 * changed gives another digest, a file gone an error. */
	for (int i = 0; i < doc->nfiles; i++) {
		char *text = NULL;
		size_t len = 0;
		if (hashing_load(&d, doc->files[i], NULL, &text, &len, pe) < 0)
			return -1;
		free(text);
	}
	*digest = d.h;
	return 0;
}

int profiles_evaluate(const struct app *app, struct profile_checked *ck, struct prof_err *pe)
{
	return profiles_evaluate_keys(app, ck, NULL, pe);
}

int profiles_evaluate_keys(const struct app *app, struct profile_checked *ck, const bool *again, struct prof_err *pe)
{
	bool cgroups = false;

	ck->unsupported_required = false;
	for (size_t i = 0; i < ck->doc.n; i++) {
		if (again && !again[i])
			continue;
		memset(&ck->ev[i], 0, sizeof ck->ev[i]);
		cgroups |= ck->doc.keys[i].kind == PROF_CGROUP;
	}
	if (!again || cgroups) {
		free(ck->topo);
		ck->topo = NULL;
		ck->have_cg = false;
	}
	/* The nodes and the cgroup mount are for the cgroup keys alone: a profile without one reads
	 * neither (an apply evaluates the document three times). */
	if (cgroups) {
		if (!(ck->topo = malloc(sizeof *ck->topo)))
			return mp_nomem(&pe->e);
		if (topo_read(app->sysfs_root, ck->topo) < 0) {
			free(ck->topo);
			ck->topo = NULL;
		}
		ck->have_cg = cg_detect(app->sysfs_root, &ck->cg) == 0;
	}
	for (size_t i = 0; i < ck->doc.n; i++) {
		const struct prof_key *k = &ck->doc.keys[i];
		struct profile_eval *ev = &ck->ev[i];
		int rc = 0;
		if (again && !again[i]) {
			/* kept as it was */
		} else if (k->kind == PROF_KNOB)
			rc = eval_knob(app, k, ev, pe);
		else if (k->kind == PROF_POOL)
			eval_pool(app, k, ev);
		else
			rc = eval_cgroup(ck, app, k, ev, pe);
		if (rc < 0)
			return -1;
		if (ev->verdict == PROF_UNSUPPORTED && k->required)
			ck->unsupported_required = true;
	}
	return 0;
}

int profiles_check(const struct app *app, const char *name, struct profile_checked *ck, struct prof_err *pe)
{
	struct prof_dir dir = { .path = app->profiles_dir };

	return profiles_check_in(app, &dir, name, ck, pe);
}

int profiles_check_in(const struct app *app, const struct prof_dir *dir, const char *name, struct profile_checked *ck,
		      struct prof_err *pe)
{
	memset(ck, 0, sizeof *ck);
	if (merge(dir, name, &ck->doc, &ck->digest, pe) < 0)
		return -1;
	if (!(ck->ev = calloc(ck->doc.n ? ck->doc.n : 1, sizeof *ck->ev)))
		return mp_nomem(&pe->e);
	return profiles_evaluate(app, ck, pe);
}

static json_t *loc_json(const struct prof_loc *l)
{
	return json_pack("{s:s, s:i, s:i}", "file", l->file, "line", (int)l->line, "column", (int)l->col);
}

/* The problem's place, or null for an error that belongs to no line. */
static json_t *error_json(const struct prof_err *pe)
{
	json_t *o = json_pack("{s:s, s:s}", "code", mp_code_name(pe->e.code), "detail", pe->e.detail);
	json_object_set_new(o, "file", json_string(pe->loc.file));
	json_object_set_new(o, "line", pe->loc.line ? json_integer(pe->loc.line) : json_null());
	json_object_set_new(o, "column", pe->loc.line ? json_integer(pe->loc.col) : json_null());
	return o;
}

static void state_into(json_t *o, const struct profile_checked *ck)
{
	json_object_set_new(o, "state", json_string(ck->unsupported_required ? "degraded" : "ok"));
	json_object_set_new(o, "reasons", ck->unsupported_required ? json_pack("[s]", "unsupported_required")
								   : json_array());
}

static json_t *key_json(const struct prof_key *k, const struct profile_eval *ev)
{
	json_t *vals = json_array(), *o;
	char sz[32];

	for (int i = 0; i < k->nvals; i++)
		json_array_append_new(vals, json_string(k->vals[i]));
	o = json_pack("{s:s, s:s, s:s, s:o, s:s, s:b, s:o}", "key", k->id, "kind", prof_kind_name(k->kind),
		      "comparator", prof_cmp_text(k->cmp), "values", vals, "on_drift", prof_drift_name(k->on_drift),
		      "required", k->required, "source", loc_json(&k->loc));
	if (k->kind == PROF_KNOB) {
		json_object_set_new(o, "knob", json_string(k->key));
	} else if (k->kind == PROF_POOL) {
		format_size_kb(k->size_kb, sz, sizeof sz);
		json_object_set_new(o, "size", json_string(sz));
		json_object_set_new(o, "size_kb", json_integer((json_int_t)k->size_kb));
		json_object_set_new(o, "node", k->node >= 0 ? json_integer(k->node) : json_null());
	} else {
		json_object_set_new(o, "cgroup", json_string(k->cgpath));
	}
	json_object_set_new(o, "supported", json_boolean(ev->verdict != PROF_UNSUPPORTED));
	if (ev->verdict == PROF_UNSUPPORTED)
		json_object_set_new(o, "reason", json_string(ev->reason));
	return o;
}

/* The active profile: the profile state's (an activation may have changed it), else the configured
 * one (an app without a state: the unit tests). buf holds it; NULL for none. */
static const char *active_name(const struct app *app, char *buf, size_t len)
{
	if (!app->profile_state)
		return app->profile;
	return profile_state_name(app->profile_state, buf, len) ? buf : NULL;
}

static bool is_active(const struct app *app, const char *name)
{
	char buf[PROF_NAME_MAX];
	const char *a = active_name(app, buf, sizeof buf);

	return a && !strcmp(a, name);
}

static void file_path(const struct app *app, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.conf", app->profiles_dir, name);
}

static json_t *doc_head(const struct app *app, const struct profile_checked *ck)
{
	json_t *files = json_array(), *o;
	char path[4200];

	for (int i = 0; i < ck->doc.nfiles; i++)
		json_array_append_new(files, json_pack("s+", ck->doc.files[i], ".conf"));
	file_path(app, ck->doc.name, path, sizeof path);
	o = json_pack("{s:s, s:s, s:b, s:o, s:s}", "name", ck->doc.name, "file", path, "active",
		      is_active(app, ck->doc.name), "files", files, "on_drift",
		      prof_drift_name(ck->doc.on_drift));
	state_into(o, ck);
	return o;
}

int profiles_show(const struct app *app, const char *name, json_t **out, struct prof_err *pe)
{
	struct profile_checked ck;
	json_t *keys;

	*out = NULL;
	if (profiles_check(app, name, &ck, pe) < 0) {
		profiles_checked_free(&ck);
		return -1;
	}
	*out = doc_head(app, &ck);
	keys = json_array();
	for (size_t i = 0; i < ck.doc.n; i++)
		json_array_append_new(keys, key_json(&ck.doc.keys[i], &ck.ev[i]));
	json_object_set_new(*out, "keys", keys);
	profiles_checked_free(&ck);
	return 0;
}

static const char *action_of(const struct prof_key *k, const struct profile_eval *ev)
{
	if (ev->verdict != PROF_DIFFERS)
		return "none";
	return k->kind == PROF_POOL ? "resize" : "write";
}

int profiles_diff(const struct app *app, const char *name, json_t **out, struct prof_err *pe)
{
	struct profile_checked ck;
	json_t *keys;
	int count[3] = { 0 };

	*out = NULL;
	if (profiles_check(app, name, &ck, pe) < 0) {
		profiles_checked_free(&ck);
		return -1;
	}
	*out = doc_head(app, &ck);
	keys = json_array();
	for (size_t i = 0; i < ck.doc.n; i++) {
		const struct prof_key *k = &ck.doc.keys[i];
		const struct profile_eval *ev = &ck.ev[i];
		json_t *o = key_json(k, ev);
		json_object_set_new(o, "now", ev->have_now ? json_string(ev->now) : json_null());
		json_object_set_new(o, "verdict", json_string(verdict_names[ev->verdict]));
		json_object_set_new(o, "action", json_string(action_of(k, ev)));
		json_object_set_new(o, "target", ev->verdict == PROF_DIFFERS ? json_string(ev->target) : json_null());
		json_array_append_new(keys, o);
		count[ev->verdict]++;
	}
	json_object_set_new(*out, "keys", keys);
	json_object_set_new(*out, "summary", json_pack("{s:i, s:i, s:i}", "in_sync", count[PROF_IN_SYNC], "differs",
						       count[PROF_DIFFERS], "unsupported", count[PROF_UNSUPPORTED]));
	json_object_set_new(*out, "dry_run", json_true());
	profiles_checked_free(&ck);
	return 0;
}

/* One entry of the list: the checked state, or the error. */
static json_t *list_entry(const struct app *app, const char *name)
{
	struct prof_err pe = { 0 };
	struct profile_checked ck;
	char path[4200];
	json_t *o;

	file_path(app, name, path, sizeof path);
	o = json_pack("{s:s, s:s, s:b}", "name", name, "file", path, "active",
		      is_active(app, name));
	if (profiles_check(app, name, &ck, &pe) < 0) {
		json_object_set_new(o, "state", json_string("invalid"));
		json_object_set_new(o, "reasons", json_pack("[s]", "invalid_profile"));
		json_object_set_new(o, "error", error_json(&pe));
	} else {
		state_into(o, &ck);
		json_object_set_new(o, "keys", json_integer((json_int_t)ck.doc.n));
	}
	profiles_checked_free(&ck);
	return o;
}

int profiles_list(const struct app *app, json_t **out, struct prof_err *pe)
{
	char **names = NULL;
	size_t n = 0;
	json_t *a;
	int rc = prof_dir_list(app->profiles_dir, &names, &n);

	*out = NULL;
	if (rc == -ENOENT && app->profiles_dir_default)
		rc = 0;
	if (rc < 0) {
		pe->loc.file[0] = '\0';   /* an error of the directory: no file, no place */
		return mp_fail(&pe->e, rc == -ENOMEM ? MPE_INTERNAL_NOMEM : MPE_PROFILE_UNREADABLE, -rc,
			       "the profiles directory %s cannot be read: %s", app->profiles_dir, strerror(-rc));
	}
	a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, list_entry(app, names[i]));
	prof_dir_names_free(names, n);
	{
		char buf[PROF_NAME_MAX];
		const char *act = active_name(app, buf, sizeof buf);
		*out = json_pack("{s:s, s:o, s:o}", "dir", app->profiles_dir, "active",
				 act ? json_string(act) : json_null(), "profiles", a);
	}
	return 0;
}

void profiles_log_start(const struct app *app)
{
	struct prof_err pe = { 0 };
	json_t *l = NULL, *p;
	size_t i;

	if (profiles_list(app, &l, &pe) < 0) {
		log_error("profiles: %s", pe.e.detail);
		return;
	}
	json_array_foreach(json_object_get(l, "profiles"), i, p) {
		const json_t *err = json_object_get(p, "error");
		const char *st = json_string_value(json_object_get(p, "state"));
		if (err)
			log_error("profile %s: %s", json_string_value(json_object_get(p, "name")),
				  json_string_value(json_object_get(err, "detail")));
		else
			log_info("profile %s: %s", json_string_value(json_object_get(p, "name")), st);
	}
	json_decref(l);
	/* The configured profile's own error is the start-time apply's to log (ops/profile_boot.c). */
}
