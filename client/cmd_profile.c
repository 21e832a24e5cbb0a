/* `mempolicyctl profile list|show|diff|apply|verify`: the daemon's profiles directory as it reads
 * it (docs/reference/profiles.md), activating one (apply: a profile.apply job, waited for as every
 * job command does) and the profile in force against the kernel (verify). Every cell that quotes
 * the daemon (or a file) goes through the table's escaping. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/jobview.h"
#include "client/out.h"
#include "client/query.h"

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "-";
}

/* "db.conf:7:1" */
static void source_text(const json_t *k, char *buf, size_t len)
{
	const json_t *s = json_object_get(k, "source");
	snprintf(buf, len, "%s:%lld:%lld", str(s, "file"), (long long)json_integer_value(json_object_get(s, "line")),
		 (long long)json_integer_value(json_object_get(s, "column")));
}

/* ">= 4096", "= defer+madvise|defer" */
static void wanted_text(const json_t *k, char *buf, size_t len)
{
	const json_t *v;
	size_t i, off;

	off = (size_t)snprintf(buf, len, "%s ", str(k, "comparator"));
	json_array_foreach(json_object_get(k, "values"), i, v)
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "|" : "", json_string_value(v));
}

/* A profile's name as the daemon takes it; EXIT_OK or the usage error. */
static int name_arg(const struct command *cmd, const struct args *a)
{
	if (a->npos != 1)
		return cli_usage_error(cmd, "which profile? give its NAME (NAME.conf in the profiles directory)");
	if (!a->pos[0][0] || a->pos[0][0] == '.' || strspn(a->pos[0], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
							     "0123456789._-") != strlen(a->pos[0]))
		return cli_usage_error(cmd, "'%s' is not a profile name (letters, digits, '.', '_', '-'; no leading '.')",
				       a->pos[0]);
	return EXIT_OK;
}

/* GET /v1/profiles/NAME[/tail] into r; EXIT_OK with r->body NULL when --json printed it. */
static int get_one(struct cli *c, const struct command *cmd, struct args *a, const char *tail, struct http_result *r)
{
	struct query q;
	const char *path;
	int rc;

	if ((rc = name_arg(cmd, a)) != EXIT_OK)
		return rc;
	query_init(&q, "/v1/profiles");
	query_segment(&q, a->pos[0]);
	if (tail)
		query_segment(&q, tail);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK)
		return rc;
	return http_show(c, "GET", path, NULL, r);
}

static void print_head(const json_t *p)
{
	const json_t *v;
	char files[512] = "", reasons[256] = "";
	size_t i, off = 0;

	json_array_foreach(json_object_get(p, "files"), i, v)
		if (off < sizeof files)
			off += (size_t)snprintf(files + off, sizeof files - off, "%s%s", i ? " <- " : "", json_string_value(v));
	off = 0;
	json_array_foreach(json_object_get(p, "reasons"), i, v)
		if (off < sizeof reasons)
			off += (size_t)snprintf(reasons + off, sizeof reasons - off, "%s%s", i ? ", " : "",
						json_string_value(v));
	out_line(stdout, "profile %s (%s)%s", str(p, "name"), str(p, "file"),
		 json_is_true(json_object_get(p, "active")) ? ", active" : "");
	out_line(stdout, "files: %s; on-drift: %s; state: %s%s%s%s", files, str(p, "on_drift"), str(p, "state"),
		 reasons[0] ? " (" : "", reasons, reasons[0] ? ")" : "");
}

int cmd_profile_list(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const hdr[] = { "NAME", "STATE", "KEYS", "ACTIVE", "ERROR" };
	struct http_result r;
	struct table *t;
	json_t *p;
	size_t i;
	int rc;

	(void)cmd;
	(void)a;
	if ((rc = http_show(c, "GET", "/v1/profiles", NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	t = table_new(5, hdr);
	json_array_foreach(json_object_get(r.body, "profiles"), i, p) {
		char keys[32] = "-";
		if (json_is_integer(json_object_get(p, "keys")))
			out_scalar(json_object_get(p, "keys"), keys, sizeof keys);
		table_row(t, str(p, "name"), str(p, "state"), keys, json_is_true(json_object_get(p, "active")) ? "yes" : "",
			  json_object_get(p, "error") ? str(json_object_get(p, "error"), "detail") : "");
	}
	table_print(t, stdout);
	if (!json_array_size(json_object_get(r.body, "profiles")))
		out_line(stdout, "no profiles in %s", str(r.body, "dir"));
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_profile_show(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const hdr[] = { "KEY", "WANTED", "ON-DRIFT", "REQUIRED", "SOURCE", "KERNEL" };
	struct http_result r;
	struct table *t;
	json_t *k;
	size_t i;
	int rc;

	if ((rc = get_one(c, cmd, a, NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	print_head(r.body);
	t = table_new(6, hdr);
	json_array_foreach(json_object_get(r.body, "keys"), i, k) {
		char wanted[600], src[128];
		wanted_text(k, wanted, sizeof wanted);
		source_text(k, src, sizeof src);
		table_row(t, str(k, "key"), wanted, str(k, "on_drift"), json_is_true(json_object_get(k, "required")) ? "yes" : "",
			  src, json_is_true(json_object_get(k, "supported")) ? "has it" : str(k, "reason"));
	}
	table_print(t, stdout);
	http_result_free(&r);
	return EXIT_OK;
}

/* A dry run's answer (GET .../diff, POST /v1/profile with dry_run). */
static void print_diff(const json_t *body)
{
	static const char *const hdr[] = { "KEY", "NOW", "WANTED", "VERDICT", "ACTION", "SOURCE" };
	const json_t *s;
	struct table *t;
	json_t *k;
	size_t i;

	print_head(body);
	t = table_new(6, hdr);
	json_array_foreach(json_object_get(body, "keys"), i, k) {
		char wanted[600], src[128], now[1100];
		wanted_text(k, wanted, sizeof wanted);
		source_text(k, src, sizeof src);
		snprintf(now, sizeof now, "%s", str(k, "now"));
		table_row(t, str(k, "key"), now, wanted, str(k, "verdict"), str(k, "action"), src);
	}
	table_print(t, stdout);
	json_array_foreach(json_object_get(body, "keys"), i, k)
		if (json_object_get(k, "reason"))
			out_line(stdout, "%s: unsupported: %s", str(k, "key"), str(k, "reason"));
	s = json_object_get(body, "summary");
	out_line(stdout, "dry run: nothing was changed; %lld in sync, %lld differ, %lld unsupported",
		 (long long)json_integer_value(json_object_get(s, "in_sync")),
		 (long long)json_integer_value(json_object_get(s, "differs")),
		 (long long)json_integer_value(json_object_get(s, "unsupported")));
}

int cmd_profile_diff(struct cli *c, const struct command *cmd, struct args *a)
{
	struct http_result r;
	int rc;

	if ((rc = get_one(c, cmd, a, "diff", &r)) != EXIT_OK || !r.body)
		return rc;
	print_diff(r.body);
	http_result_free(&r);
	return EXIT_OK;
}

int cmd_profile_apply(struct cli *c, const struct command *cmd, struct args *a)
{
	struct http_result r;
	json_t *body;
	int64_t ms;
	int rc;

	if ((rc = name_arg(cmd, a)) != EXIT_OK)
		return rc;
	body = json_pack("{s:s}", "name", a->pos[0]);
	if (a->dry_run)
		json_object_set_new(body, "dry_run", json_true());
	if (a->deadline) {
		if (parse_deadline_ms(a->deadline, &ms) < 0) {
			json_decref(body);
			return cli_usage_error(cmd, "--deadline wants a duration like 500ms, 30s or 2m, not '%s'", a->deadline);
		}
		json_object_set_new(body, "deadline_ms", json_integer(ms));
	}
	rc = http_expect(c, "POST", "/v1/profile", body, &r);
	json_decref(body);
	if (rc != EXIT_OK)
		return rc;
	if (a->dry_run || a->no_wait) {
		if (c->json)
			out_json(r.body);
		else if (a->dry_run)
			print_diff(r.body);
		else
			/* "queued", or the status of a job that ended before the answer (knobs only). */
			out_line(stdout, "job %lld %s: mempolicyctl job show %lld --wait",
				 (long long)json_integer_value(json_object_get(r.body, "id")), str(r.body, "status"),
				 (long long)json_integer_value(json_object_get(r.body, "id")));
		http_result_free(&r);
		return EXIT_OK;
	}
	/* A knob-only profile is answered applied (the job ended): nothing to wait for. */
	rc = jobview_answer(c, r.body);
	http_result_free(&r);
	return rc;
}

static bool out_of_sync(const json_t *k)
{
	const char *v = str(k, "verdict");

	return !strcmp(v, "drift") || !strcmp(v, "differs");
}

int cmd_profile_verify(struct cli *c, const struct command *cmd, struct args *a)
{
	static const char *const hdr[] = { "KEY", "EXPECTED", "ACTUAL", "VERDICT", "SOURCE" };
	struct http_result r;
	struct table *t;
	const json_t *k, *reasons;
	char why[256] = "";
	size_t i, off = 0, bad = 0, n;
	bool ok;
	int rc;

	(void)cmd;
	if ((rc = http_expect(c, "GET", "/v1/profile", NULL, &r)) != EXIT_OK)
		return rc;
	json_array_foreach(json_object_get(r.body, "keys"), i, k)
		bad += out_of_sync(k);
	n = json_array_size(json_object_get(r.body, "keys"));
	reasons = json_object_get(r.body, "reasons");
	ok = !strcmp(str(r.body, "state"), "applied") && !bad;
	if (c->json) {
		out_json(r.body);
		http_result_free(&r);
		return a->exit_code && !ok ? EXIT_REFUSED : EXIT_OK;
	}
	if (!json_is_string(json_object_get(r.body, "name")) || !strcmp(str(r.body, "state"), "none")) {
		out_line(stdout, "no profile is applied%s%s", json_is_string(json_object_get(r.body, "name")) ? ": " : "",
			 json_is_string(json_object_get(r.body, "name")) ? str(r.body, "name") : "");
	} else {
		json_array_foreach(reasons, i, k)
			if (off < sizeof why)
				off += (size_t)snprintf(why + off, sizeof why - off, "%s%s", i ? ", " : "", json_string_value(k));
		t = table_new(5, hdr);
		json_array_foreach(json_object_get(r.body, "keys"), i, k) {
			char src[128];
			source_text(k, src, sizeof src);
			table_row(t, str(k, "key"), str(k, "expected"), str(k, "actual"), str(k, "verdict"), src);
		}
		table_print(t, stdout);
		/* The keys out of sync once more, one sentence each: what a log or a mail keeps. */
		json_array_foreach(json_object_get(r.body, "keys"), i, k)
			if (out_of_sync(k))
				out_line(stdout, "%s: expected %s, actual %s (%s)%s%s", str(k, "key"), str(k, "expected"),
					 str(k, "actual"), str(k, "verdict"), str(k, "why")[0] && strcmp(str(k, "why"), "-") ? ": " : "",
					 strcmp(str(k, "why"), "-") ? str(k, "why") : "");
		out_line(stdout, "profile %s: %s%s%s%s; %zu of %zu keys out of sync", str(r.body, "name"), str(r.body, "state"),
			 why[0] ? " (" : "", why, why[0] ? ")" : "", bad, n);
	}
	http_result_free(&r);
	return a->exit_code && !ok ? EXIT_REFUSED : EXIT_OK;
}
