/* GET /v1/health: is the daemon up, on which kernel, with which capabilities; "degraded" once
 * the privileged helper is lost (changes are refused, the daemon is about to exit); the profile in
 * force with its state. */
#include "server/api/api.h"
#include "common/parse.h"
#include "server/ops/helper_state.h"
#include "server/ops/profile_view.h"
#include "server/store/db.h"

int api_health_get(struct req *rq, mp_err *e)
{
	static const char *const no_query[] = { NULL };
	const struct caps *c = &rq->app->caps;
	json_t *mthp, *hugetlb, *profile;   /* owned until json_pack's "o" takes them */
	char sz[32];
	int schema;

	if (req_query_only(rq, no_query, e) < 0)
		return -1;
	mthp = json_array();
	hugetlb = json_array();
	for (int i = 0; i < c->n_mthp_sizes; i++) {
		format_size_kb(c->mthp_sizes_kb[i], sz, sizeof sz);
		json_array_append_new(mthp, json_string(sz));
	}
	for (int i = 0; i < c->n_hugetlb_sizes; i++) {
		format_size_kb(c->hugetlb_sizes_kb[i], sz, sizeof sz);
		json_array_append_new(hugetlb, json_string(sz));
	}
	schema = store_version(rq->app->store);
	/* The profile's state is the host's, not the daemon's: a degraded profile leaves status "ok". */
	if (!(profile = profile_view_summary(rq->app)))
		profile = json_null();
	return req_reply(rq, 200, json_pack("{s:s, s:s, s:s, s:s, s:i, s:o, s:{s:b, s:o, s:o, s:b, s:b, s:b, s:i}}",
		"status", ops_helper_lost() ? "degraded" : "ok",
		"privileged_helper", ops_helper_state(),
		"version", MPD_VERSION,
		"kernel_release", c->kernel_release,
		"schema_version", schema,
		"profile", profile,
		"capabilities",
		"thp", c->thp,
		"mthp_sizes", mthp,
		"hugetlb_sizes", hugetlb,
		"weighted_interleave", c->weighted_interleave,
		"numa_balancing", c->numa_balancing,
		"madv_collapse", c->madv_collapse,
		"cgroup_version", c->cgroup_version));
}
