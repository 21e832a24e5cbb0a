/* Reading experiments back: the jobs of kind "experiment.run", with their comparisons computed again
 * from the stored samples. */
#include "server/ops/experiments.h"

#include <string.h>

#include "server/app.h"
#include "server/jobs/jobs.h"
#include "server/ops/exp.h"
#include "server/store/experiments.h"

json_t *experiment_job_get(const struct app *app, int64_t id, mp_err *e)
{
	json_t *job = jobs_get(app->jobs, id, e);
	const char *kind = json_string_value(json_object_get(job, "kind"));

	if (job && (!kind || strcmp(kind, EXP_JOB_KIND))) {
		json_decref(job);
		job = NULL;
		mp_fail(e, MPE_EXPERIMENT_NOT_FOUND, 0, "job %lld is not an experiment", (long long)id);
	} else if (!job && e->code == MPE_JOB_NOT_FOUND) {
		mp_fail(e, MPE_EXPERIMENT_NOT_FOUND, 0, "no experiment %lld", (long long)id);
	}
	return job;
}

static json_t *names_of(const json_t *request)
{
	json_t *names = json_array();
	const json_t *arm;
	size_t i;

	json_array_foreach(json_object_get(request, "arms"), i, arm)
		json_array_append(names, json_object_get(arm, "name"));
	return names;
}

json_t *experiment_get(const struct app *app, int64_t id, mp_err *e)
{
	json_t *job = experiment_job_get(app, id, e), *samples, *names, *cmp;
	const json_t *req;

	if (!job)
		return NULL;
	req = json_object_get(job, "request");
	if (!(samples = exp_db_samples(app->store, json_integer_value(json_object_get(job, "operation_id")), e))) {
		json_decref(job);
		return NULL;
	}
	names = names_of(req);
	cmp = exp_compare(samples, names, (uint64_t)json_integer_value(json_object_get(req, "seed")));
	if (!cmp) {
		json_decref(job);
		job = NULL;
		mp_nomem(e);
	} else {
		json_object_update(job, cmp);
		json_object_set_new(job, "samples", json_integer((json_int_t)json_array_size(samples)));
	}
	json_decref(cmp);
	json_decref(names);
	json_decref(samples);
	return job;
}

json_t *experiment_samples(const struct app *app, int64_t id, mp_err *e)
{
	json_t *job = experiment_job_get(app, id, e), *samples, *out;
	json_int_t op;

	if (!job)
		return NULL;
	op = json_integer_value(json_object_get(job, "operation_id"));
	json_decref(job);
	if (!(samples = exp_db_samples(app->store, op, e)))
		return NULL;
	out = json_pack("{s:I, s:I, s:o}", "id", (json_int_t)id, "operation_id", op, "samples", samples);
	if (!out)
		mp_nomem(e);
	return out;
}

json_t *experiments_list(const struct app *app, int limit, mp_err *e)
{
	struct job_filter f = { .kind = EXP_JOB_KIND, .limit = limit };
	json_t *jobs = jobs_list(app->jobs, &f, e), *out = json_array(), *j;
	size_t i;

	if (!jobs || !out) {
		json_decref(jobs);
		json_decref(out);
		return jobs ? (mp_nomem(e), NULL) : NULL;
	}
	json_array_foreach(jobs, i, j)
		json_array_append_new(out, json_pack("{s:O, s:O, s:O?, s:O, s:O?}", "id", json_object_get(j, "id"), "status",
						     json_object_get(j, "status"), "summary", json_object_get(j, "summary"),
						     "created_ns", json_object_get(j, "created_ns"), "error",
						     json_object_get(j, "error")));
	json_decref(jobs);
	return out;
}
