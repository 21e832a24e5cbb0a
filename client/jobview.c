#include "client/jobview.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/http.h"
#include "client/out.h"
#include "client/query.h"

void jobview_ns(double ns, char *buf, size_t len)
{
	if (ns < 1e6)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
}

void jobview_targets(const json_t *targets, bool done)
{
	static const char *const hdr_done[] = { "NODE", "FROM", "TARGET", "ASKED", "GOT", "NOW", "BATCHES",
						"LATENCY/PAGE", "STOPPED" };
	static const char *const hdr_plan[] = { "NODE", "FROM", "TARGET" };
	struct table *t = table_new(done ? 9 : 3, done ? hdr_done : hdr_plan);
	const json_t *x;
	size_t i;

	json_array_foreach(targets, i, x) {
		char c[9][48];
		const json_t *lat = json_object_get(x, "latency_per_page_ns");
		const char *cells[9];
		if (json_is_null(json_object_get(x, "node")))
			snprintf(c[0], sizeof c[0], "all");
		else
			out_scalar(json_object_get(x, "node"), c[0], sizeof c[0]);
		out_scalar(json_object_get(x, "from"), c[1], sizeof c[1]);
		out_scalar(json_object_get(x, "target"), c[2], sizeof c[2]);
		out_scalar(json_object_get(x, "asked"), c[3], sizeof c[3]);
		out_scalar(json_object_get(x, "got"), c[4], sizeof c[4]);
		out_scalar(json_object_get(x, "current"), c[5], sizeof c[5]);
		out_scalar(json_object_get(x, "batches"), c[6], sizeof c[6]);
		if (json_is_integer(lat))
			jobview_ns((double)json_integer_value(lat), c[7], sizeof c[7]);
		else
			snprintf(c[7], sizeof c[7], "-");
		out_scalar(json_object_get(x, "stopped"), c[8], sizeof c[8]);
		for (int k = 0; k < 9; k++)
			cells[k] = c[k];
		table_rowv(t, cells);
	}
	table_print(t, stdout);
}

/* A process job's outcome (process.migrate, process.collapse): its counts as rows. */
static void process_rows(struct table *t, const json_t *result)
{
	static const char *const keys[] = { "pid", "start_time", "from", "to", "pages_moved", "pages_not_moved",
					    "thp_bytes_before", "thp_bytes_after", "ranges", "collapsed", "failed" };
	const json_t *el = json_object_get(result, "elapsed_ns");
	char a[128];

	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		const json_t *v = json_object_get(result, keys[k]);
		if (!v)
			continue;
		out_scalar(v, a, sizeof a);
		table_row(t, keys[k], a);
	}
	if (json_is_integer(el) && json_object_get(result, "pid")) {
		jobview_ns((double)json_integer_value(el), a, sizeof a);
		table_row(t, "elapsed", a);
	}
}

/* Pages per node before and after a migration, beside each other. */
static void process_nodes(const json_t *result)
{
	static const char *const hdr[] = { "NODE", "PAGES BEFORE", "PAGES AFTER" };
	const json_t *before = json_object_get(result, "before"), *after = json_object_get(result, "after");
	struct table *t = table_new(3, hdr);
	char n[32], b[32], f[32];
	long long seen[256];
	int nseen = 0;
	size_t i, j;
	json_t *x, *y;

	for (int side = 0; side < 2; side++)
		json_array_foreach(side ? after : before, i, x) {
			long long id = (long long)json_integer_value(json_object_get(x, "node"));
			int k;
			for (k = 0; k < nseen && seen[k] != id; k++)
				;
			if (k < nseen || nseen == 256)
				continue;
			seen[nseen++] = id;
			snprintf(n, sizeof n, "%lld", id);
			snprintf(b, sizeof b, "0");
			snprintf(f, sizeof f, "0");
			json_array_foreach(before, j, y)
				if (json_integer_value(json_object_get(y, "node")) == id)
					snprintf(b, sizeof b, "%lld", (long long)json_integer_value(json_object_get(y, "pages")));
			json_array_foreach(after, j, y)
				if (json_integer_value(json_object_get(y, "node")) == id)
					snprintf(f, sizeof f, "%lld", (long long)json_integer_value(json_object_get(y, "pages")));
			table_row(t, n, b, f);
		}
	table_print(t, stdout);
}

/* One node's free blocks at the end, as the reason the kernel gave fewer pages than asked. */
static size_t why_node(const json_t *buddy, const char *node, unsigned order, char *buf, size_t len)
{
	const json_t *nb = json_object_get(buddy, node), *blocks = json_object_get(nb, "free_blocks");
	size_t norders = json_array_size(blocks);
	long long big = 0;

	if (!norders)
		return 0;
	if (order >= norders)   /* gigantic pages: beyond the buddy allocator's largest order */
		return (size_t)snprintf(buf, len, "node %s: order %u is beyond buddyinfo (largest order %zu), %lld free "
					"order-%zu blocks; ", node, order, norders - 1,
					(long long)json_integer_value(json_array_get(blocks, norders - 1)), norders - 1);
	for (size_t o = order; o < norders; o++)
		big += json_integer_value(json_array_get(blocks, o));
	return (size_t)snprintf(buf, len, "node %s: %lld free order-%u+ blocks left (unusable index %.2f); ", node, big,
				order, json_real_value(json_array_get(json_object_get(nb, "unusable_index"), order)));
}

/* Why a resize stopped short, in one line, from the free blocks and compaction counters the job
 * recorded (result.conditions). Empty when the job did not stop for lack of pages. */
static void why_line(const json_t *job, char *buf, size_t len)
{
	const json_t *res = json_object_get(job, "result"), *cond = json_object_get(res, "conditions");
	const json_t *buddy = json_object_get(json_object_get(cond, "buddyinfo"), "after");
	const json_t *vm = json_object_get(cond, "vmstat_delta"), *targets = json_object_get(res, "targets"), *t;
	long long kb = json_integer_value(json_object_get(res, "size_kb"));
	unsigned order = 0;
	size_t i, off = 0;
	const char *k;
	json_t *v;

	buf[0] = '\0';
	if (!json_is_object(buddy) || kb < 8 || !json_is_string(json_object_get(job, "reason")) ||
	    strcmp(json_string_value(json_object_get(job, "reason")), "no_progress"))
		return;
	while ((4LL << (order + 1)) <= kb)
		order++;
	json_array_foreach(targets, i, t) {
		const json_t *node = json_object_get(t, "node"), *stopped = json_object_get(t, "stopped");
		char id[16];
		if (!json_is_string(stopped) || strcmp(json_string_value(stopped), "no_progress"))
			continue;
		if (json_is_integer(node)) {
			snprintf(id, sizeof id, "%lld", (long long)json_integer_value(node));
			off += why_node(buddy, id, order, buf + off, off < len ? len - off : 0);
		} else {   /* the global pool: every node */
			json_object_foreach((json_t *)buddy, k, v)
				if (off < len)
					off += why_node(buddy, k, order, buf + off, len - off);
		}
		if (off >= len)
			break;
	}
	if (off < len)
		snprintf(buf + off, len - off, "compaction: %lld stalls, %lld succeeded",
			 (long long)json_integer_value(json_object_get(vm, "compact_stall")),
			 (long long)json_integer_value(json_object_get(vm, "compact_success")));
}

/* A profile.apply: each key's outcome, what the kernel shows after, and why when it fell short. */
static bool profile_keys(const json_t *result)
{
	static const char *const hdr[] = { "KEY", "OUTCOME", "ACTUAL", "VERDICT", "WHY" };
	const json_t *k;
	struct table *t;
	size_t i;

	if (!json_is_array(json_object_get(result, "keys")) || !json_is_string(json_object_get(result, "profile")))
		return false;
	t = table_new(5, hdr);
	json_array_foreach(json_object_get(result, "keys"), i, k) {
		const char *actual = json_string_value(json_object_get(k, "actual"));
		table_row(t, json_string_value(json_object_get(k, "key")), json_string_value(json_object_get(k, "outcome")),
			  actual ? actual : "-", json_string_value(json_object_get(k, "verdict")),
			  json_string_value(json_object_get(k, "why")));
	}
	table_print(t, stdout);
	printf("profile %s: %s\n", json_string_value(json_object_get(result, "profile")),
	       json_string_value(json_object_get(result, "state")));
	return true;
}

void jobview_print(const json_t *job)
{
	static const char *const keys[] = { "id", "kind", "status", "reason", "error", "errno", "source",
					    "schedule_id", "operation_id" };
	static const char *const times[] = { "created_ns", "started_ns", "finished_ns" };
	const json_t *progress = json_object_get(job, "progress"), *result = json_object_get(job, "result");
	const json_t *targets = json_object_get(result, "targets");
	struct table *t = table_new(2, NULL);
	char a[512];

	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		out_scalar(json_object_get(job, keys[k]), a, sizeof a);
		table_row(t, keys[k], a);
	}
	why_line(job, a, sizeof a);
	if (a[0])
		table_row(t, "why", a);
	if (json_is_integer(json_object_get(job, "waiting_for_job_id"))) {
		snprintf(a, sizeof a, "job %lld (same page size, ahead of this one)",
			 (long long)json_integer_value(json_object_get(job, "waiting_for_job_id")));
		table_row(t, "waiting for", a);
	}
	for (size_t k = 0; k < sizeof times / sizeof times[0]; k++) {
		const json_t *v = json_object_get(job, times[k]);
		char key[32];
		if (json_is_integer(v))
			out_time_ns((long long)json_integer_value(v), a, sizeof a);
		else
			snprintf(a, sizeof a, "-");
		snprintf(key, sizeof key, "%.*s", (int)(strlen(times[k]) - 3), times[k]);
		table_row(t, key, a);
	}
	if (json_is_string(json_object_get(progress, "phase"))) {
		snprintf(a, sizeof a, "%s", json_string_value(json_object_get(progress, "phase")));
		table_row(t, "progress", a);
	} else if (json_is_object(progress) && json_is_integer(json_object_get(progress, "pages_total"))) {
		snprintf(a, sizeof a, "%lld of %lld pages, %lld batches",
			 (long long)json_integer_value(json_object_get(progress, "pages_done")),
			 (long long)json_integer_value(json_object_get(progress, "pages_total")),
			 (long long)json_integer_value(json_object_get(progress, "batches")));
		table_row(t, "progress", a);
		if (json_is_integer(json_object_get(progress, "eta_ms"))) {
			snprintf(a, sizeof a, "%lld ms", (long long)json_integer_value(json_object_get(progress, "eta_ms")));
			table_row(t, "eta", a);
		}
	}
	process_rows(t, result);
	/* A probe: each pass's figures, one line per pass. */
	{
		const json_t *p;
		size_t i;
		json_array_foreach(json_object_get(result, "passes"), i, p) {
			const json_t *r = json_object_get(p, "result");
			const char *k, *label = json_string_value(json_object_get(p, "label"));
			json_t *v;
			size_t off;
			char key[48];
			off = (size_t)snprintf(a, sizeof a, "%s", json_string_value(json_object_get(p, "status")));
			json_object_foreach((json_t *)r, k, v)
				if (json_is_number(v) && off < sizeof a) {
					char num[32];
					if (json_is_integer(v))
						snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
					else
						snprintf(num, sizeof num, "%.4g", json_real_value(v));
					off += (size_t)snprintf(a + off, sizeof a - off, " %s=%s", k, num);
				}
			if (json_is_string(json_object_get(p, "error")) && off < sizeof a)
				snprintf(a + off, sizeof a - off, ": %s", json_string_value(json_object_get(p, "error")));
			snprintf(key, sizeof key, "pass %s", label ? label : "");
			table_row(t, key, a);
		}
	}
	table_print(t, stdout);
	if (profile_keys(result))
		return;   /* its pools are keys of the table; the last resize's progress would repeat them */
	if (json_is_array(json_object_get(result, "before")))
		process_nodes(result);
	if (json_is_array(targets))
		jobview_targets(targets, true);
	else if (json_is_array(json_object_get(progress, "targets")))
		jobview_targets(json_object_get(progress, "targets"), true);
}

static bool active(const json_t *job)
{
	const char *s = json_string_value(json_object_get(job, "status"));
	return s && (!strcmp(s, "queued") || !strcmp(s, "running"));
}

/* pages_done / pages_total of a job's progress; `none` when the job had nothing to move. */
static double fraction(const json_t *job, double none)
{
	const json_t *p = json_object_get(job, "progress");
	double total = (double)json_integer_value(json_object_get(p, "pages_total"));
	double done = (double)json_integer_value(json_object_get(p, "pages_done"));

	if (!json_object_get(p, "pages_total")) {   /* an experiment counts its runs */
		total = (double)json_integer_value(json_object_get(p, "runs"));
		done = (double)json_integer_value(json_object_get(p, "runs_done"));
	}

	return total > 0 ? done / total : none;
}

/* The seconds each request asks the daemon to hold its answer while the job runs (?wait=, the
 * daemon cuts it to under its idle timeout): on a terminal one, so that the bar moves once a
 * second; else the most the daemon takes, so that a script's wait costs a request per 30 s. */
#define WAIT_TTY_S  1
#define WAIT_MAX_S  30

int jobview_wait_for(struct cli *c, long long id, json_t **job)
{
	struct query q, qw;
	char label[64];
	struct http_result r;
	const char *status, *path, *path_wait;
	int rc;

	*job = NULL;

	query_init(&q, "/v1/jobs");
	query_segment_u64(&q, (uint64_t)id);
	qw = q;
	query_arg_u64(&qw, "wait", isatty(STDERR_FILENO) ? WAIT_TTY_S : WAIT_MAX_S);
	if (!(path = query_path(&q)) || !(path_wait = query_path(&qw))) {
		out_error("job %lld: request path too long", id);
		return EXIT_REFUSED;
	}
	snprintf(label, sizeof label, "job %lld", id);
	/* No polling: the daemon answers as soon as the job ends. The first answer is not held, so
	 * a terminal sees the bar at once. */
	for (const char *p = path;; p = path_wait) {
		if ((rc = http_expect(c, "GET", p, NULL, &r)) != EXIT_OK)
			return rc;
		if (!active(r.body))
			break;
		out_progress(label, fraction(r.body, 0), false);
		http_result_free(&r);
	}
	status = json_string_value(json_object_get(r.body, "status"));
	/* Drawn even when the job ended before the first poll, so a terminal always sees where it
	 * stopped: a partial job stays short of 100 %. */
	out_progress(label, fraction(r.body, status && !strcmp(status, "ok") ? 1 : 0), true);
	*job = r.body;
	return EXIT_OK;
}

int jobview_queued(struct cli *c, struct http_result *r, const char *noun)
{
	long long id = (long long)json_integer_value(json_object_get(r->body, "id"));

	if (c->json)
		out_json(r->body);
	else
		printf("%s %lld queued: mempolicyctl %s show %lld\n", noun, id, noun, id);
	http_result_free(r);
	return EXIT_OK;
}

int jobview_wait(struct cli *c, long long id)
{
	json_t *job;
	int rc;

	if ((rc = jobview_wait_for(c, id, &job)) != EXIT_OK)
		return rc;
	return jobview_ended(c, id, job);
}

int jobview_answer(struct cli *c, const json_t *answer)
{
	long long id = (long long)json_integer_value(json_object_get(answer, "id"));

	if (active(answer))
		return jobview_wait(c, id);
	return jobview_ended(c, id, json_incref((json_t *)answer));
}

int jobview_ended(struct cli *c, long long id, json_t *job)
{
	const char *status;
	int rc;

	if (c->json)
		out_json(job);
	else
		jobview_print(job);
	status = json_string_value(json_object_get(job, "status"));
	rc = status && !strcmp(status, "ok") ? EXIT_OK : EXIT_REFUSED;
	if (rc != EXIT_OK) {
		const char *why = json_string_value(json_object_get(job, "error"));
		if (!why)
			why = json_string_value(json_object_get(job, "reason"));
		out_error("job %lld ended %s%s%s", id, status ? status : "?", why ? ": " : "", why ? why : "");
	}
	json_decref(job);
	return rc;
}
