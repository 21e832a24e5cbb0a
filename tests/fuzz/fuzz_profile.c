/* The profile parser and merger (server/profiles/) on hostile text. The input is the file f.conf;
 * the merger's loader serves it as f and as g, so includes of either make loops and any other
 * include is missing.
 * Properties:
 *   - every failure names its place: the detail starts with "<file>:<line>:<column>: " (or
 *     "<file>: " for an error of the whole file), the line is one of the input's and the column
 *     within PROF_LINE_MAX + 1;
 *   - a parsed file holds at most PROF_KEYS_MAX keys, each with a unique id, 1..PROF_ALTS_MAX
 *     non-empty values, and alternatives only on a '=' knob;
 *   - a file without include merges exactly when it removes nothing (a "-key" with nothing below
 *     it is refused), into as many keys as it has, every key's on-drift resolved;
 *   - an include of f or g is a loop, never a stack overflow. */
#include "server/profiles/profile.h"
#include "tests/fuzz/fuzz.h"

static const uint8_t *in_data;
static size_t in_size;

static int load(void *ctx, const char *name, const struct prof_loc *from, char **text, size_t *len,
		struct prof_err *err)
{
	struct prof_loc here = { .file = "x.conf" };
	(void)ctx;
	if (strcmp(name, "f") && strcmp(name, "g"))
		return prof_fail(err, from ? from : &here, MPE_PROFILE_INCLUDE_MISSING, "missing");
	*text = malloc(in_size + 1);
	FZ_ASSERT(*text, "malloc");
	memcpy(*text, in_data, in_size);
	*len = in_size;
	return 0;
}

static void check_place(const struct prof_err *e, size_t lines)
{
	char want[128];

	if (e->e.code == MPE_INTERNAL_NOMEM)
		return;
	if (e->loc.line)
		snprintf(want, sizeof want, "%s:%u:%u: ", e->loc.file, e->loc.line, e->loc.col);
	else
		snprintf(want, sizeof want, "%s: ", e->loc.file);
	FZ_ASSERT(!strncmp(e->e.detail, want, strlen(want)), "detail '%s' lacks '%s'", e->e.detail, want);
	FZ_ASSERT(e->loc.line <= lines, "line %u of %zu", e->loc.line, lines);
	FZ_ASSERT(e->loc.col <= PROF_LINE_MAX + 1, "column %u", e->loc.col);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prof_err e = { 0 };
	struct prof_file f;
	struct prof_doc d;
	size_t lines = 1;
	bool removes = false;

	in_data = data;
	in_size = size;
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	if (prof_parse("f.conf", (const char *)data, size, &f, &e) < 0) {
		check_place(&e, lines);
		prof_file_free(&f);
		return 0;
	}
	FZ_ASSERT(f.n <= PROF_KEYS_MAX, "%zu keys", f.n);
	for (size_t i = 0; i < f.n; i++) {
		const struct prof_key *k = &f.keys[i];
		removes |= k->removal;
		for (size_t j = 0; j < i; j++)
			FZ_ASSERT(strcmp(k->id, f.keys[j].id), "id %s twice", k->id);
		if (k->removal)
			continue;
		FZ_ASSERT(k->nvals >= 1 && k->nvals <= PROF_ALTS_MAX, "%d values", k->nvals);
		for (int v = 0; v < k->nvals; v++)
			FZ_ASSERT(k->vals[v][0], "empty value of %s", k->id);
		FZ_ASSERT(k->nvals == 1 || (k->kind == PROF_KNOB && k->cmp == PROF_EQ), "alternatives on %s", k->id);
	}
	memset(&e, 0, sizeof e);
	if (prof_merge("f", load, NULL, &d, &e) < 0) {
		check_place(&e, lines);
		FZ_ASSERT(f.has_include || removes || e.e.code == MPE_INTERNAL_NOMEM, "merge failed: %s", e.e.detail);
		if (f.has_include && (!strcmp(f.include, "f") || !strcmp(f.include, "g")))
			FZ_ASSERT(e.e.code == MPE_PROFILE_INCLUDE_LOOP || e.e.code == MPE_PROFILE_REMOVE_UNSET ||
				  e.e.code == MPE_PROFILE_DUPLICATE_KEY || e.e.code == MPE_INTERNAL_NOMEM,
				  "include of itself: %s", e.e.detail);
	} else {
		FZ_ASSERT(!f.has_include && !removes, "merged with include %d, removal %d", f.has_include, removes);
		FZ_ASSERT(d.n == f.n, "%zu keys merged of %zu", d.n, f.n);
		for (size_t i = 0; i < d.n; i++)
			FZ_ASSERT(d.keys[i].on_drift != PROF_DRIFT_UNSET, "on-drift of %s unresolved", d.keys[i].id);
	}
	prof_doc_free(&d);
	prof_file_free(&f);
	return 0;
}
