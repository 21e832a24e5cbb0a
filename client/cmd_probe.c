/* `mempolicyctl probe list` and `probe run KIND [NAME=VALUE...]`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/jobview.h"
#include "client/kv.h"
#include "client/out.h"
#include "client/query.h"
#include "common/parse.h"

int cmd_probe_list(struct cli *c, const struct command *cmd, struct args *a)
{
	struct http_result r;
	struct table *t;
	const json_t *p;
	size_t i;
	int rc;

	(void)cmd;
	(void)a;
	if ((rc = http_show(c, "GET", "/v1/probes", NULL, &r)) != EXIT_OK || !r.body)
		return rc;
	t = table_new(2, (const char *const[]){ "KIND", "JOB" });
	json_array_foreach(json_object_get(r.body, "probes"), i, p)
		table_row(t, json_string_value(json_object_get(p, "kind")), json_string_value(json_object_get(p, "job")));
	table_print(t, stdout);
	http_result_free(&r);
	return EXIT_OK;
}

/* The value for a kind's own parameter of the type GET /v1/probes declares (types: its "params",
 * {name: "boolean" | "integer" | "size" | "string" | "list" | "object"}): "true"/"false" are the
 * booleans for a boolean one, text stays text for a string one. v is kv_value's guess (digits an
 * integer, else a string), kept for the rest. Returns a new reference. */
static json_t *typed(const json_t *types, const char *name, json_t *v)
{
	const char *type = json_string_value(json_object_get(types, name)), *s = json_string_value(v);

	if (!type)
		return json_incref(v);
	if (!strcmp(type, "boolean") && s && (!strcmp(s, "true") || !strcmp(s, "false")))
		return json_boolean(!strcmp(s, "true"));
	if (!strcmp(type, "string") && json_is_integer(v))
		return json_sprintf("%lld", (long long)json_integer_value(v));
	return json_incref(v);
}

/* NAME=VALUE pairs into the body: "policy.mode=bind" nests one level, a VALUE that starts with
 * '[' or '{' is JSON ("thp=[\"always\",\"never\"]"), a kind's own parameter takes the type the
 * daemon declares for it (typed()), other digits are integers (but cpus, cpunodes and policy.nodes
 * are lists, always text), the rest strings. */
int probe_params_body(char **pos, int npos, const json_t *types, json_t **body, char *err, size_t errlen)
{
	json_t *pairs = NULL, *v;
	const char *k;

	*body = NULL;
	if (kv_parse_all(pos, npos, &pairs, err, errlen) < 0)
		return -1;
	*body = json_object();
	json_object_foreach(pairs, k, v) {
		const char *dot = strchr(k, '.'), *s = json_string_value(v), *name = k;
		json_t *val = dot ? json_incref(v) : typed(types, k, v), *into = *body;
		char outer[KV_NAME_MAX];

		/* CPU and node lists are text even when they are one number ("cpus=0"). */
		if (json_is_integer(v) && (!strcmp(k, "cpus") || !strcmp(k, "cpunodes") || !strcmp(k, "policy.nodes"))) {
			json_decref(val);
			val = json_sprintf("%lld", (long long)json_integer_value(v));
		}
		if (s && (s[0] == '[' || s[0] == '{')) {
			json_decref(val);
			if (!(val = json_loads(s, JSON_REJECT_DUPLICATES, NULL))) {
				snprintf(err, errlen, "%.64s: the value is not valid JSON", k);
				goto fail;
			}
		}
		if (dot) {
			snprintf(outer, sizeof outer, "%.*s", (int)(dot - k), k);
			if (!json_is_object(into = json_object_get(*body, outer))) {
				if (into) {
					json_decref(val);
					snprintf(err, errlen, "%.64s is given both as a value and as an object", outer);
					goto fail;
				}
				json_object_set_new(*body, outer, into = json_object());
			}
			name = dot + 1;   /* not k: json_object_foreach walks on from it */
		}
		json_object_set_new(into, name, val);
	}
	json_decref(pairs);
	return 0;
fail:
	json_decref(pairs);
	json_decref(*body);
	*body = NULL;
	return -1;
}

const json_t *probe_param_types(const json_t *probes, const char *kind)
{
	const json_t *k;
	size_t i;

	json_array_foreach(json_object_get(probes, "probes"), i, k)
		if (!strcmp(json_string_value(json_object_get(k, "kind")) ? json_string_value(json_object_get(k, "kind")) : "",
			    kind))
			return json_object_get(k, "params");
	return NULL;
}

int cmd_probe_run(struct cli *c, const struct command *cmd, struct args *a)
{
	struct query q;
	struct http_result r, kinds;
	const char *path;
	const json_t *types = NULL;   /* borrowed from kinds.body, used before it is freed */
	json_t *body;
	char err[256];
	long long id;
	int rc;

	if (a->npos < 1)
		return cli_usage_error(cmd, "give the probe KIND (mempolicyctl probe list)");
	/* A malformed NAME=VALUE is a usage error before anything is sent. */
	if (probe_params_body(a->pos + 1, a->npos - 1, NULL, &body, err, sizeof err) < 0)
		return cli_usage_error(cmd, "%s", err);
	json_decref(body);
	/* The kind's parameter types, from the daemon that will judge them (on the same connection as
	 * the start): the CLI keeps no copy of the probe table. */
	if ((rc = http_expect(c, "GET", "/v1/probes", NULL, &kinds)) != EXIT_OK)
		return rc;
	types = probe_param_types(kinds.body, a->pos[0]);
	rc = probe_params_body(a->pos + 1, a->npos - 1, types, &body, err, sizeof err);
	http_result_free(&kinds);
	if (rc < 0)
		return cli_usage_error(cmd, "%s", err);
	query_init(&q, "/v1/probes");
	query_segment(&q, a->pos[0]);
	if ((rc = cli_path(cmd, &q, &path)) != EXIT_OK || (rc = http_expect(c, "POST", path, body, &r)) != EXIT_OK) {
		json_decref(body);
		return rc;
	}
	json_decref(body);
	id = (long long)json_integer_value(json_object_get(r.body, "id"));
	if (a->no_wait)
		return jobview_queued(c, &r, "job");
	http_result_free(&r);
	return jobview_wait(c, id);
}
