#include "common/stats_json.h"

#include <math.h>

json_t *stats_json_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *pair(const double v[2], bool ok)
{
	return ok && isfinite(v[0]) && isfinite(v[1]) ? json_pack("[f, f]", v[0], v[1]) : json_null();
}

json_t *stats_cmp_json(const char *metric, const char *baseline, const char *arm, const struct stats_cmp *c)
{
	return json_pack("{s:s, s:s, s:s, s:[I, I], s:o, s:o, s:o, s:o, s:f, s:b, s:b, s:b, s:s}",
			 "metric", metric, "baseline", baseline, "arm", arm,
			 "n", (json_int_t)c->base.n, (json_int_t)c->arm.n,
			 "median_diff_pct", stats_json_num(c->median_diff_pct),
			 "ci95_pct", pair(c->ci95_pct, c->ci_ok),
			 "mean_diff_pct", stats_json_num(c->mean_diff_pct),
			 "welch_ci95_pct", pair(c->welch_ci95_pct, c->welch_ok),
			 "p_value", c->p_value, "p_exact", c->p_exact, "different", c->different,
			 "unreliable", c->unreliable, "verdict", c->verdict);
}
