/* `mempolicyctl history [filters]`, `history show ID`, `history export` and `history compare`: the
 * daemon's record of operations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/out.h"
#include "client/query.h"
#include "common/parse.h"

static void actor_text(const json_t *op, char *buf, size_t len)
{
	const json_t *a = json_object_get(op, "actor");
	const char *name = json_string_value(json_object_get(a, "name"));

	if (!json_is_object(a))
		snprintf(buf, len, "daemon");
	else if (name && name[0])
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "uid %lld", (long long)json_integer_value(json_object_get(a, "uid")));
}

int cmd_history_list(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const hdr[] = { "ID", "STARTED", "KIND", "STATUS", "ACTOR", "SUMMARY", "ERROR" };
	struct query q;
	const char *path;
	char limit[24];
	struct http_result r;
	const json_t *op, *next;
	size_t i;
	int rc;

	snprintf(limit, sizeof limit, "%llu", (unsigned long long)a->limit.v);
	query_init(&q, "/v1/history");
	query_arg(&q, "kind", a->kind);
	query_arg(&q, "status", a->status);
	query_arg(&q, "since", a->since);
	query_arg(&q, "until", a->until);
	query_arg(&q, "limit", a->limit.set ? limit : NULL);
	query_arg(&q, "cursor", a->cursor);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	struct table *t = table_new(7, hdr);
	json_array_foreach(json_object_get(r.body, "operations"), i, op) {
		/* summary: what changed, built by the daemon from what clients sent (a cgroup path, a
		 * program name): the table escapes every cell before it reaches the terminal. */
		char id[32], started[48], kd[128], st[64], actor[96], sum[512], err[512];
		out_scalar(json_object_get(op, "id"), id, sizeof id);
		out_time_member(op, "started_ns", started, sizeof started);
		out_scalar(json_object_get(op, "kind"), kd, sizeof kd);
		out_scalar(json_object_get(op, "status"), st, sizeof st);
		actor_text(op, actor, sizeof actor);
		out_scalar(json_object_get(op, "summary"), sum, sizeof sum);
		out_scalar(json_object_get(op, "error"), err, sizeof err);
		table_row(t, id, started, kd, st, actor, sum, err);
	}
	table_print(t, stdout);
	next = json_object_get(r.body, "next_cursor");
	if (json_is_string(next)) {
		/* The cursor is bound to the filters: the line repeats them, ready to paste. */
		fputs("more: mempolicyctl history", stderr);
		out_more_opt("--kind", a->kind);
		out_more_opt("--status", a->status);
		out_more_opt("--since", a->since);
		out_more_opt("--until", a->until);
		out_more_opt("--limit", a->limit.set ? limit : NULL);
		out_more_opt("--cursor", json_string_value(next));   /* the daemon's text: quoted like the rest */
		fputc('\n', stderr);
	}
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_history_show(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const hdr[] = { "SEQ", "KNOB", "OLD", "NEW", "STATUS", "ERRNO" };
	struct query q;
	const char *path;
	char cell[512];
	struct http_result r;
	struct table *t;
	const json_t *op, *ch;
	uint64_t id;
	size_t i;
	int rc;

	if (a->npos != 1)
		return cli_usage_error(cmd, "which operation? give its ID");
	if ((rc = cli_id(cmd, "an operation ID", a->pos[0], &id)) != EXIT_OK)
		return rc;
	query_init(&q, "/v1/history");
	query_segment_u64(&q, id);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	op = r.body;
	t = table_new(2, NULL);
	static const char *const keys[] = { "id", "kind", "status", "source", "kernel_release", "errno", "error" };
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		out_scalar(json_object_get(op, keys[k]), cell, sizeof cell);
		table_row(t, keys[k], cell);
	}
	actor_text(op, cell, sizeof cell);
	table_row(t, "actor", cell);
	out_time_member(op, "started_ns", cell, sizeof cell);
	table_row(t, "started", cell);
	out_time_member(op, "finished_ns", cell, sizeof cell);
	table_row(t, "finished", cell);
	if (json_object_get(op, "request")) {
		out_scalar(json_object_get(op, "request"), cell, sizeof cell);
		table_row(t, "request", cell);
	}
	table_print(t, stdout);
	if (json_array_size(json_object_get(op, "knob_changes")) > 0) {
		t = table_new(6, hdr);
		json_array_foreach(json_object_get(op, "knob_changes"), i, ch) {
			char seq[32], k[128], o[256], n[256], st[64], en[32];
			out_scalar(json_object_get(ch, "seq"), seq, sizeof seq);
			out_scalar(json_object_get(ch, "knob"), k, sizeof k);
			out_scalar(json_object_get(ch, "old"), o, sizeof o);
			out_scalar(json_object_get(ch, "new"), n, sizeof n);
			out_scalar(json_object_get(ch, "status"), st, sizeof st);
			out_scalar(json_object_get(ch, "errno"), en, sizeof en);
			table_row(t, seq, k, o, n, st, en);
		}
		fputc('\n', stdout);
		table_print(t, stdout);
	}
	http_result_free(&r);
	return EXIT_OK;
}

/* `history export`: every operation matching the filters, in full (as `history show --json` has
 * it), one compact JSON object per line, newest first. Streamed page by page with the history
 * cursor, each operation fetched and written before the next page is asked for, so it works on a
 * history of any size in constant memory; run it before retention removes what you want kept. */
int cmd_history_export(struct cli *c, const struct command *cmd, struct args *a)
{
	char cursor[64] = "";
	int rc = EXIT_OK;

	do {
		struct query q;
		struct http_result r;
		const json_t *op, *next;
		const char *path;
		size_t i;

		query_init(&q, "/v1/history");
		query_arg(&q, "kind", a->kind);
		query_arg(&q, "status", a->status);
		query_arg(&q, "since", a->since);
		query_arg(&q, "until", a->until);
		query_arg(&q, "limit", "1000");
		query_arg(&q, "cursor", cursor[0] ? cursor : NULL);
		if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK ||
		    (rc = http_expect(c, "GET", path, NULL, &r)) != EXIT_OK)
			return rc;
		json_array_foreach(json_object_get(r.body, "operations"), i, op) {
			struct query one;
			struct http_result full;
			const char *one_path;
			query_init(&one, "/v1/history");
			query_segment_u64(&one, (uint64_t)json_integer_value(json_object_get(op, "id")));
			if ((rc = cli_path(cmd, &one, &one_path)) != EXIT_OK)
				break;
			if (http_call(c, "GET", one_path, NULL, &full) < 0) {
				out_unreachable(c, full.error);
				rc = EXIT_UNREACHABLE;
			} else if (full.status == 404) {
				;   /* removed meanwhile (retention ran): simply not exported */
			} else if (full.status / 100 != 2 || !full.body) {
				out_problem(c, &full);
				rc = EXIT_REFUSED;
			} else if (json_dumpf(full.body, stdout, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII) < 0 ||
				   putchar('\n') == EOF) {
				/* JSON_ENSURE_ASCII: the daemon's strings never reach a terminal raw (as --json) */
				rc = EXIT_REFUSED;
			}
			http_result_free(&full);
			if (rc != EXIT_OK)
				break;
		}
		next = json_object_get(r.body, "next_cursor");
		if (rc == EXIT_OK && json_is_string(next))
			snprintf(cursor, sizeof cursor, "%s", json_string_value(next));
		else
			cursor[0] = '\0';
		http_result_free(&r);
	} while (rc == EXIT_OK && cursor[0]);
	return rc;
}

static void cell_num(const json_t *v, char *buf, size_t len)
{
	if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, len, "%.6g", json_real_value(v));
	else
		snprintf(buf, len, "-");
}

/* The ids text: the daemon's most, 256 ids of up to 19 digits and a separator each. */
#define COMPARE_IDS_TEXT (256 * 20 + 1)

/* One argument, "12" or "12:13:14" (several runs of one column), appended to ids with a comma. */
static int compare_arg(const struct command *cmd, const char *arg, char *ids, size_t len, size_t *off)
{
	const char *p = arg;

	if (strchr(arg, '\n'))
		return cli_usage_error(cmd, "'%.32s' is not an operation id", arg);
	if (*off)
		*off += (size_t)snprintf(ids + *off, *off < len ? len - *off : 0, ",");
	for (;;) {
		char num[24];
		size_t n = strcspn(p, ":");
		uint64_t v;
		if (n == 0 || n >= sizeof num)
			return cli_usage_error(cmd, "'%.32s' is not an operation id (or ID:ID:... for several runs)", arg);
		memcpy(num, p, n);
		num[n] = '\0';
		if (parse_u64(num, &v) < 0 || v == 0 || v > INT64_MAX)
			return cli_usage_error(cmd, "'%.32s' is not an operation id (or ID:ID:... for several runs)", arg);
		*off += (size_t)snprintf(ids + *off, *off < len ? len - *off : 0, "%s%llu", p == arg ? "" : ":",
					 (unsigned long long)v);
		if (*off >= len)
			return cli_usage_error(cmd, "too many ids");
		if (!p[n])
			return EXIT_OK;
		p += n + 1;
	}
}

/* A column's header: "#12", or "#12:13:14", or "#12..(10 runs)" when that is long. */
static void column_head(const json_t *col, const json_t *run, char *buf, size_t len)
{
	const char *label = json_string_value(json_object_get(col, "label"));
	const json_t *ids = json_object_get(col, "ids");

	if (!col)
		snprintf(buf, len, "#%lld", (long long)json_integer_value(json_object_get(run, "id")));
	else if (label && strlen(label) <= 20)
		snprintf(buf, len, "#%s", label);
	else
		snprintf(buf, len, "#%lld..(%zu runs)", (long long)json_integer_value(json_array_get(ids, 0)),
			 json_array_size(ids));
}

/* A cell: the figure (a column's median; a run's 95th percentile with its own interval), its
 * change against the first in %, and with samples the 95 % interval of that change beside it,
 * starred when the difference is proven. */
static void compare_cell(const json_t *row, size_t k, char *buf, size_t len)
{
	const json_t *pct = json_array_get(json_object_get(row, "change_pct"), k);
	const json_t *ci = json_array_get(json_object_get(row, "ci95_pct"), k);
	const json_t *own = json_array_get(json_object_get(row, "value_ci95"), k);
	char num[80];

	cell_num(json_array_get(json_object_get(row, "values"), k), num, sizeof num);
	if (json_is_array(own)) {   /* one run's own figure with its interval (a p95 of its batches) */
		size_t n = strlen(num);
		snprintf(num + n, sizeof num - n, " [%.6g, %.6g]", json_number_value(json_array_get(own, 0)),
			 json_number_value(json_array_get(own, 1)));
	}
	if (!json_is_number(pct))
		snprintf(buf, len, "%s", num);
	else if (!json_is_array(ci))
		snprintf(buf, len, "%s (%+.2f%%)", num, json_number_value(pct));
	else
		snprintf(buf, len, "%s (%+.2f%% [%+.2f, %+.2f])%s", num, json_number_value(pct),
			 json_number_value(json_array_get(ci, 0)), json_number_value(json_array_get(ci, 1)),
			 json_is_true(json_array_get(json_object_get(row, "different"), k)) ? " *" : "");
}

static void compare_notes(const json_t *body)
{
	const json_t *cmp;
	size_t i;
	bool unreliable = false;

	if (!json_object_get(body, "columns"))
		return;
	json_array_foreach(json_object_get(body, "comparisons"), i, cmp)
		unreliable |= json_is_true(json_object_get(cmp, "unreliable"));
	fputs("\n[lo, hi]: the 95% interval of the difference of medians in % (Hodges-Lehmann); "
	      "*: a difference at 95% confidence (Mann-Whitney U p < 0.05)\n", stdout);
	if (unreliable)
		out_line(stdout, "unreliable: a column has fewer than 9 runs of a metric (9+ recommended)");
}

int cmd_history_compare(struct cli *c, const struct command *cmd, struct args *a)
{
	struct query q;
	struct http_result r;
	const char *path;
	char ids[COMPARE_IDS_TEXT] = "";
	const json_t *row, *run, *cols;
	size_t i, off = 0;
	int rc, ncols;

	if (a->npos < 2)
		return cli_usage_error(cmd, "give at least two operation ids");
	for (int k = 0; k < a->npos; k++)
		if ((rc = compare_arg(cmd, a->pos[k], ids, sizeof ids, &off)) != EXIT_OK)
			return rc;
	query_init(&q, "/v1/history/compare");
	query_arg(&q, "ids", ids);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	cols = json_object_get(r.body, "columns");
	ncols = cols ? (int)json_array_size(cols) : (int)json_array_size(json_object_get(r.body, "runs"));
	json_array_foreach(json_object_get(r.body, "runs"), i, run)
		out_line(stdout, "#%lld  %s  %s  kernel %s  thp %s", (long long)json_integer_value(json_object_get(run, "id")),
			 json_string_value(json_object_get(run, "kind")), json_string_value(json_object_get(run, "status")),
			 json_string_value(json_object_get(run, "kernel_release")) ? json_string_value(json_object_get(run, "kernel_release")) : "?",
			 json_string_value(json_object_get(json_object_get(run, "settings"), "thp.enabled"))
			 ? json_string_value(json_object_get(json_object_get(run, "settings"), "thp.enabled")) : "?");
	{
		const char **hdr = calloc((size_t)ncols + 1, sizeof *hdr);
		char (*cells)[160] = calloc((size_t)ncols + 1, sizeof *cells);
		const char **cp = calloc((size_t)ncols + 1, sizeof *cp);
		struct table *t;

		if (!hdr || !cells || !cp) {
			free(hdr);
			free(cells);
			free(cp);
			http_result_free(&r);
			out_error("out of memory");
			return EXIT_REFUSED;
		}
		hdr[0] = "METRIC";
		for (int k = 0; k < ncols; k++) {
			column_head(cols ? json_array_get(cols, (size_t)k) : NULL,
				    json_array_get(json_object_get(r.body, "runs"), (size_t)k), cells[k + 1], sizeof cells[0]);
			hdr[k + 1] = strdup(cells[k + 1]);
		}
		t = table_new(ncols + 1, hdr);
		json_array_foreach(json_object_get(r.body, "rows"), i, row) {
			snprintf(cells[0], sizeof cells[0], "%s", json_string_value(json_object_get(row, "metric")));
			for (int k = 0; k < ncols; k++)
				compare_cell(row, (size_t)k, cells[k + 1], sizeof cells[0]);
			for (int k = 0; k <= ncols; k++)
				cp[k] = cells[k];
			table_rowv(t, cp);
		}
		table_print(t, stdout);
		for (int k = 1; k <= ncols; k++)
			free((void *)hdr[k]);
		free(hdr);
		free(cells);
		free(cp);
	}
	compare_notes(r.body);
	http_result_free(&r);
	return EXIT_OK;
}
