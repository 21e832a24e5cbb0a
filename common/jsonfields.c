#include "common/jsonfields.h"

#include <string.h>

int json_only_fields(const json_t *obj, const char *where, const char *const *allowed, mp_err *e)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)obj, k, v) {
		const char *const *a = allowed;
		while (*a && strcmp(*a, k))
			a++;
		if (!*a)
			return mp_fail(e, MPE_REQUEST_UNKNOWN_FIELD, 0, "unknown field: %s%.64s", where, k);
	}
	return 0;
}
