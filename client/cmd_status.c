/* `mempolicyctl status`: is the daemon up, on what, in which THP mode, with how many nodes. */
#include <stdio.h>
#include <string.h>

#include "client/cli.h"
#include "client/http.h"
#include "client/out.h"

/* thp.enabled's value, or NULL when the knob is unknown or unavailable on this daemon/kernel:
 * status still reports what it can. Exit code for unreachable/transport trouble in *rc. */
static json_t *thp_mode(struct cli *c, int *rc)
{
	struct http_result r;
	json_t *v = NULL;

	*rc = EXIT_OK;
	if (http_call(c, "GET", "/v1/knobs/thp.enabled", NULL, &r) < 0) {
		out_unreachable(c, r.error);
		*rc = EXIT_UNREACHABLE;
	} else if (r.status == 200 && json_is_object(r.body)) {
		v = json_incref(json_object_get(r.body, "value"));
	}
	http_result_free(&r);
	return v ? v : json_null();
}

int cmd_status(struct cli *c, const struct command *cmd, struct args *args)
{
	struct http_result health, topo;
	json_t *thp, *caps;
	int rc;

	(void)cmd;
	(void)args;
	/* --json: the daemon's answer to GET /v1/health as it came, as every other command's --json
	 * is one answer; the table adds the topology's node count and the THP mode. */
	if ((rc = http_show(c, "GET", "/v1/health", NULL, &health)) != EXIT_OK || !health.body)
		return rc;
	if ((rc = http_expect(c, "GET", "/v1/topology", NULL, &topo)) != EXIT_OK) {
		http_result_free(&health);
		return rc;
	}
	thp = thp_mode(c, &rc);
	if (rc != EXIT_OK)
		goto out;
	{
		struct table *t = table_new(2, NULL);
		char a[256], b[256], line[600], cgroup[24];
		json_int_t cg;
		out_scalar(json_object_get(health.body, "status"), a, sizeof a);
		out_scalar(json_object_get(health.body, "version"), b, sizeof b);
		snprintf(line, sizeof line, "%s (mempolicyd %s)", a, b);
		table_row(t, "daemon", line);
		table_row(t, c->url ? "url" : "socket", c->url ? c->url : c->socket);
		out_scalar(json_object_get(health.body, "kernel_release"), a, sizeof a);
		table_row(t, "kernel", a);
		out_scalar(thp, a, sizeof a);
		table_row(t, "thp.enabled", json_is_null(thp) ? "unavailable" : a);
		out_scalar(json_object_get(topo.body, "node_count"), a, sizeof a);
		out_scalar(json_object_get(topo.body, "online"), b, sizeof b);
		snprintf(line, sizeof line, "%s (online %s)", a, b);
		table_row(t, "nodes", line);
		caps = json_object_get(health.body, "capabilities");
		out_scalar(json_object_get(caps, "hugetlb_sizes"), a, sizeof a);
		table_row(t, "hugetlb sizes", a[0] ? a : "-");
		out_scalar(json_object_get(caps, "mthp_sizes"), a, sizeof a);
		table_row(t, "mTHP sizes", a[0] ? a : "-");
		/* cgroup_version 0: no cgroup hierarchy was found, not a "v0" */
		cg = json_integer_value(json_object_get(caps, "cgroup_version"));
		snprintf(cgroup, sizeof cgroup, cg > 0 ? "v%lld" : "none", (long long)cg);
		snprintf(line, sizeof line, "weighted_interleave=%s numa_balancing=%s madv_collapse=%s cgroup=%s",
			 json_is_true(json_object_get(caps, "weighted_interleave")) ? "yes" : "no",
			 json_is_true(json_object_get(caps, "numa_balancing")) ? "yes" : "no",
			 json_is_true(json_object_get(caps, "madv_collapse")) ? "yes" : "no", cgroup);
		table_row(t, "features", line);
		table_print(t, stdout);
	}
out:
	json_decref(thp);
	http_result_free(&health);
	http_result_free(&topo);
	return rc;
}
