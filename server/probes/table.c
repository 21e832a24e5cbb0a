/* Every probe kind, one line each. A new kind is a `const struct probe_kind` in its own file
 * here (probe.h) and a line below; the job kind, the route and the child entry follow from it. */
#include "server/probes/probe.h"

#include <string.h>

extern const struct probe_kind probe_touch;

const struct probe_kind *const probe_kinds[] = {
	&probe_touch,                /* the framework's own: touch a region, say where it landed */
};

const size_t probe_nkinds = sizeof probe_kinds / sizeof probe_kinds[0];

const struct probe_kind *probe_find(const char *name)
{
	for (size_t i = 0; i < probe_nkinds; i++)
		if (!strcmp(probe_kinds[i]->name, name))
			return probe_kinds[i];
	return NULL;
}
