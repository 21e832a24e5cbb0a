/* Every probe kind, one line each. A new kind is a `const struct probe_kind` in its own file
 * here (probe.h) and a line below; the job kind, the route and the child entry follow from it. */
#include "server/probes/probe.h"

#include <string.h>

extern const struct probe_kind probe_touch;
extern const struct probe_kind probe_thp_fault_kind, probe_hugetlb_alloc_kind, probe_sparse_touch_kind,
	probe_remote_access_kind, probe_numa_hinting_kind, probe_fragment_kind;

const struct probe_kind *const probe_kinds[] = {
	&probe_touch,                /* the framework's own: touch a region, say where it landed */
	&probe_thp_fault_kind,       /* seed 000: transhuge-stress */
	&probe_hugetlb_alloc_kind,   /* seed 003: hpagealloc */
	&probe_sparse_touch_kind,    /* seed 002: thp_pthread */
	&probe_remote_access_kind,   /* seed 001: remote access cost, every node pair */
	&probe_numa_hinting_kind,    /* seed 004: autonumabench NUMA01 */
	&probe_fragment_kind,        /* seed 001's setting: a fragmented node, another probe inside */
};

const size_t probe_nkinds = sizeof probe_kinds / sizeof probe_kinds[0];

const struct probe_kind *probe_find(const char *name)
{
	for (size_t i = 0; i < probe_nkinds; i++)
		if (!strcmp(probe_kinds[i]->name, name))
			return probe_kinds[i];
	return NULL;
}
