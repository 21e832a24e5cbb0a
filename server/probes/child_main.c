/* The probe child: `mempolicyd --probe-child KIND PARAMS-JSON`, exec'd by the daemon (a fresh
 * process image, so a workload may start threads and allocate freely, which a fork of the threaded
 * daemon may not) with its policy and CPU binding already set. Runs one pass of one workload and
 * writes one JSON document on stdout, the pipe the daemon reads; stderr is /dev/null. */
#include "server/probes/probe.h"

#include <stdio.h>
#include <string.h>

int probe_child_main(int argc, char **argv)
{
	const struct probe_kind *k = argc == 4 ? probe_find(argv[2]) : NULL;
	json_t *params = NULL, *result = NULL, *out;
	json_error_t je;
	char err[512] = "";
	int rc = 1;

	if (!k)
		snprintf(err, sizeof err, "usage: --probe-child KIND PARAMS-JSON with a known KIND");
	else if (!(params = json_loads(argv[3], JSON_REJECT_DUPLICATES, &je)) || !json_is_object(params))
		snprintf(err, sizeof err, "the parameters are not a JSON object");
	else if (k->workload(params, &result, err, sizeof err) == 0 && json_is_object(result))
		rc = 0;
	else if (!err[0])
		snprintf(err, sizeof err, "the workload returned no result");
	out = rc == 0 ? json_pack("{s:b, s:O}", "ok", 1, "result", result) : json_pack("{s:b, s:s}", "ok", 0, "error", err);
	if (!out || json_dumpf(out, stdout, JSON_COMPACT) < 0 || fflush(stdout) != 0)
		rc = 1;
	json_decref(out);
	json_decref(result);
	json_decref(params);
	return rc;
}
