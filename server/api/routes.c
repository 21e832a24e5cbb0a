/* The static route table and the router beside it; the first matching line wins. The request
 * pipeline (api/http.c) asks route_find and answers 404 (no pattern matches), 405 (the pattern
 * matches but not the method, with Allow), 413, 414, 415 and 403 (R_ADMIN) before any handler
 * runs; 403 also for R_CALLER (what runs as the caller) when the caller has no uid, and 503
 * priv.lost for R_PRIV (the route acts through the privileged helper, which is lost). */
#include <stdio.h>
#include <string.h>

#include "server/api/api.h"

const struct route api_routes[] = {
	{ "GET",    "/v1/health",                     api_health_get,        0 },
	/* Prometheus: outside /v1 because scrapers expect /metrics (api/metrics.c) */
	{ "GET",    "/metrics",                       api_metrics_get,       0 },
	/* topology */
	{ "GET",    "/v1/topology",                   api_topology_get,      0 },
	/* knobs */
	{ "GET",    "/v1/knobs",                      api_knobs_list,        0 },
	{ "PATCH",  "/v1/knobs",                      api_knobs_patch,       R_ADMIN | R_BODY | R_PRIV },
	{ "GET",    "/v1/knobs/{}",                   api_knob_get,          0 },
	{ "PUT",    "/v1/knobs/{}",                   api_knob_put,          R_ADMIN | R_BODY | R_PRIV },
	/* profiles: the directory, read-only */
	{ "GET",    "/v1/profiles",                   api_profiles_list,     0 },
	{ "GET",    "/v1/profiles/{}",                api_profile_get,       0 },
	{ "GET",    "/v1/profiles/{}/diff",           api_profile_diff,      0 },
	/* the profile in force, and activating one (a profile.apply job) */
	{ "GET",    "/v1/profile",                    api_profile_active_get, 0 },
	{ "GET",    "/v1/profile/drift",              api_profile_drift,     0 },
	{ "POST",   "/v1/profile",                    api_profile_activate,  R_ADMIN | R_BODY | R_PRIV },
	/* history */
	{ "GET",    "/v1/history",                    api_history_list,      R_READ },
	{ "GET",    "/v1/history/stats",              api_history_stats,     R_SLOW },  /* before {} */
	{ "GET",    "/v1/history/compare",            api_history_compare,   R_SLOW },  /* before {} */
	{ "GET",    "/v1/history/{}",                 api_history_get,       0 },
	/* hugepages */
	{ "GET",    "/v1/hugepages",                  api_hugepages_list,    0 },
	{ "GET",    "/v1/hugepages/{}",               api_hugepages_get,     0 },
	{ "PUT",    "/v1/hugepages/{}",               api_hugepages_put,     R_ADMIN | R_BODY | R_PRIV },
	{ "GET",    "/v1/hugepages/{}/availability",  api_hugepages_avail,   0 },
	/* jobs */
	{ "GET",    "/v1/jobs",                       api_jobs_list,         0 },
	{ "GET",    "/v1/jobs/{}",                    api_job_get,           0 },
	{ "DELETE", "/v1/jobs/{}",                    api_job_cancel,        R_ADMIN },
	/* schedules */
	{ "GET",    "/v1/schedules",                  api_schedules_list,    R_READ },
	{ "POST",   "/v1/schedules",                  api_schedules_create,  R_ADMIN | R_BODY },
	{ "GET",    "/v1/schedules/{}",               api_schedule_get,      0 },
	{ "DELETE", "/v1/schedules/{}",               api_schedule_delete,   R_ADMIN },
	/* processes: a launch runs as the caller, so any local user may (ops/launch.c decides) */
	{ "POST",   "/v1/processes",                  api_processes_launch,  R_CALLER | R_BODY | R_PRIV },
	/* ... or checks and records a launch whose process is the caller itself (numactl's way) */
	{ "POST",   "/v1/processes/self",             api_processes_self,    R_CALLER | R_BODY },
	/* processes */
	{ "GET",    "/v1/processes/{}",               api_process_get,       R_READ },
	{ "GET",    "/v1/processes/{}/samples",       api_process_samples,   R_READ },
	/* the process's own user may migrate it (ops/pmigrate.c decides); collapse needs CAP_SYS_NICE */
	{ "POST",   "/v1/processes/{}/migrate",       api_process_migrate,   R_CALLER | R_BODY | R_PRIV },
	{ "POST",   "/v1/processes/{}/collapse",      api_process_collapse,  R_ADMIN | R_CALLER | R_BODY | R_PRIV },
	/* cgroups: the path is the rest of the URL (R_TAIL) */
	{ "GET",    "/v1/cgroups",                    api_cgroup_root_get,   0 },
	{ "PUT",    "/v1/cgroups",                    api_cgroup_root_put,   R_ADMIN | R_BODY | R_PRIV },
	{ "GET",    "/v1/cgroups/{}",                 api_cgroup_get,        R_TAIL },
	{ "PUT",    "/v1/cgroups/{}",                 api_cgroup_put,        R_ADMIN | R_BODY | R_TAIL | R_PRIV },
	/* probes */
	{ "GET",    "/v1/probes",                     api_probes_list,       0 },
	{ "POST",   "/v1/probes/{}",                  api_probe_start,       R_ADMIN | R_BODY | R_PRIV },
	/* experiments (jobs) and the advice read from them */
	{ "GET",    "/v1/experiments",                api_experiments_list,  0 },
	{ "POST",   "/v1/experiments",                api_experiments_start, R_ADMIN | R_BODY | R_PRIV },
	{ "GET",    "/v1/experiments/{}",             api_experiment_get,    0 },
	{ "DELETE", "/v1/experiments/{}",             api_experiment_cancel, R_ADMIN },
	{ "GET",    "/v1/experiments/{}/samples",     api_experiment_samples, R_READ },
	{ "GET",    "/v1/advice",                     api_advice_get,        0 },
	/* bearer tokens for the TLS listener: root on the Unix socket only (api/tokens.c decides) */
	{ "GET",    "/v1/tokens",                     api_tokens_list,       R_ADMIN },
	{ "POST",   "/v1/tokens",                     api_tokens_create,     R_ADMIN | R_BODY },
	{ "DELETE", "/v1/tokens/{}",                  api_token_revoke,      R_ADMIN },
};

const size_t api_nroutes = sizeof api_routes / sizeof api_routes[0];

/* Does url match the route's pattern? 1 yes, 0 no; captures {} segments into params when given
 * (owned by the caller), -1 when out of memory for one (those captured before are left for the
 * caller to free). With R_TAIL the pattern's last {} takes the rest of the path, '/' included (a
 * cgroup path). */
static int match(const struct route *r, const char *url, char **params)
{
	int np = 0;
	const char *p = r->pattern, *u = url;

	while (*p && *u) {
		if (p[0] == '{' && p[1] == '}') {
			const char *end = (r->flags & R_TAIL) && !p[2] ? NULL : strchr(u, '/');
			size_t n = end ? (size_t)(end - u) : strlen(u);
			if (n == 0 || np == API_MAX_PARAMS)
				return 0;
			if (params && !(params[np] = strndup(u, n)))
				return -1;
			np++;
			u += n;
			p += 2;
		} else if (*p++ != *u++) {
			return 0;
		}
	}
	return !*p && !*u;
}

const struct route *route_find(const char *method, const char *url, char *allow, size_t allow_len, bool *path_known)
{
	size_t off = 0;

	*path_known = false;
	allow[0] = '\0';
	for (size_t i = 0; i < api_nroutes; i++) {
		const struct route *r = &api_routes[i];
		if (match(r, url, NULL) != 1)
			continue;
		*path_known = true;
		/* RFC 9110 9.3.2: every GET route answers HEAD too, with GET's status and headers;
		 * libmicrohttpd leaves the body out of an answer to HEAD (Content-Length stays). */
		bool is_get = !strcmp(r->method, "GET");
		/* The first match wins, so a literal ("/v1/history/stats") listed before a pattern
		 * ("/v1/history/{}") takes precedence. Allow is only a 405's: the search stops here,
		 * rather than matching every later pattern and formatting the list for every request
		 * (a tenth of the user-space CPU of a knob GET, bench/README.md §1b). */
		if (!strcmp(r->method, method) || (is_get && !strcmp(method, "HEAD"))) {
			allow[0] = '\0';
			return r;
		}
		if (!strstr(allow, r->method)) {
			int w = snprintf(allow + off, allow_len - off, "%s%s%s", off ? ", " : "", r->method,
					 is_get ? ", HEAD" : "");
			if (w > 0 && (size_t)w < allow_len - off)
				off += (size_t)w;
		}
	}
	return NULL;
}

int route_params(const struct route *r, const char *url, char **params)
{
	return match(r, url, params) < 0 ? -1 : 0;
}
