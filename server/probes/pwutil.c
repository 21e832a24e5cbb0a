/* Shared by the probe workloads: strict parameter parsing, the clock, vmstat deltas, page nodes. */
#include "server/probes/pwutil.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "server/kernel/mpol.h"
#include "server/kernel/sysfs.h"

/* ---- parsing -------------------------------------------------------------------------------- */

int pp_fields(const json_t *params, const char *const *names, mp_err *e)
{
	const char *key;
	json_t *v;

	if (!json_is_object(params))
		return mp_fail(e, MPE_REQUEST_NOT_AN_OBJECT, 0, "the probe's parameters must be a JSON object");
	json_object_foreach((json_t *)params, key, v) {
		size_t i;
		for (i = 0; names[i] && strcmp(names[i], key); i++)
			;
		if (!names[i]) {
			char known[256] = "";
			for (i = 0; names[i]; i++)
				snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
					 i ? ", " : "", names[i]);
			/* Only a short, printable name is quoted back. */
			bool safe = strlen(key) <= 64;
			for (const char *c = key; safe && *c; c++)
				safe = *c > 0x20 && *c < 0x7f;
			return mp_fail(e, MPE_REQUEST_UNKNOWN_FIELD, 0, "unknown member %s%s%s (this probe takes: %s)",
				       safe ? "'" : "", safe ? key : "(not shown)", safe ? "'" : "", known);
		}
	}
	return 0;
}

int pp_size_mib(const json_t *params, const char *name, uint64_t unit_mib, uint64_t min_mib, uint64_t max_mib,
		uint64_t dflt_mib, uint64_t *out_mib, mp_err *e)
{
	const json_t *v = json_object_get(params, name);
	uint64_t bytes, kb;

	if (!v) {
		*out_mib = dflt_mib;
		return 0;
	}
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			goto range;
		bytes = (uint64_t)json_integer_value(v);
	} else if (json_is_string(v)) {
		if (strlen(json_string_value(v)) > 32 || parse_size_kb(json_string_value(v), &kb) < 0 ||
		    kb > UINT64_MAX / 1024)
			return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "%s is bytes or a size such as \"64M\"", name);
		bytes = kb * 1024;
	} else {
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "%s must be an integer of bytes or a string such as \"64M\"",
			       name);
	}
	if (bytes % (unit_mib * MIB))
		return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "%s must be a whole number of %llu MiB", name,
			       (unsigned long long)unit_mib);
	if (bytes / MIB >= min_mib && bytes / MIB <= max_mib) {
		*out_mib = bytes / MIB;
		return 0;
	}
range:
	return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "%s must be from %llu MiB to %llu MiB", name,
		       (unsigned long long)min_mib, (unsigned long long)max_mib);
}

bool pp_has(const json_t *params, const char *name)
{
	return json_object_get(params, name) != NULL;
}

int pp_int(const json_t *params, const char *name, int64_t min, int64_t max, int64_t dflt, int64_t *out,
	   mp_err *e)
{
	const json_t *v = json_object_get(params, name);

	if (!v) {
		*out = dflt;
		return 0;
	}
	if (!json_is_integer(v))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "%s must be an integer", name);
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "%s is %" JSON_INTEGER_FORMAT ", outside %" PRId64 "..%" PRId64,
			       name, json_integer_value(v), min, max);
	*out = json_integer_value(v);
	return 0;
}

int pp_bool(const json_t *params, const char *name, bool dflt, bool *out, mp_err *e)
{
	const json_t *v = json_object_get(params, name);

	if (!v) {
		*out = dflt;
		return 0;
	}
	if (!json_is_boolean(v))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "%s must be true or false", name);
	*out = json_is_true(v);
	return 0;
}

int pp_node(const json_t *params, const char *name, const struct topology *t, bool need_mem, bool need_cpu,
	    int dflt, int *out, mp_err *e)
{
	int64_t id;
	int i;

	if (!pp_has(params, name)) {
		*out = dflt;
		return 0;
	}
	if (pp_int(params, name, 0, INT32_MAX, 0, &id, e) < 0) {
		if (e && e->code == MPE_PROBE_BAD_PARAM)
			return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "%s must be a node id (0 or more)", name);
		return -1;
	}
	if (id >= IDSET_MAX || (i = topo_index(t, (unsigned)id)) < 0)
		return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "%s: node %" PRId64 " is not online", name, id);
	if (need_mem && !t->nodes[i].has_memory)
		return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "%s: node %" PRId64 " has no memory", name, id);
	if (need_cpu && !t->nodes[i].has_cpu)
		return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "%s: node %" PRId64 " has no CPUs", name, id);
	*out = (int)id;
	return 0;
}

/* ---- in the child --------------------------------------------------------------------------- */

int64_t pw_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool pw_past(const struct pw_env *env)
{
	return env->deadline_ns && pw_now_ns() >= env->deadline_ns;
}

int pw_vmstat_read(const char *procfs_root, const char *const *names, struct pw_vmstat *s)
{
	char path[4096], line[256];
	FILE *f;

	memset(s, 0, sizeof *s);
	s->names = names;
	while (names[s->n] && s->n < PW_VMSTAT_MAX)
		s->n++;
	snprintf(path, sizeof path, "%s/vmstat", procfs_root);
	if (!(f = fopen(path, "re")))
		return -errno;
	while (fgets(line, sizeof line, f)) {
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		for (int i = 0; i < s->n; i++)
			if (!strcmp(line, names[i]))
				s->v[i] = strtoull(sp + 1, NULL, 10);
	}
	fclose(f);
	return 0;
}

json_t *pw_vmstat_delta(const struct pw_vmstat *before, const struct pw_vmstat *after)
{
	json_t *o = json_object();

	for (int i = 0; o && i < before->n; i++)
		json_object_set_new(o, before->names[i],
				    json_integer((json_int_t)(after->v[i] - before->v[i])));
	return o;
}

int pw_pages_nodes(void **pages, unsigned long n, int *status)
{
	/* move_pages(2) with nodes == NULL only queries: status[i] is the node or -errno. */
	if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0) < 0)
		return -errno;
	return 0;
}

int pw_page_node(void *addr)
{
	int st = -ENOENT;
	int r = pw_pages_nodes(&addr, 1, &st);
	return r < 0 ? r : st;
}

json_t *pw_policy_json(idset *nodes, int *mode_out)
{
	unsigned long mask[IDSET_MAX / 64 + 1] = { 0 };
	int mode = 0;
	char buf[256] = "";
	const char *name;

	idset_clear(nodes);
	if (syscall(SYS_get_mempolicy, &mode, mask, (unsigned long)IDSET_MAX + 1, NULL, 0) < 0)
		return json_pack("{s:s}", "mode", "unknown");
	mode &= ~(MPD_MPOL_F_STATIC_NODES | MPD_MPOL_F_RELATIVE_NODES | MPD_MPOL_F_NUMA_BALANCING);
	for (unsigned i = 0; i < IDSET_MAX; i++)
		if (mask[i / 64] & (1ul << (i % 64)))
			idset_add(nodes, i);
	if (mode == MPD_MPOL_DEFAULT || mode == MPD_MPOL_LOCAL)
		idset_clear(nodes);
	idset_format(nodes, buf, sizeof buf);
	if (mode_out)
		*mode_out = mode;
	name = mpol_mode_name(mode);
	return json_pack("{s:s, s:s}", "mode", name ? name : "unknown", "nodes", buf);
}

json_t *pw_where_json(void)
{
	unsigned cpu = 0, node = 0;
	if (syscall(SYS_getcpu, &cpu, &node, NULL) < 0)
		return json_null();
	return json_pack("{s:I, s:I}", "cpu", (json_int_t)cpu, "node", (json_int_t)node);
}

int pw_bind_thread_to_node(const struct topology *t, unsigned node)
{
	int i = topo_index(t, node);
	cpu_set_t set;

	if (i < 0 || !t->nodes[i].has_cpu)
		return -EINVAL;
	CPU_ZERO(&set);
	for (unsigned c = 0; c < CPU_SETSIZE && c < IDSET_MAX; c++)
		if (idset_has(&t->nodes[i].cpus, c))
			CPU_SET(c, &set);
	if (sched_setaffinity(0, sizeof set, &set) < 0)
		return -errno;
	return 0;
}

#define THP_ENABLED "kernel/mm/transparent_hugepage/enabled"

int pw_thp_enabled_read(const char *sysfs_root, char *out, size_t len)
{
	char buf[256];
	const char *opts[8];
	int sel, n, r;

	if ((r = kfs_read(sysfs_root, THP_ENABLED, buf, sizeof buf)) < 0)
		return r;
	if ((n = parse_bracket_list(buf, opts, 8, &sel)) < 0)
		return -EINVAL;
	snprintf(out, len, "%s", opts[sel]);
	return 0;
}

int pw_thp_enabled_write(const char *sysfs_root, const char *value)
{
	return kfs_write(sysfs_root, THP_ENABLED, value);
}

/* ---- the probe table's side ------------------------------------------------------------------- */

int pw_child_env(struct pw_env *env, char *err, size_t errlen)
{
	static struct topology t;
	int r = topo_read("/sys", &t);

	if (r < 0) {
		snprintf(err, errlen, "reading the topology: %s", strerror(-r));
		return -1;
	}
	*env = (struct pw_env){ .sysfs_root = "/sys", .procfs_root = "/proc", .topo = &t };
	return 0;
}

int pw_child_fail(const mp_err *e, char *err, size_t errlen)
{
	if (e->sys_errno)
		snprintf(err, errlen, "%s (%s)", e->detail, strerrorname_np(e->sys_errno) ? strerrorname_np(e->sys_errno)
											  : strerror(e->sys_errno));
	else
		snprintf(err, errlen, "%s", e->detail[0] ? e->detail : mp_code_meaning(e->code));
	return -1;
}

void pw_summary_counts(json_t *s, const json_t *counts, const char *prefix)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)counts, k, v) {
		char name[64];
		snprintf(name, sizeof name, "%s%s", prefix, k);
		json_object_set(s, name, v);
	}
}

void pw_summary_nodes(json_t *s, const json_t *nodes, const char *field)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)nodes, k, v) {
		char name[64];
		snprintf(name, sizeof name, "node%s_%s", k, field);
		json_object_set(s, name, json_object_get(v, field));
	}
}
