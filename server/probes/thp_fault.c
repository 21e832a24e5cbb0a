/* thp-fault: the transhuge-stress method (kernel-interfaces.md §7), so its figures can be set
 * beside the kernel selftest's: per pass, for every 2 MiB chunk of an aligned region, map it afresh
 * (MAP_FIXED throws away the last pass's leftover page), MADV_HUGEPAGE, write one word (the fault
 * that should allocate a PMD THP), read the two pagemap entries of the chunk's first two base pages
 * and call it huge when both are present, contiguous and the first is 512-page aligned — the
 * selftest's own test, so "succeeded" means what it means there — then MADV_DONTNEED all but the
 * last base page (which splits the THP and keeps split, compaction and migration busy).
 *
 * Added to the selftest, per chunk: /proc/kpageflags for the frame (KPF_THP and
 * KPF_COMPOUND_HEAD: the kernel's own word that it is a THP, counted apart as thp_confirmed) and the
 * node of the page (move_pages(2) in query mode), which is what the placement per node is made of.
 * Both cost one syscall each against a 2 MiB fault that zeroes 2 MiB, so they stay inside the
 * fidelity goal (bench/b_thp_fidelity.py measures that against the selftest itself). */
#include "server/probes/workloads.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/mmstats.h"
#include "server/probes/probe.h"
#include "server/probes/pwutil.h"
#include "server/probes/typed.h"

#define PM_PRESENT        (1ull << 63)
#define PM_PFN(e)         ((e) & ((1ull << 55) - 1))
#define KPF_COMPOUND_HEAD 15
#define KPF_THP           22
#define PAGE              4096ull
#define PAGES_PER_HUGE    (HPAGE_2M / PAGE)

/* Per node: chunks that got a huge page there, and chunks that fell back to a base page there. */
struct per_node {
	uint64_t *huge;              /* owned, IDSET_MAX entries */
	uint64_t *base;              /* owned */
	uint64_t unplaced;           /* the node could not be read (move_pages refused) */
};

/* A growable bitmap of 2 MiB frame numbers seen in this pass ("different pages"). */
struct framemap {
	uint8_t *bits;               /* owned */
	size_t nbytes;
};

static int framemap_set(struct framemap *m, uint64_t idx)  /* 1 if new, 0 if seen, -1 nomem */
{
	size_t byte = idx / 8;
	if (byte >= m->nbytes) {
		size_t n = m->nbytes ? m->nbytes : 4096;
		while (n <= byte)
			n *= 2;
		uint8_t *b = realloc(m->bits, n);
		if (!b)
			return -1;
		memset(b + m->nbytes, 0, n - m->nbytes);
		m->bits = b;
		m->nbytes = n;
	}
	if (m->bits[byte] & (1u << (idx % 8)))
		return 0;
	m->bits[byte] |= 1u << (idx % 8);
	return 1;
}

/* The selftest's allocate_transhuge(): the PFN of the huge page at p, or -1 (and *first_pfn the
 * PFN of the first base page, 0 when not present). */
static int64_t allocate_transhuge(char *p, int pagemap_fd, uint64_t *first_pfn)
{
	uint64_t ent[2];

	*first_pfn = 0;
	if (mmap(p, HPAGE_2M, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_ANONYMOUS | MAP_NORESERVE | MAP_PRIVATE,
		 -1, 0) != p)
		return -2;
	madvise(p, HPAGE_2M, MADV_HUGEPAGE);
	*(volatile uintptr_t *)p = (uintptr_t)p;   /* the fault */
	if (pread(pagemap_fd, ent, sizeof ent, (off_t)((uintptr_t)p / PAGE * 8)) != sizeof ent)
		return -1;
	if (ent[0] & PM_PRESENT)
		*first_pfn = PM_PFN(ent[0]);
	if ((ent[0] & PM_PRESENT) && (ent[1] & PM_PRESENT) && PM_PFN(ent[1]) == PM_PFN(ent[0]) + 1 &&
	    !(PM_PFN(ent[0]) & (PAGES_PER_HUGE - 1)))
		return (int64_t)PM_PFN(ent[0]);
	return -1;
}

static bool kpageflags_thp(int fd, uint64_t pfn)
{
	uint64_t f;
	if (fd < 0 || pread(fd, &f, sizeof f, (off_t)(pfn * 8)) != sizeof f)
		return false;
	return (f & (1ull << KPF_THP)) && (f & (1ull << KPF_COMPOUND_HEAD));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static json_t *nodes_json(const struct per_node *pn, const idset *asked, uint64_t *on_asked)
{
	json_t *o = json_object();
	*on_asked = 0;
	for (unsigned i = 0; o && i < IDSET_MAX; i++) {
		char key[16];
		if (!pn->huge[i] && !pn->base[i])
			continue;
		snprintf(key, sizeof key, "%u", i);
		json_object_set_new(o, key, json_pack("{s:I, s:I}", "huge", (json_int_t)pn->huge[i],
						      "base", (json_int_t)pn->base[i]));
		if (idset_has(asked, i))
			*on_asked += pn->huge[i];
	}
	return o;
}

int probe_thp_fault(const struct pw_env *env, const struct thp_fault_params *p, json_t **result, mp_err *e)
{
	static const char *const vm_names[] = { "thp_fault_alloc", "thp_fault_fallback", "thp_split_pmd",
				   "thp_deferred_split_page", "compact_stall", "compact_success", "compact_fail", NULL };
	uint64_t len = p->size_mib * MIB / HPAGE_2M * HPAGE_2M, chunks = len / HPAGE_2M;
	struct per_node pn = { 0 };
	struct framemap fm = { 0 };
	struct pw_vmstat vb, va;
	char *raw = MAP_FAILED, *base;
	int pagemap = -1, kpf = -1, rc = -1, mode = 0;
	double *mibs = NULL;            /* owned: MiB/s per pass */
	size_t npass = 0, cap = 0;
	uint64_t tot_ok = 0, tot_fail = 0, tot_confirmed = 0;
	json_t *passes = json_array(), *policy = NULL, *out = NULL;
	idset asked;
	char thp[32] = "unknown";
	int64_t t_start;

	*result = NULL;
	if (!passes)
		return mp_nomem(e);
	if (chunks == 0) {
		mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "the region holds no whole 2 MiB chunk");
		goto out;
	}
	pw_thp_enabled_read(env->sysfs_root, thp, sizeof thp);
	if (!strcmp(thp, "never")) {
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, 0, "thp.enabled is never: no fault can get a huge page "
			"(the selftest skips too); set it to madvise or always");
		goto out;
	}
	if (!(pn.huge = calloc(IDSET_MAX, sizeof *pn.huge)) || !(pn.base = calloc(IDSET_MAX, sizeof *pn.base))) {
		mp_nomem(e);
		goto out;
	}
	policy = pw_policy_json(&asked, &mode);
	/* The selftest maps len + 2 MiB and moves up to the next 2 MiB boundary. */
	raw = mmap(NULL, len + HPAGE_2M, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_NORESERVE | MAP_PRIVATE, -1, 0);
	if (raw == MAP_FAILED) {
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, errno, "mmap of %llu MiB", (unsigned long long)(len / MIB));
		goto out;
	}
	base = (char *)(((uintptr_t)raw + HPAGE_2M - 1) & ~(uintptr_t)(HPAGE_2M - 1));
	madvise(base, len, MADV_HUGEPAGE);
	if ((pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) < 0) {
		mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, errno, "open /proc/self/pagemap");
		goto out;
	}
	kpf = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);   /* optional: thp_confirmed is then 0 */
	pw_vmstat_read(env->procfs_root, vm_names, &vb);
	t_start = pw_now_ns();
	for (;;) {
		uint32_t ok = 0, fail = 0, diff = 0, confirmed = 0;
		int64_t a, b;

		if (fm.bits)
			memset(fm.bits, 0, fm.nbytes);
		a = pw_now_ns();
		for (char *c = base; c < base + len; c += HPAGE_2M) {
			uint64_t first;
			int64_t pfn = allocate_transhuge(c, pagemap, &first);
			int node;

			if (pfn == -2) {
				mp_fail(e, MPE_PROBE_WORKLOAD_FAILED, errno, "mmap MAP_FIXED of a chunk");
				goto out;
			}
			node = pw_page_node(c);
			if (pfn < 0) {
				fail++;
				if (node >= 0 && node < IDSET_MAX)
					pn.base[node]++;
				else
					pn.unplaced++;
			} else {
				int n = framemap_set(&fm, (uint64_t)pfn >> 9);
				if (n < 0) {
					mp_nomem(e);
					goto out;
				}
				ok++;
				diff += (uint32_t)n;
				confirmed += kpageflags_thp(kpf, (uint64_t)pfn);
				if (node >= 0 && node < IDSET_MAX)
					pn.huge[node]++;
				else
					pn.unplaced++;
			}
			madvise(c, HPAGE_2M - PAGE, MADV_DONTNEED);
		}
		b = pw_now_ns();
		double s = (double)(b - a) / 1e9;
		double mib_s = s > 0 ? (double)len / s / (double)MIB : 0;
		if (npass == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			double *m = realloc(mibs, ncap * sizeof *m);
			if (!m) {
				mp_nomem(e);
				goto out;
			}
			mibs = m;
			cap = ncap;
		}
		mibs[npass++] = mib_s;
		tot_ok += ok;
		tot_fail += fail;
		tot_confirmed += confirmed;
		json_array_append_new(passes, json_pack("{s:f, s:f, s:f, s:i, s:i, s:i, s:i}",
			"s_loop", s, "ms_page", s * 1000.0 / (double)chunks, "mib_s", mib_s,
			"succeeded", (int)ok, "failed", (int)fail, "different", (int)diff, "thp_confirmed", (int)confirmed));
		if (p->loops && npass >= p->loops)
			break;
		if (p->duration_s && b - t_start >= (int64_t)p->duration_s * 1000000000)
			break;
		if (pw_past(env))
			break;
	}
	pw_vmstat_read(env->procfs_root, vm_names, &va);

	{
		struct mmstats st;
		uint64_t on_asked;
		json_t *nodes = nodes_json(&pn, &asked, &on_asked);
		double median;
		qsort(mibs, npass, sizeof *mibs, cmp_double);
		mmstats_sorted(mibs, npass, &st);
		/* The plain median (the mean of the middle two for an even count), not mmtests' floor
		 * nearest rank, which for 3 passes is the minimum. */
		median = npass % 2 ? mibs[npass / 2] : (mibs[npass / 2 - 1] + mibs[npass / 2]) / 2;
		out = json_pack("{s:I, s:I, s:I, s:o, s:o, s:{s:f, s:f, s:f, s:f}, s:I, s:I, s:I, s:I, s:o, s:I, s:o, s:s, s:o}",
			"size_mib", (json_int_t)(len / MIB), "chunks", (json_int_t)chunks, "loops", (json_int_t)npass,
			"policy", policy, "ran_on", pw_where_json(),
			"mib_s", "min", st.min, "median", median, "max", st.max, "amean", st.amean,
			"tried", (json_int_t)(chunks * npass), "succeeded", (json_int_t)tot_ok,
			"failed", (json_int_t)tot_fail, "thp_confirmed", (json_int_t)tot_confirmed,
			"nodes", nodes, "unplaced", (json_int_t)pn.unplaced,
			"passes", passes, "thp_enabled", thp, "vmstat", pw_vmstat_delta(&vb, &va));
		policy = passes = NULL;
		if (!out) {
			mp_nomem(e);
			goto out;
		}
		/* Where the policy asked: huge pages on the nodes it names (none for default/local). */
		if (idset_count(&asked))
			json_object_set_new(out, "huge_on_policy_nodes", json_integer((json_int_t)on_asked));
		else
			json_object_set_new(out, "huge_on_policy_nodes", json_null());
		if (kpf < 0)
			json_object_set_new(out, "thp_confirmed", json_null());
	}
	(void)mode;
	*result = out;
	rc = 0;
out:
	if (raw != MAP_FAILED)
		munmap(raw, len + HPAGE_2M);
	if (pagemap >= 0)
		close(pagemap);
	if (kpf >= 0)
		close(kpf);
	free(pn.huge);
	free(pn.base);
	free(fm.bits);
	free(mibs);
	json_decref(passes);
	json_decref(policy);
	return rc;
}

/* ---- parameters ------------------------------------------------------------------------------- */

/* The kind's own parameters: what the parser takes, what GET /v1/probes lists. */
static const struct probe_param thp_fault_params_table[] = {
	{ "size", PROBE_PARAM_SIZE },
	{ "loops", PROBE_PARAM_INTEGER },
	{ "duration_s", PROBE_PARAM_INTEGER },
	{ NULL, 0 },
};

int thp_fault_parse(const json_t *params, struct thp_fault_params *p, mp_err *e)
{
	int64_t loops, dur;

	if (probe_params_only(params, thp_fault_params_table, e) < 0 ||
	    pp_size_mib(params, "size", 2, 2, 1 << 20, 64, &p->size_mib, e) < 0 ||
	    pp_int(params, "loops", 1, 10000, 3, &loops, e) < 0 ||
	    pp_int(params, "duration_s", 1, 3600, 0, &dur, e) < 0)
		return -1;
	if (pp_has(params, "loops") && pp_has(params, "duration_s"))
		return mp_fail(e, MPE_PROBE_BAD_PARAM, 0, "give loops or duration_s, not both");
	p->loops = dur ? 0 : (uint32_t)loops;
	p->duration_s = (uint32_t)dur;
	return 0;
}

json_t *thp_fault_params_json(const struct thp_fault_params *p)
{
	/* Only the member that decides, so the normalised request parses back to the same thing. */
	return p->duration_s ? json_pack("{s:I, s:I}", "size", (json_int_t)(p->size_mib * MIB), "duration_s",
					 (json_int_t)p->duration_s)
			     : json_pack("{s:I, s:I}", "size", (json_int_t)(p->size_mib * MIB), "loops",
					 (json_int_t)p->loops);
}

/* ---- the probe table's entry ------------------------------------------------------------------ */

static json_t *kind_parse(const json_t *params, const struct probe_env *env, struct probe_plan *plan, mp_err *e)
{
	struct thp_fault_params p;

	(void)env;
	if (thp_fault_parse(params, &p, e) < 0)
		return NULL;
	plan->npasses = 1;
	plan->bytes = p.size_mib * MIB;    /* one chunk at a time is whole, but the region is mapped */
	return thp_fault_params_json(&p);
}

static int kind_workload(const json_t *params, json_t **result, char *err, size_t errlen)
{
	struct thp_fault_params p;
	struct pw_env env;
	mp_err e = { 0 };

	if (pw_child_env(&env, err, errlen) < 0)
		return -1;
	if (thp_fault_parse(params, &p, &e) < 0 || probe_thp_fault(&env, &p, result, &e) < 0)
		return pw_child_fail(&e, err, errlen);
	return 0;
}

/* The figures compare lines up: the seeds' table (s/loop, ms/page, MiB/s, succeeded, failed). */
static json_t *kind_summary(const json_t *r)
{
	json_t *s = json_object(), *passes = json_object_get(r, "passes"), *v;
	double sl = 0, mp = 0;
	size_t i;

	json_array_foreach(passes, i, v) {
		sl += json_number_value(json_object_get(v, "s_loop"));
		mp += json_number_value(json_object_get(v, "ms_page"));
	}
	if (json_array_size(passes)) {
		json_object_set_new(s, "s_loop_mean", json_real(sl / (double)json_array_size(passes)));
		json_object_set_new(s, "ms_page_mean", json_real(mp / (double)json_array_size(passes)));
	}
	json_object_set(s, "mib_s_median", json_object_get(json_object_get(r, "mib_s"), "median"));
	for (const char *const *k = (const char *const[]){ "tried", "succeeded", "failed", "thp_confirmed",
							   "huge_on_policy_nodes", NULL }; *k; k++)
		if (json_is_number(json_object_get(r, *k)))
			json_object_set(s, *k, json_object_get(r, *k));
	pw_summary_nodes(s, json_object_get(r, "nodes"), "huge");
	return s;
}

static int kind_pack(const json_t *norm, const struct probe_env *env, union probe_params *out, mp_err *e)
{
	(void)env;
	return thp_fault_parse(norm, &out->leaf.thp_fault, e) < 0 ? -1 : 0;
}

static json_t *kind_unpack(const union probe_params *p)
{
	return thp_fault_params_json(&p->leaf.thp_fault);
}

const struct probe_kind probe_thp_fault_kind = {
	.name = "thp-fault",
	.job = "probe.thp-fault",
	.params = thp_fault_params_table,
	.parse = kind_parse,
	.pack = kind_pack,
	.unpack = kind_unpack,
	.workload = kind_workload,
	.summary = kind_summary,
};
