/* An include chain -> one document. The included file comes first; the including file's keys
 * replace its keys one by one (in place, so the order is the order keys first appear) and its
 * "-key" lines remove them. Files are read only through the caller's loader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/profiles/profile.h"

static struct prof_key *find(struct prof_doc *d, const char *id)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->keys[i].id, id))
			return &d->keys[i];
	return NULL;
}

/* Lays file f over what d holds; *cap is the room in d->keys. */
static int overlay(struct prof_doc *d, size_t *cap, const struct prof_file *f, struct prof_err *err)
{
	for (size_t i = 0; i < f->n; i++) {
		const struct prof_key *k = &f->keys[i];
		struct prof_key *old = find(d, k->id);
		if (k->removal) {
			if (!old)
				return prof_fail(err, &k->loc, MPE_PROFILE_REMOVE_UNSET,
						 "-%s removes a key no included profile sets", k->key);
			memmove(old, old + 1, (size_t)(d->keys + d->n - old - 1) * sizeof *old);
			d->n--;
		} else if (old) {
			*old = *k;
		} else {
			if (d->n == PROF_KEYS_MAX)
				return prof_fail(err, &k->loc, MPE_PROFILE_LIMIT, "more than %d keys in the merged profile",
						 PROF_KEYS_MAX);
			if (prof_keys_room(&d->keys, d->n, cap) < 0)
				return mp_nomem(err ? &err->e : NULL);
			d->keys[d->n++] = *k;
		}
	}
	if (f->on_drift != PROF_DRIFT_UNSET)
		d->on_drift = f->on_drift;
	return 0;
}

/* Merges `name` (reached from `from`, NULL at the top) at depth into d. */
static int merge_one(const char *name, const struct prof_loc *from, int depth, prof_load_fn load, void *ctx,
		     struct prof_doc *d, size_t *cap, struct prof_err *err)
{
	struct prof_file f = { 0 };
	char file[PROF_FILE_NAME_MAX];
	char *text = NULL;           /* owned */
	size_t len = 0;
	int rc = -1;

	for (int i = 0; i < depth; i++)
		if (!strcmp(d->files[i], name))
			return prof_fail(err, from, MPE_PROFILE_INCLUDE_LOOP, "including %s makes a loop (%s.conf includes it)",
					 name, d->files[depth - 1]);
	if (depth == PROF_DEPTH_MAX)
		return prof_fail(err, from, MPE_PROFILE_LIMIT, "an include chain deeper than %d files", PROF_DEPTH_MAX);
	snprintf(d->files[depth], sizeof d->files[depth], "%s", name);
	d->nfiles = depth + 1;
	snprintf(file, sizeof file, "%s.conf", name);
	if (load(ctx, name, from, &text, &len, err) < 0)
		goto out;
	if (prof_parse(file, text, len, &f, err) < 0)
		goto out;
	if (f.has_include && merge_one(f.include, &f.include_loc, depth + 1, load, ctx, d, cap, err) < 0)
		goto out;
	rc = overlay(d, cap, &f, err);
out:
	prof_file_free(&f);
	free(text);
	return rc;
}

int prof_merge(const char *name, prof_load_fn load, void *ctx, struct prof_doc *out, struct prof_err *err)
{
	struct prof_loc top = { .line = 0 };
	size_t cap = 0;              /* room in out->keys */

	memset(out, 0, sizeof *out);
	snprintf(top.file, sizeof top.file, "%s.conf", name);
	snprintf(out->name, sizeof out->name, "%s", name);
	if (!prof_name_ok(name))
		return prof_fail(err, &top, MPE_PROFILE_NOT_FOUND, "not a profile name");
	if (merge_one(name, NULL, 0, load, ctx, out, &cap, err) < 0)
		return -1;
	/* The profile's default is the nearest file's; a key without its own takes it. */
	if (out->on_drift == PROF_DRIFT_UNSET)
		out->on_drift = PROF_DRIFT_REPORT;
	for (size_t i = 0; i < out->n; i++)
		if (!out->keys[i].drift_set)
			out->keys[i].on_drift = out->on_drift;
	return 0;
}

void prof_doc_free(struct prof_doc *d)
{
	free(d->keys);
	d->keys = NULL;
	d->n = 0;
}
