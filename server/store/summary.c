/* What an operation did, in one line, per kind (see summary.h). A table, one builder per kind;
 * a kind without one says its status and what it acted on, if anything. */
#include "server/store/summary.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define SUMMARY_MAX 240   /* a line in a table, not a report: longer text ends in "…" */
_Static_assert(OP_SUMMARY_BUF >= SUMMARY_MAX + 8, "summary.h's buffer holds a line");

struct line {
	char buf[SUMMARY_MAX + 8];
	size_t off;
	bool full;
};

static void add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->off, SUMMARY_MAX + 1 - l->off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n > SUMMARY_MAX - l->off) {
		/* Cut on a character boundary: back to the last character's lead byte (continuation
		 * bytes are 10xxxxxx), and keep that character only if all its bytes fit. */
		size_t end = SUMMARY_MAX - 1;
		while (end > 0 && ((unsigned char)l->buf[end] & 0xc0) == 0x80)
			end--;
		unsigned char lead = (unsigned char)l->buf[end];
		size_t len = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
		if (end + len <= SUMMARY_MAX)
			end += len;
		memcpy(l->buf + end, "…", sizeof "…");
		l->off = end + sizeof "…" - 1;
		l->full = true;
		return;
	}
	l->off += (size_t)n;
}

static const char *str(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v ? v : "?";
}

/* knobs.set: the changes as the statement wrote them, "thp.enabled madvise→never, thp.defrag
 * defer→madvise" ("thp.defrag defer→never failed" for a change that did not stay written). */
static void knobs(struct line *l, const char *status, const json_t *request, const json_t *targets,
		  const char *changes)
{
	(void)request;
	(void)targets;
	if (changes && *changes)
		add(l, "%s", changes);
	else
		add(l, "no change %s", status);
}

/* hugepages.resize: per target "2M node0 +512 ok" (the pages the pool moved, and why it stopped);
 * while it runs, or when it never ran, the targets it asked for ("2M node0 →512 running"). */
static void resize(struct line *l, const char *status, const json_t *request, const json_t *targets,
		   const char *changes)
{
	const json_t *t, *nodes = json_object_get(request, "nodes");
	const char *k;
	json_t *v;
	size_t i;
	(void)changes;

	add(l, "%s", str(request, "size"));
	if (json_array_size(targets)) {
		json_array_foreach(targets, i, t) {
			const json_t *node = json_object_get(t, "node");
			long long moved = (long long)(json_integer_value(json_object_get(t, "current")) -
						      json_integer_value(json_object_get(t, "from")));
			const char *stop = json_string_value(json_object_get(t, "stopped"));
			if (json_is_integer(node))
				add(l, "%s node%lld %+lld", i ? "," : "", (long long)json_integer_value(node), moved);
			else
				add(l, "%s total %+lld", i ? "," : "", moved);
			/* a target reached is "ok" even in a partial job; one that stopped short says why */
			add(l, " %s", !stop ? status : !strcmp(stop, "target") ? "ok" : stop);
		}
		return;
	}
	if (json_is_integer(json_object_get(request, "total")))
		add(l, " total →%lld", (long long)json_integer_value(json_object_get(request, "total")));
	json_object_foreach((json_t *)nodes, k, v)
		add(l, " node%s →%lld", k, (long long)json_integer_value(v));
	add(l, " %s", status);
}

static void cgroup(struct line *l, const char *status, const json_t *request, const json_t *targets,
		   const char *changes)
{
	(void)targets;
	(void)changes;
	add(l, "cgroup /%s mems→%s %s", str(request, "path"), str(request, "mems"), status);
}

/* profile.apply: "profile db ok" (each key's outcome is in the result). */
static void profile(struct line *l, const char *status, const json_t *request, const json_t *targets,
		    const char *changes)
{
	(void)targets;
	(void)changes;
	add(l, "profile %s %s", str(request, "profile"), status);
}

/* process.migrate: "pid 4242 0→1 ok"; the other process kinds: "pid 4242 ok". */
static void process(struct line *l, const char *status, const json_t *request, const json_t *targets,
		    const char *changes)
{
	(void)targets;
	(void)changes;
	if (json_is_integer(json_object_get(request, "pid")))
		add(l, "pid %lld ", (long long)json_integer_value(json_object_get(request, "pid")));
	if (json_is_string(json_object_get(request, "to")))
		add(l, "%s→%s ", str(request, "from"), str(request, "to"));
	add(l, "%s", status);
}

/* process.launch: the program ("stress-ng ok"). */
static void launch(struct line *l, const char *status, const json_t *request, const json_t *targets,
		   const char *changes)
{
	const char *prog = json_string_value(json_array_get(json_object_get(request, "argv"), 0));
	(void)targets;
	(void)changes;
	if (prog)
		add(l, "%s ", prog);
	add(l, "%s", status);
}

static void schedule(struct line *l, const char *status, const json_t *request, const json_t *targets,
		     const char *changes)
{
	(void)targets;
	(void)changes;
	add(l, "schedule %lld %s", (long long)json_integer_value(json_object_get(request, "schedule_id")), status);
}

/* profile.drift: the key and what its policy did ("thp.defrag drift restored"). */
static void drift(struct line *l, const char *status, const json_t *request, const json_t *targets,
		  const char *changes)
{
	(void)targets;
	(void)changes;
	add(l, "%s drift %s", str(request, "key"), status);
}

/* probe.<kind> and probe.restore: "probe thp-fault ok"; a kind without a builder: its status. */
static void other(struct line *l, const char *status, const json_t *request, const json_t *targets,
		  const char *changes)
{
	(void)targets;
	(void)changes;
	if (json_is_string(json_object_get(request, "probe")))
		add(l, "probe %s ", str(request, "probe"));
	add(l, "%s", status);
}

/* experiment.run: "experiment always vs madvise on sparse-touch, 10 rounds ok". */
static void experiment(struct line *l, const char *status, const json_t *request, const json_t *targets,
		       const char *changes)
{
	const json_t *w = json_object_get(request, "workload"), *arm;
	size_t i;

	(void)targets;
	(void)changes;
	add(l, "experiment ");
	json_array_foreach(json_object_get(request, "arms"), i, arm)
		add(l, "%s%s", i ? " vs " : "", str(arm, "name"));
	if (json_is_string(json_object_get(w, "probe")))
		add(l, " on %s", str(w, "probe"));
	else if (json_is_string(json_array_get(json_object_get(w, "argv"), 0)))
		add(l, " on %s", json_string_value(json_array_get(json_object_get(w, "argv"), 0)));
	add(l, ", %lld rounds %s", (long long)json_integer_value(json_object_get(request, "rounds")), status);
}

typedef void summary_fn(struct line *l, const char *status, const json_t *request, const json_t *targets,
			const char *changes);

static const struct {
	const char *kind;
	summary_fn *fn;
} builders[] = {
	{ "knobs.set",        knobs },
	{ "hugepages.resize", resize },
	{ "cgroup.mems",      cgroup },
	{ "process.migrate",  process },
	{ "process.collapse", process },
	{ "process.sample",   process },
	{ "process.launch",   launch },
	{ "schedule.run",     schedule },
	{ "profile.apply",    profile },
	{ "profile.drift",    drift },
	{ "probe.*",          other },   /* every probe kind, and probe.restore */
	{ "experiment.run",   experiment },
};

/* kind matches a builder's name: equal, or "x.*" and kind starts with "x.". */
static bool names(const char *builder, const char *kind)
{
	size_t n = strlen(builder);

	if (n >= 2 && !strcmp(builder + n - 2, ".*"))
		return !strncmp(kind, builder, n - 1);
	return !strcmp(kind, builder);
}

bool op_summary_has(const char *kind)
{
	for (size_t i = 0; i < sizeof builders / sizeof builders[0]; i++)
		if (names(builders[i].kind, kind))
			return true;
	return false;
}

const char *op_summary_line(const char *kind, const char *status, const json_t *request, const json_t *targets,
			    const char *changes, char buf[OP_SUMMARY_BUF])
{
	struct line l = { .off = 0 };
	summary_fn *fn = other;

	for (size_t i = 0; kind && i < sizeof builders / sizeof builders[0]; i++)
		if (names(builders[i].kind, kind)) {
			fn = builders[i].fn;
			break;
		}
	fn(&l, status ? status : "?", request, targets, changes);
	l.buf[l.off] = '\0';
	memcpy(buf, l.buf, l.off + 1);
	return buf;
}

json_t *op_summary_text(const char *kind, const char *status, const json_t *request, const json_t *targets,
			const char *changes)
{
	char buf[OP_SUMMARY_BUF];

	op_summary_line(kind, status, request, targets, changes, buf);
	/* Stored text is the daemon's own JSON, but a row edited by hand may hold anything: a string
	 * that is not UTF-8 becomes a marker, not an answer jansson refuses to build. */
	json_t *v = json_string(buf);
	return v ? v : json_string("(not UTF-8)");
}
