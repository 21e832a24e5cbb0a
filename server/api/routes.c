/* The static route table; the first matching line wins. The router answers 404 (no pattern matches), 405 (the pattern matches
 * but not the method, with Allow), 413, 414, 415 and 403 (R_ADMIN) before any handler runs. */
#include "server/api/api.h"

const struct route api_routes[] = {
	{ "GET",    "/v1/health",                     api_health_get,        0 },
	/* Prometheus: outside /v1 because scrapers expect /metrics (api/metrics.c) */
	{ "GET",    "/metrics",                       api_metrics_get,       0 },
	/* topology */
	{ "GET",    "/v1/topology",                   api_topology_get,      0 },
	/* knobs */
	{ "GET",    "/v1/knobs",                      api_knobs_list,        0 },
	{ "PATCH",  "/v1/knobs",                      api_knobs_patch,       R_ADMIN | R_BODY },
	{ "GET",    "/v1/knobs/{}",                   api_knob_get,          0 },
	{ "PUT",    "/v1/knobs/{}",                   api_knob_put,          R_ADMIN | R_BODY },
	/* profiles: read-only here (apply comes with its own routes) */
	{ "GET",    "/v1/profiles",                   api_profiles_list,     0 },
	{ "GET",    "/v1/profiles/{}",                api_profile_get,       0 },
	{ "GET",    "/v1/profiles/{}/diff",           api_profile_diff,      0 },
	/* history */
	{ "GET",    "/v1/history",                    api_history_list,      0 },
	{ "GET",    "/v1/history/stats",              api_history_stats,     R_SLOW },  /* before {} */
	{ "GET",    "/v1/history/compare",            api_history_compare,   R_SLOW },  /* before {} */
	{ "GET",    "/v1/history/{}",                 api_history_get,       0 },
	/* hugepages */
	{ "GET",    "/v1/hugepages",                  api_hugepages_list,    0 },
	{ "GET",    "/v1/hugepages/{}",               api_hugepages_get,     0 },
	{ "PUT",    "/v1/hugepages/{}",               api_hugepages_put,     R_ADMIN | R_BODY },
	{ "GET",    "/v1/hugepages/{}/availability",  api_hugepages_avail,   0 },
	/* jobs */
	{ "GET",    "/v1/jobs",                       api_jobs_list,         0 },
	{ "GET",    "/v1/jobs/{}",                    api_job_get,           0 },
	{ "DELETE", "/v1/jobs/{}",                    api_job_cancel,        R_ADMIN },
	/* schedules */
	{ "GET",    "/v1/schedules",                  api_schedules_list,    0 },
	{ "POST",   "/v1/schedules",                  api_schedules_create,  R_ADMIN | R_BODY },
	{ "GET",    "/v1/schedules/{}",               api_schedule_get,      0 },
	{ "DELETE", "/v1/schedules/{}",               api_schedule_delete,   R_ADMIN },
	/* processes: a launch runs as the caller, so any local user may (ops/launch.c decides) */
	{ "POST",   "/v1/processes",                  api_processes_launch,  R_BODY },
	/* processes */
	{ "GET",    "/v1/processes/{}",               api_process_get,       0 },
	{ "GET",    "/v1/processes/{}/samples",       api_process_samples,   0 },
	/* the process's own user may migrate it (ops/pmigrate.c decides); collapse needs CAP_SYS_NICE */
	{ "POST",   "/v1/processes/{}/migrate",       api_process_migrate,   R_BODY },
	{ "POST",   "/v1/processes/{}/collapse",      api_process_collapse,  R_ADMIN | R_BODY },
	/* cgroups: the path is the rest of the URL (R_TAIL) */
	{ "GET",    "/v1/cgroups",                    api_cgroup_root_get,   0 },
	{ "PUT",    "/v1/cgroups",                    api_cgroup_root_put,   R_ADMIN | R_BODY },
	{ "GET",    "/v1/cgroups/{}",                 api_cgroup_get,        R_TAIL },
	{ "PUT",    "/v1/cgroups/{}",                 api_cgroup_put,        R_ADMIN | R_BODY | R_TAIL },
	/* probes */
	{ "GET",    "/v1/probes",                     api_probes_list,       0 },
	{ "POST",   "/v1/probes/{}",                  api_probe_start,       R_ADMIN | R_BODY },
	/* bearer tokens for the TLS listener: root on the Unix socket only (api/tokens.c decides) */
	{ "GET",    "/v1/tokens",                     api_tokens_list,       R_ADMIN },
	{ "POST",   "/v1/tokens",                     api_tokens_create,     R_ADMIN | R_BODY },
	{ "DELETE", "/v1/tokens/{}",                  api_token_revoke,      R_ADMIN },
};

const size_t api_nroutes = sizeof api_routes / sizeof api_routes[0];
