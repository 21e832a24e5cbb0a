/* The knob change request, as PUT/PATCH /v1/knobs hand it to the ops layer: the input is a JSON
 * body, parsed as the router does (duplicate keys refused), unwrapped from {"knobs": {...}} when it
 * has that shape (else the object itself is the knob map), and validated by knobs_set() with
 * dry_run against a catalogue built once on a generated tree (tests/fuzz/tree.h).
 * Properties:
 *   - the outcome (accepted, or the status of the first refused knob: 404 unknown, 409
 *     unavailable, 400 wrong type, 422 out of range / not allowed) is the one a reference
 *     validation written from docs/reference/knobs.md predicts;
 *   - an accepted plan lists every knob in request order with the live old value and the
 *     canonical new one, which knob_check_value accepts, and would_change == (old != new);
 *   - a dry run writes nothing: every file of the tree reads the same afterwards;
 *   - each accepted new value written with knob_write reads back as itself, and writing the old
 *     one back restores the file byte for byte. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>

#include "common/parse.h"
#include "server/app.h"
#include "server/api/api.h"
#include "server/kernel/knobs.h"
#include "server/ops/knobs.h"
#include "tests/fuzz/tree.h"

static struct app app;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fz_tree_make();
	app.sysfs_root = fz_sys;
	app.procfs_root = fz_proc;
	FZ_ASSERT((app.knobs = knobs_build(fz_sys, fz_proc)), "knobs_build");
	return 0;
}

static void read_file(const struct knob *k, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;
	size_t n = 0;

	knob_path(app.knobs, k, path, sizeof path);
	if ((f = fopen(path, "r"))) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
}

/* What the reference says about one knob and value: 0 (ok, canonical text in out) or the status. */
static int ref_value(const struct knob *k, const struct knob_state *st, json_t *v, char *out, size_t len)
{
	uint64_t u;

	if (k->type == KNOB_CHOICE) {
		if (!json_is_string(v))
			return 400;
		for (int i = 0; i < st->nopts; i++)
			if (!strcmp(st->opts[i], json_string_value(v)) && strlen(st->opts[i]) == json_string_length(v)) {
				snprintf(out, len, "%s", st->opts[i]);
				return 0;
			}
		return 422;
	}
	if (json_is_boolean(v)) {
		if (k->type != KNOB_BOOLEAN)
			return 400;
		u = json_is_true(v);
	} else if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return 422;
		u = (uint64_t)json_integer_value(v);
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);
		/* digits only, and no leading zero: the number's one spelling (issue 21) */
		if (n == 0 || n != strlen(s) || strspn(s, "0123456789") != n || (s[0] == '0' && n > 1))
			return 400;
		errno = 0;
		if (parse_u64(s, &u) < 0)
			return 422;   /* all digits, so too large */
	} else {
		return 400;
	}
	if (u < k->min || u > k->max)
		return 422;
	snprintf(out, len, "%llu", (unsigned long long)u);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body, *knobs, *out = NULL;
	struct knobs_actor who = { .source = "fuzz" };
	mp_err e = { 0 };
	size_t n_all = knobs_count(app.knobs), n;
	char (*before)[256] = calloc(n_all, sizeof *before), now[256];
	const char *name;
	json_t *v;
	int want = 0, rc;

	body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(body))
		goto out;
	knobs = body;
	if (json_object_size(body) == 1 && json_is_object(json_object_get(body, "knobs")))
		knobs = json_object_get(body, "knobs");
	n = json_object_size(knobs);

	/* The reference: the first knob that is refused decides the status. */
	if (n == 0 || n > 256)
		want = 400;
	json_object_foreach(knobs, name, v) {
		const struct knob *k = knobs_find(app.knobs, name);
		struct knob_state st;
		char text[64];
		if (want)
			break;
		if (!k) {
			want = 404;
			break;
		}
		knob_read(app.knobs, k, &st);
		if (!st.available) {
			want = 409;
			break;
		}
		want = ref_value(k, &st, v, text, sizeof text);
	}

	for (size_t i = 0; i < n_all; i++)
		read_file(knobs_at(app.knobs, i), before[i], sizeof before[i]);
	rc = knobs_set(&app, &who, knobs, true, false, &out, &e);
	for (size_t i = 0; i < n_all; i++) {
		read_file(knobs_at(app.knobs, i), now, sizeof now);
		FZ_ASSERT(!strcmp(before[i], now), "a dry run changed %s", knobs_at(app.knobs, i)->name);
	}
	if (rc < 0) {
		FZ_ASSERT(!out, "a refused dry run returned a result");
		FZ_ASSERT(api_status(&e) == want, "refused with %d %s (%s), the reference says %d", api_status(&e), mp_code_name(e.code), e.detail,
			  want);
		FZ_ASSERT(e.code != MPE_NONE && e.detail[0], "a refusal without code or detail");
		goto out;
	}
	FZ_ASSERT(want == 0, "accepted, the reference says %d", want);
	FZ_ASSERT(json_is_true(json_object_get(out, "dry_run")) &&
		  !strcmp(json_string_value(json_object_get(out, "status")), "planned"), "not a planned dry run");
	json_t *changes = json_object_get(out, "changes");
	FZ_ASSERT(json_array_size(changes) == n, "%zu changes for %zu knobs", json_array_size(changes), n);
	size_t i = 0;
	json_object_foreach(knobs, name, v) {
		json_t *c = json_array_get(changes, i++);
		const struct knob *k = knobs_find(app.knobs, name);
		struct knob_state st;
		char want_new[64], old_text[64], new_text[64];
		json_t *jold = json_object_get(c, "old"), *jnew = json_object_get(c, "new");

		FZ_ASSERT(!strcmp(json_string_value(json_object_get(c, "knob")), name), "change %zu is not %s", i, name);
		knob_read(app.knobs, k, &st);
		FZ_ASSERT(ref_value(k, &st, v, want_new, sizeof want_new) == 0, "reference refuses %s", name);
		json_t *live = knob_value_json(k, st.value), *planned = knob_value_json(k, want_new);
		FZ_ASSERT(json_equal(jold, live), "%s: old is not the live value", name);
		FZ_ASSERT(json_equal(jnew, planned), "%s: new is not %s", name, want_new);
		json_decref(live);
		json_decref(planned);
		FZ_ASSERT(knob_check_value(k, &st, want_new) == KNOB_OK, "%s = %s planned but not valid", name, want_new);
		FZ_ASSERT(json_is_true(json_object_get(c, "would_change")) == !!strcmp(st.value, want_new),
			  "%s: would_change is wrong", name);
		/* Write, read back, restore: the generated tree behaves as the kernel's files do. */
		snprintf(old_text, sizeof old_text, "%s", st.value);
		snprintf(new_text, sizeof new_text, "%s", want_new);
		FZ_ASSERT(knob_write(app.knobs, k, new_text) == 0, "%s: writing %s failed", name, new_text);
		knob_read(app.knobs, k, &st);
		FZ_ASSERT(st.available && !strcmp(st.value, new_text), "%s: wrote %s, reads %s", name, new_text, st.value);
		FZ_ASSERT(knob_write(app.knobs, k, old_text) == 0, "%s: restoring %s failed", name, old_text);
	}
	for (size_t j = 0; j < n_all; j++) {
		read_file(knobs_at(app.knobs, j), now, sizeof now);
		FZ_ASSERT(!strcmp(before[j], now), "write and restore changed %s: '%s' -> '%s'",
			  knobs_at(app.knobs, j)->name, before[j], now);
	}
out:
	json_decref(body);
	json_decref(out);
	free(before);
	return 0;
}
