/* sparse-touch: the SGI thp_pthread method (kernel-interfaces.md §11): T threads, each pinned to
 * one of the child's CPUs in turn, each owning a contiguous share of one large anonymous region
 * and writing `touches` bytes, 4 KiB apart, in every 2 MiB of its share, `passes` times. With THP
 * the first touch of a 2 MiB chunk brings in (and zeroes) a whole huge page where a base page
 * would do, so a sparse, many-threaded toucher pays for memory it never uses. Per phase: wall time
 * (from the start line to the last thread's end), the slowest and fastest thread, system and
 * user CPU time and minor faults (getrusage over the phase), RSS and AnonHugePages at the end
 * (/proc/self/status, smaps_rollup) and where the touched pages landed (move_pages query).
 * compare_thp makes the probe two passes, thp.enabled=always then never, which the framework sets
 * before each child and puts back after. No MADV_HUGEPAGE: the comparison is of the system-wide
 * setting, as in the seed. */
#include "server/probes/workloads.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "server/probes/probe.h"
#include "server/probes/pwutil.h"
#include "server/probes/typed.h"

/* The start line: threads wait until go is set, and leave at once when abort is set too (a later
 * thread could not be started). */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool go, abort;
};

static bool gate_wait(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	while (!g->go)
		pthread_cond_wait(&g->cv, &g->mu);
	bool ab = g->abort;
	pthread_mutex_unlock(&g->mu);
	return !ab;
}

static void gate_open(struct gate *g, bool abort_all)
{
	pthread_mutex_lock(&g->mu);
	g->go = true;
	g->abort = abort_all;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

struct toucher {
	pthread_t th;
	char *start;                 /* borrowed: the thread's share */
	uint64_t chunks;
	const struct sparse_touch_params *p;
	struct gate *go;
	int cpu;                     /* -1: leave the affinity alone */
	int64_t ns;                  /* the thread's own wall time */
	long minflt;
};

static void *touch_main(void *arg)
{
	struct toucher *t = arg;
	struct rusage ru;
	int64_t a;

	if (t->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(t->cpu, &set);
		sched_setaffinity(0, sizeof set, &set);
	}
	if (!gate_wait(t->go))
		return NULL;
	a = pw_now_ns();
	for (uint32_t pass = 0; pass < t->p->passes; pass++)
		for (uint64_t c = 0; c < t->chunks; c++) {
			volatile char *chunk = t->start + c * HPAGE_2M;
			for (uint32_t k = 0; k < t->p->touches; k++)
				chunk[k * 4096]++;
		}
	t->ns = pw_now_ns() - a;
	t->minflt = getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt : -1;
	return NULL;
}

/* VmRSS from /proc/self/status and AnonHugePages from /proc/self/smaps_rollup, in kB. */
static void self_kb(const char *file, const char *key, int64_t *kb)
{
	char path[64], line[256];
	size_t kl = strlen(key);
	FILE *f;

	*kb = -1;
	snprintf(path, sizeof path, "/proc/self/%s", file);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			*kb = strtoll(line + kl + 1, NULL, 10);
			break;
		}
	fclose(f);
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static json_t *phase(const struct sparse_touch_params *p, const char *thp, mp_err *e)
{
	uint64_t chunks = p->size_mib * MIB / HPAGE_2M, per = chunks / p->threads;
	struct toucher *t = calloc(p->threads, sizeof *t);
	struct rusage r0, r1;
	struct gate go = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false };
	cpu_set_t allowed;
	int cpus[CPU_SETSIZE], ncpu = 0;
	char *raw = MAP_FAILED, *base;
	uint32_t started = 0;
	int64_t a, b, maxns = 0, minns = INT64_MAX, rss, ahp;
	long minflt = 0;
	json_t *out = NULL, *nodes = NULL;
	void **pages = NULL;
	int *status = NULL;

	if (!t)
		return mp_nomem(e), NULL;
	if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				cpus[ncpu++] = c;
	raw = mmap(NULL, (chunks + 1) * HPAGE_2M, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE | MAP_NORESERVE,
		   -1, 0);
	if (raw == MAP_FAILED) {
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, errno, "mmap of %llu MiB", (unsigned long long)p->size_mib);
		goto out;
	}
	base = (char *)(((uintptr_t)raw + HPAGE_2M - 1) & ~(uintptr_t)(HPAGE_2M - 1));
	for (uint32_t i = 0; i < p->threads; i++) {
		t[i] = (struct toucher){ .start = base + i * per * HPAGE_2M, .chunks = per, .p = p, .go = &go,
					 .cpu = ncpu ? cpus[i % (uint32_t)ncpu] : -1 };
		if ((errno = pthread_create(&t[i].th, NULL, touch_main, &t[i])) != 0)
			break;
		started++;
	}
	if (started < p->threads) {
		int err = errno;
		gate_open(&go, true);
		for (uint32_t i = 0; i < started; i++)
			pthread_join(t[i].th, NULL);
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, err, "pthread_create (thread %u of %u)", started + 1, p->threads);
		goto out;
	}
	getrusage(RUSAGE_SELF, &r0);
	a = pw_now_ns();
	gate_open(&go, false);
	for (uint32_t i = 0; i < p->threads; i++) {
		pthread_join(t[i].th, NULL);
		maxns = t[i].ns > maxns ? t[i].ns : maxns;
		minns = t[i].ns < minns ? t[i].ns : minns;
		minflt += t[i].minflt;
	}
	b = pw_now_ns();
	getrusage(RUSAGE_SELF, &r1);
	self_kb("status", "VmRSS", &rss);
	self_kb("smaps_rollup", "AnonHugePages", &ahp);

	/* Where the first touched page of every touched chunk landed. */
	nodes = json_object();
	pages = calloc(per * p->threads, sizeof *pages);
	status = calloc(per * p->threads, sizeof *status);
	if (!nodes || !pages || !status) {
		mp_nomem(e);
		goto out;
	}
	for (uint64_t i = 0; i < per * p->threads; i++)
		pages[i] = base + i * HPAGE_2M;
	if (pw_pages_nodes(pages, per * p->threads, status) == 0)
		for (uint64_t i = 0; i < per * p->threads; i++) {
			char key[16];
			if (status[i] < 0)
				snprintf(key, sizeof key, "unplaced");
			else
				snprintf(key, sizeof key, "%d", status[i]);
			json_t *v = json_object_get(nodes, key);
			json_object_set_new(nodes, key, json_integer(v ? json_integer_value(v) + 1 : 1));
		}
	out = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:I, s:O}",
		"thp_enabled", thp, "wall_s", (double)(b - a) / 1e9, "max_thread_s", (double)maxns / 1e9,
		"min_thread_s", (double)minns / 1e9,
		"sys_s", tv_s(r1.ru_stime) - tv_s(r0.ru_stime), "user_s", tv_s(r1.ru_utime) - tv_s(r0.ru_utime),
		"page_faults", (json_int_t)(r1.ru_minflt - r0.ru_minflt), "thread_page_faults", (json_int_t)minflt,
		"rss_kb", (json_int_t)rss, "anon_huge_kb", (json_int_t)ahp, "chunk_nodes", nodes);
	if (!out)
		mp_nomem(e);
out:
	if (raw != MAP_FAILED)
		munmap(raw, (chunks + 1) * HPAGE_2M);
	free(t);
	free(pages);
	free(status);
	json_decref(nodes);
	return out;
}

int probe_sparse_touch(const struct pw_env *env, const struct sparse_touch_params *p, json_t **result,
		       mp_err *e)
{
	char thp[32] = "unknown";
	json_t *ph;

	*result = NULL;
	pw_thp_enabled_read(env->sysfs_root, thp, sizeof thp);
	if (!(ph = phase(p, thp, e)))
		return -1;
	if (json_object_update_new(ph, json_pack("{s:I, s:i, s:i, s:i, s:o}", "size_mib", (json_int_t)p->size_mib,
						 "threads", (int)p->threads, "touches", (int)p->touches,
						 "passes", (int)p->passes, "ran_on", pw_where_json())) < 0) {
		json_decref(ph);
		return mp_nomem(e);
	}
	*result = ph;
	return 0;
}

/* ---- parameters ------------------------------------------------------------------------------- */

/* The kind's own parameters: what the parser takes, what GET /v1/probes lists. */
static const struct probe_param sparse_touch_params_table[] = {
	{ "size", PROBE_PARAM_SIZE },
	{ "threads", PROBE_PARAM_INTEGER },
	{ "touches", PROBE_PARAM_INTEGER },
	{ "passes", PROBE_PARAM_INTEGER },
	{ "compare_thp", PROBE_PARAM_BOOLEAN },
	{ NULL, 0 },
};

int sparse_touch_parse(const json_t *params, struct sparse_touch_params *p, bool *compare_thp, mp_err *e)
{
	int64_t threads, touches, passes;

	if (probe_params_only(params, sparse_touch_params_table, e) < 0 ||
	    pp_size_mib(params, "size", 2, 2, 1 << 20, 64, &p->size_mib, e) < 0 ||
	    pp_int(params, "threads", 1, 1024, 4, &threads, e) < 0 ||
	    pp_int(params, "touches", 1, 511, 8, &touches, e) < 0 ||
	    pp_int(params, "passes", 1, 10000, 4, &passes, e) < 0 ||
	    pp_bool(params, "compare_thp", false, compare_thp, e) < 0)
		return -1;
	if (p->size_mib / 2 < (uint64_t)threads)
		return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "size gives %llu 2 MiB chunks for %lld threads: every thread "
			       "needs at least one", (unsigned long long)(p->size_mib / 2), (long long)threads);
	p->threads = (uint32_t)threads;
	p->touches = (uint32_t)touches;
	p->passes = (uint32_t)passes;
	return 0;
}

json_t *sparse_touch_params_json(const struct sparse_touch_params *p, bool compare_thp)
{
	return json_pack("{s:I, s:i, s:i, s:i, s:b}", "size", (json_int_t)(p->size_mib * MIB), "threads",
			 (int)p->threads, "touches", (int)p->touches, "passes", (int)p->passes, "compare_thp",
			 compare_thp);
}

/* ---- the probe table's entry ------------------------------------------------------------------ */

static json_t *kind_parse(const json_t *params, const struct probe_env *env, struct probe_plan *plan, mp_err *e)
{
	struct sparse_touch_params p;
	bool compare;

	(void)env;
	if (sparse_touch_parse(params, &p, &compare, e) < 0)
		return NULL;
	plan->bytes = p.size_mib * MIB;
	if (compare) {
		plan->npasses = 2;
		plan->pass[0] = (struct probe_pass){ .label = "always", .nset = 1, .set = { { "thp.enabled", "always" } } };
		plan->pass[1] = (struct probe_pass){ .label = "never", .nset = 1, .set = { { "thp.enabled", "never" } } };
	} else {
		plan->npasses = 1;
	}
	return sparse_touch_params_json(&p, compare);
}

static int kind_workload(const json_t *params, json_t **result, char *err, size_t errlen)
{
	struct sparse_touch_params p;
	struct pw_env env;
	json_t *own = json_deep_copy(params);
	mp_err e = { 0 };
	bool compare;
	int rc;

	if (!own)
		return snprintf(err, errlen, "out of memory"), -1;
	json_object_del(own, "pass");      /* the framework's label of the pass: the setting in force */
	rc = pw_child_env(&env, err, errlen) < 0 ? -1
	     : sparse_touch_parse(own, &p, &compare, &e) < 0 || probe_sparse_touch(&env, &p, result, &e) < 0
		     ? pw_child_fail(&e, err, errlen) : 0;
	json_decref(own);
	return rc;
}

/* thp_pthread's columns: wall time and its spread, system and user time, faults, memory. */
static json_t *kind_summary(const json_t *r)
{
	json_t *s = json_object();
	for (const char *const *f = (const char *const[]){ "wall_s", "max_thread_s", "min_thread_s", "sys_s", "user_s",
							   "page_faults", "rss_kb", "anon_huge_kb", NULL }; *f; f++)
		json_object_set(s, *f, json_object_get(r, *f));
	return s;
}

static int kind_pack(const json_t *norm, const struct probe_env *env, union probe_params *out, mp_err *e)
{
	bool compare;

	(void)env;
	if (sparse_touch_parse(norm, &out->leaf.sparse_touch.p, &compare, e) < 0)
		return -1;
	out->leaf.sparse_touch.compare_thp = compare;
	return 0;
}

static json_t *kind_unpack(const union probe_params *p)
{
	return sparse_touch_params_json(&p->leaf.sparse_touch.p, p->leaf.sparse_touch.compare_thp != 0);
}

const struct probe_kind probe_sparse_touch_kind = {
	.name = "sparse-touch",
	.job = "probe.sparse-touch",
	.params = sparse_touch_params_table,
	.parse = kind_parse,
	.pack = kind_pack,
	.unpack = kind_unpack,
	.workload = kind_workload,
	.summary = kind_summary,
};
