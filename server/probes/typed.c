/* The typed parameters' checks, shared by the serving side and the privileged helper (typed.h). */
#include "server/probes/typed.h"

#include <string.h>

#include "server/kernel/topology.h"

void probe_env_from(const struct topology *t, struct probe_env *env)
{
	memset(env, 0, sizeof *env);
	env->topo = t;
	for (int i = 0; i < t->n_nodes && env->n_nodes < 64; i++) {
		env->nodes[env->n_nodes++] = t->nodes[i].id;
		env->mem_available += t->nodes[i].mem_free_kb * 1024;
	}
}

int probe_check_share(const struct probe_plan *plan, const struct probe_env *env, unsigned pct, mp_err *e)
{
	uint64_t allowed = env->mem_available / 100 * pct;

	if (plan->bytes <= allowed)
		return 0;
	return mp_fail(e, MPE_PROBE_TOO_LARGE, 0, "the probe would take %llu MiB, more than %u%% of the %llu MiB free "
		       "(%llu MiB; --probe-memory-share sets the share)", (unsigned long long)(plan->bytes >> 20), pct,
		       (unsigned long long)(env->mem_available >> 20), (unsigned long long)(allowed >> 20));
}

json_t *probe_recheck(unsigned kind, const union probe_params *p, unsigned pass, const struct probe_env *env,
		      unsigned pct, struct probe_plan *plan, mp_err *e)
{
	json_t *in = NULL, *norm = NULL;

	memset(plan, 0, sizeof *plan);
	if (kind >= probe_nkinds)
		return mp_fail(e, MPE_PROBE_UNKNOWN, 0, "no probe kind %u", kind), NULL;
	if (!(in = probe_kinds[kind]->unpack(p)))
		return mp_nomem(e), NULL;
	norm = probe_kinds[kind]->parse(in, env, plan, e);
	json_decref(in);
	if (!norm)
		return NULL;
	if (probe_check_share(plan, env, pct, e) < 0)
		goto fail;
	if (pass >= (unsigned)plan->npasses || plan->npasses > PROBE_MAX_PASSES) {
		mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "pass %u of a probe of %d passes", pass, plan->npasses);
		goto fail;
	}
	if (plan->pass[pass].label)
		json_object_set_new(norm, "pass", json_string(plan->pass[pass].label));
	return norm;
fail:
	json_decref(norm);
	return NULL;
}
