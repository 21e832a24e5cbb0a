/* touch: the framework's own probe, and the simplest measurement there is — map a region of
 * anonymous memory, write one byte in every base page, and ask the kernel (move_pages(2) in query
 * mode) on which node each page landed. It proves the path end to end (policy and CPU binding in
 * the child, result over the pipe, history), and "hold_ms" keeps the memory for a while so that
 * cancel and timeout can be seen to kill the child. */
#include "server/probes/probe.h"
#include "server/probes/typed.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MIB          (1024ULL * 1024)
#define QUERY_CHUNK  1024

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char *const modes[] = { "always", "madvise", "never" };

/* The kind's own parameters: what the parser takes, what GET /v1/probes lists. */
static const struct probe_param touch_params_table[] = {
	{ "size", PROBE_PARAM_SIZE },
	{ "hold_ms", PROBE_PARAM_INTEGER },
	{ "thp", PROBE_PARAM_LIST },
	{ NULL, 0 },
};

static json_t *touch_parse(const json_t *params, const struct probe_env *env, struct probe_plan *plan, mp_err *e)
{
	json_t *thp = json_object_get(params, "thp"), *m, *norm;
	uint64_t size, hold;
	size_t i;

	(void)env;
	if (probe_params_only(params, touch_params_table, e) < 0 || probe_size(params, "size", 4096, 1ULL << 40, 16 * MIB, &size, e) < 0 ||
	    probe_u64(params, "hold_ms", 0, 600000, 0, &hold, e) < 0)
		return NULL;
	if (size % 4096)
		return mp_fail(e, MPE_PROBE_BAD_PARAM, EINVAL, "\"size\" must be a whole number of 4 KiB pages"), NULL;
	plan->npasses = 1;
	plan->bytes = size;
	norm = json_pack("{s:I, s:I}", "size", (json_int_t)size, "hold_ms", (json_int_t)hold);
	if (!thp)
		return norm;
	/* "thp": ["always", "never"]: one pass per thp.enabled setting, restored after. */
	if (!json_is_array(thp) || !json_array_size(thp) || json_array_size(thp) > PROBE_MAX_PASSES) {
		json_decref(norm);
		return mp_fail(e, MPE_PROBE_BAD_PARAM, EINVAL, "\"thp\" is a list of 1 to %d of always, madvise, never",
			       PROBE_MAX_PASSES), NULL;
	}
	plan->npasses = (int)json_array_size(thp);
	json_array_foreach(thp, i, m) {
		size_t j = 0;
		while (j < 3 && (!json_is_string(m) || strcmp(json_string_value(m), modes[j])))
			j++;
		if (j == 3) {
			json_decref(norm);
			return mp_fail(e, MPE_PROBE_BAD_PARAM, EINVAL, "\"thp\" is a list of always, madvise, never"), NULL;
		}
		plan->pass[i] = (struct probe_pass){ .label = modes[j], .nset = 1, .set = { { "thp.enabled", modes[j] } } };
	}
	json_object_set(norm, "thp", thp);
	return norm;
}

/* Pages per node, counted by move_pages(2) with nodes NULL: status[i] is the node or -errno. */
static json_t *where(char *base, size_t pages, size_t psz)
{
	void *addr[QUERY_CHUNK];
	int status[QUERY_CHUNK];
	json_t *per = json_object();
	size_t errors = 0;

	for (size_t off = 0; off < pages; off += QUERY_CHUNK) {
		size_t n = pages - off < QUERY_CHUNK ? pages - off : QUERY_CHUNK;
		for (size_t i = 0; i < n; i++)
			addr[i] = base + (off + i) * psz;
		if (syscall(SYS_move_pages, 0, n, addr, NULL, status, 0) < 0) {
			errors += n;
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			char key[16];
			if (status[i] < 0) {
				errors++;
				continue;
			}
			snprintf(key, sizeof key, "%d", status[i]);
			json_object_set_new(per, key, json_integer(json_integer_value(json_object_get(per, key)) + 1));
		}
	}
	return json_pack("{s:o, s:I}", "pages_per_node", per, "pages_unplaced", (json_int_t)errors);
}

static int touch_workload(const json_t *params, json_t **result, char *err, size_t errlen)
{
	size_t size = (size_t)json_integer_value(json_object_get(params, "size"));
	int64_t hold = json_integer_value(json_object_get(params, "hold_ms"));
	size_t psz = (size_t)sysconf(_SC_PAGESIZE), pages = size / psz;
	int64_t t0, el;
	char *p;

	if ((p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED) {
		snprintf(err, errlen, "mmap of %zu bytes: %s", size, strerror(errno));
		return -1;
	}
	t0 = mono_ns();
	for (size_t i = 0; i < pages; i++)
		p[i * psz] = 1;
	el = mono_ns() - t0;
	*result = json_pack("{s:I, s:I, s:I, s:f}", "bytes", (json_int_t)size, "pages", (json_int_t)pages,
			    "elapsed_ns", (json_int_t)el,
			    "mib_per_s", el > 0 ? (double)size / MIB / ((double)el / 1e9) : 0.0);
	json_object_update_new(*result, where(p, pages, psz));
	/* Held for cancel and timeout tests; the parent kills the child to end it early. */
	for (int64_t end = mono_ns() + hold * 1000000; mono_ns() < end;)
		usleep(10000);
	munmap(p, size);
	return 0;
}

static json_t *touch_summary(const json_t *r)
{
	return json_pack("{s:O, s:O, s:O, s:O}", "mib_per_s", json_object_get(r, "mib_per_s"), "elapsed_ns",
			 json_object_get(r, "elapsed_ns"), "pages", json_object_get(r, "pages"), "pages_per_node",
			 json_object_get(r, "pages_per_node"));
}

/* norm is what touch_parse returned: its members are whole and checked. */
static int touch_pack(const json_t *norm, const struct probe_env *env, union probe_params *out, mp_err *e)
{
	struct touch_params *t = &out->leaf.touch;
	const json_t *thp = json_object_get(norm, "thp"), *m;
	size_t i;

	(void)env;
	t->size = (uint64_t)json_integer_value(json_object_get(norm, "size"));
	t->hold_ms = (uint64_t)json_integer_value(json_object_get(norm, "hold_ms"));
	t->nthp = 0;
	json_array_foreach(thp, i, m) {
		uint32_t j = 0;
		while (j < 3 && strcmp(json_string_value(m) ? json_string_value(m) : "", modes[j]))
			j++;
		if (j == 3 || t->nthp == PROBE_MAX_PASSES)
			return mp_fail(e, MPE_INTERNAL_ERROR, 0, "touch: a normalised thp list it cannot pack");
		t->thp[t->nthp++] = j;
	}
	return 0;
}

static json_t *touch_unpack(const union probe_params *p)
{
	const struct touch_params *t = &p->leaf.touch;
	json_t *o = json_pack("{s:I, s:I}", "size", (json_int_t)t->size, "hold_ms", (json_int_t)t->hold_ms), *thp;

	if (!o || !t->nthp)
		return o;
	if (!(thp = json_array())) {
		json_decref(o);
		return NULL;
	}
	/* A mode index past the list is sent as a name touch_parse refuses. */
	for (uint32_t i = 0; i < t->nthp && i < PROBE_MAX_PASSES; i++)
		json_array_append_new(thp, json_string(t->thp[i] < 3 ? modes[t->thp[i]] : "?"));
	if (t->nthp > PROBE_MAX_PASSES)
		json_array_append_new(thp, json_string("?"));
	json_object_set_new(o, "thp", thp);
	return o;
}

const struct probe_kind probe_touch = {
	.name = "touch",
	.job = "probe.touch",
	.params = touch_params_table,
	.parse = touch_parse,
	.pack = touch_pack,
	.unpack = touch_unpack,
	.workload = touch_workload,
	.summary = touch_summary,
};
