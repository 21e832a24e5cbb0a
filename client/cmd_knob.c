/* `mempolicyctl knob list|get|set`: the daemon's catalogue of kernel knobs (docs/reference/knobs.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/kv.h"
#include "client/out.h"
#include "client/query.h"

/* "always,madvise,never" for choice knobs, "0..511" for numbers. */
static void allowed_text(const json_t *k, char *buf, size_t len)
{
	const json_t *allowed = json_object_get(k, "allowed");
	char lo[32], hi[32];

	if (json_is_array(allowed)) {
		out_scalar(allowed, buf, len);
		return;
	}
	out_scalar(json_object_get(k, "min"), lo, sizeof lo);
	out_scalar(json_object_get(k, "max"), hi, sizeof hi);
	snprintf(buf, len, "%s..%s", lo, hi);
}

static void value_text(const json_t *k, char *buf, size_t len)
{
	if (!json_is_true(json_object_get(k, "available")))
		snprintf(buf, len, "(unavailable)");
	else
		out_scalar(json_object_get(k, "value"), buf, len);
}

int cmd_knob_list(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const hdr[] = { "NAME", "VALUE", "ALLOWED" };
	struct http_result r;
	struct table *t;
	json_t *k;
	size_t i;
	int rc;

	(void)cmd;
	(void)a;
	if ((rc = http_show(c, "GET", "/v1/knobs", NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	t = table_new(3, hdr);
	json_array_foreach(json_object_get(r.body, "knobs"), i, k) {
		char v[256], allowed[512];
		value_text(k, v, sizeof v);
		allowed_text(k, allowed, sizeof allowed);
		table_row(t, json_string_value(json_object_get(k, "name")), v, allowed);
	}
	table_print(t, stdout);
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_knob_get(struct cli *c, const struct command *cmd, struct args *a)
{
	struct http_result r;
	struct query q;
	const char *path;
	char v[256], allowed[512], s[1024];
	struct table *t;
	const json_t *k;
	int rc;

	if (a->npos != 1)
		return cli_usage_error(cmd, "which knob? give its NAME");
	if (!kv_name_ok(a->pos[0]))
		return cli_usage_error(cmd, "'%s' is not a knob name (letters, digits, '.', '_', '-')", a->pos[0]);
	query_init(&q, "/v1/knobs");
	query_segment(&q, a->pos[0]);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	if ((rc = http_show(c, "GET", path, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	k = r.body;
	t = table_new(2, NULL);
	value_text(k, v, sizeof v);
	allowed_text(k, allowed, sizeof allowed);
	table_row(t, "name", json_string_value(json_object_get(k, "name")));
	table_row(t, "value", v);
	table_row(t, "type", json_string_value(json_object_get(k, "type")));
	table_row(t, json_is_array(json_object_get(k, "allowed")) ? "allowed" : "range", allowed);
	table_row(t, "path", json_string_value(json_object_get(k, "path")));
	table_row(t, "available", json_is_true(json_object_get(k, "available")) ? "yes" : "no");
	table_row(t, "writable", json_is_true(json_object_get(k, "writable")) ? "yes" : "no");
	if (json_object_get(k, "error")) {
		out_scalar(json_object_get(k, "error"), s, sizeof s);
		table_row(t, "error", s);
	}
	table_row(t, "description", json_string_value(json_object_get(k, "description")));
	table_print(t, stdout);
	http_result_free(&r);
	return EXIT_OK;
}

static void print_changes(const json_t *res, bool dry)
{
	static const char *const hdr[] = { "KNOB", "OLD", "NEW", "STATUS" };
	static const char *const hdr_dry[] = { "KNOB", "OLD", "NEW", "WOULD CHANGE" };
	struct table *t = table_new(4, dry ? hdr_dry : hdr);
	const json_t *ch;
	size_t i;

	json_array_foreach(json_object_get(res, "changes"), i, ch) {
		char o[256], n[256], st[64];
		out_scalar(json_object_get(ch, "old"), o, sizeof o);
		out_scalar(json_object_get(ch, "new"), n, sizeof n);
		if (dry)
			snprintf(st, sizeof st, "%s", json_is_true(json_object_get(ch, "would_change")) ? "yes" : "no");
		else
			out_scalar(json_object_get(ch, "status"), st, sizeof st);
		table_row(t, json_string_value(json_object_get(ch, "knob")), o, n, st);
	}
	table_print(t, stdout);
	if (dry) {
		printf("dry run: nothing was changed\n");
	} else if (json_is_false(json_object_get(res, "changed")) && json_is_null(json_object_get(res, "operation_id"))) {
		printf("unchanged: every knob already has its value; nothing written or recorded (--force writes)\n");
	} else {
		char id[32], st[64];
		out_scalar(json_object_get(res, "operation_id"), id, sizeof id);
		out_scalar(json_object_get(res, "status"), st, sizeof st);
		out_line(stdout, "operation %s: %s", id, st);
	}
}

int cmd_knob_set(struct cli *c, const struct command *cmd, struct args *a)
{
	struct query q;
	const char *path;
	char err[256];
	struct http_result r;
	json_t *pairs = NULL, *body = NULL;   /* owned */
	int rc = EXIT_USAGE;

	if (a->npos == 0)
		return cli_usage_error(cmd, "give at least one NAME=VALUE");
	if (kv_parse_all(a->pos, a->npos, &pairs, err, sizeof err) < 0)
		return cli_usage_error(cmd, "%s", err);
	query_init(&q, "/v1/knobs");
	if (a->npos == 1) {
		query_segment(&q, json_object_iter_key(json_object_iter(pairs)));
		body = json_pack("{s:O}", "value", json_object_iter_value(json_object_iter(pairs)));
	} else {
		body = json_pack("{s:O}", "knobs", pairs);
	}
	query_arg(&q, "dry_run", a->dry_run ? "true" : NULL);
	query_arg(&q, "force", a->force ? "true" : NULL);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		goto out;
	if ((rc = http_expect(c, a->npos == 1 ? "PUT" : "PATCH", path, body, &r)) != EXIT_OK)
		goto out;
	if (c->json)
		out_json(r.body);
	else
		print_changes(r.body, a->dry_run);
	http_result_free(&r);
out:
	json_decref(body);
	json_decref(pairs);
	return rc;
}
