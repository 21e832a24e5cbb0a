/* `mempolicyctl history [filters]` and `history show ID`: the daemon's record of operations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/out.h"
#include "client/query.h"

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
