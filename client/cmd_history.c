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

static void time_text(const json_t *op, const char *key, char *buf, size_t len)
{
	const json_t *v = json_object_get(op, key);
	if (json_is_integer(v))
		out_time_ns((long long)json_integer_value(v), buf, len);
	else
		snprintf(buf, len, "-");
}

/* " --opt value" for the "more:" line, the value in single quotes unless it is plainly safe. */
static void print_opt(const char *opt, const char *val)
{
	if (!val)
		return;
	if (val[0] && strspn(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:+-") == strlen(val)) {
		printf(" %s %s", opt, val);
		return;
	}
	printf(" %s '", opt);
	for (const char *p = val; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '\'')
			fputs("'\\''", stdout);
		else if (c < 0x20 || c == 0x7f)   /* never raw to the terminal: bash's $'\xNN' instead */
			printf("'$'\\x%02x''", c);
		else if (c == 0xc2 && (unsigned char)p[1] >= 0x80 && (unsigned char)p[1] < 0xa0)   /* C1 */
			printf("'$'\\xc2\\x%02x''", (unsigned char)*++p);
		else
			putchar(c);
	}
	putchar('\'');
}

int cmd_history_list(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const hdr[] = { "ID", "STARTED", "KIND", "STATUS", "ACTOR", "ERROR" };
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
	struct table *t = table_new(6, hdr);
	json_array_foreach(json_object_get(r.body, "operations"), i, op) {
		char id[32], started[48], kd[128], st[64], actor[96], err[512];
		out_scalar(json_object_get(op, "id"), id, sizeof id);
		time_text(op, "started_ns", started, sizeof started);
		out_scalar(json_object_get(op, "kind"), kd, sizeof kd);
		out_scalar(json_object_get(op, "status"), st, sizeof st);
		actor_text(op, actor, sizeof actor);
		out_scalar(json_object_get(op, "error"), err, sizeof err);
		table_row(t, id, started, kd, st, actor, err);
	}
	table_print(t, stdout);
	next = json_object_get(r.body, "next_cursor");
	if (json_is_string(next)) {
		/* The cursor is bound to the filters: the line repeats them, ready to paste. */
		printf("more: mempolicyctl history");
		print_opt("--kind", a->kind);
		print_opt("--status", a->status);
		print_opt("--since", a->since);
		print_opt("--until", a->until);
		print_opt("--limit", a->limit.set ? limit : NULL);
		print_opt("--cursor", json_string_value(next));   /* the daemon's text: quoted like the rest */
		putchar('\n');
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
	time_text(op, "started_ns", cell, sizeof cell);
	table_row(t, "started", cell);
	time_text(op, "finished_ns", cell, sizeof cell);
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
