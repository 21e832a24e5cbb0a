/* Strict members for probe parsers: the type first (400), then the range (422 probe.bad_param),
 * each error naming the member. */
#include "server/probes/probe.h"

#include <errno.h>
#include <string.h>

#include "common/jsonfields.h"
#include "common/parse.h"
#include "server/probes/pwutil.h"

int probe_u64(const json_t *params, const char *key, uint64_t min, uint64_t max, uint64_t def, uint64_t *out,
	      mp_err *e)
{
	json_t *v = json_object_get(params, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"%s\" must be an integer", key);
	if (json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) < min ||
	    (uint64_t)json_integer_value(v) > max)
		return mp_fail(e, MPE_PROBE_BAD_PARAM, EINVAL, "\"%s\" must be from %llu to %llu", key,
			       (unsigned long long)min, (unsigned long long)max);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

int probe_size(const json_t *params, const char *key, uint64_t min, uint64_t max, uint64_t def, uint64_t *out,
	       mp_err *e)
{
	json_t *v = json_object_get(params, key);
	uint64_t kb;

	if (!v) {
		*out = def;
		return 0;
	}
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			goto range;
		*out = (uint64_t)json_integer_value(v);
	} else if (json_is_string(v)) {
		if (strlen(json_string_value(v)) > 32 || parse_size_kb(json_string_value(v), &kb) < 0 ||
		    kb > UINT64_MAX / 1024)
			return mp_fail(e, MPE_PROBE_BAD_PARAM, EINVAL, "\"%s\" is bytes or a size like \"64M\"", key);
		*out = kb * 1024;
	} else {
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"%s\" must be an integer or a string like \"64M\"", key);
	}
	if (*out >= min && *out <= max)
		return 0;
range:
	return mp_fail(e, MPE_PROBE_BAD_PARAM, EINVAL, "\"%s\" must be from %llu to %llu bytes", key,
		       (unsigned long long)min, (unsigned long long)max);
}

int probe_bool(const json_t *params, const char *key, int def, int *out, mp_err *e)
{
	json_t *v = json_object_get(params, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v))
		return mp_fail(e, MPE_REQUEST_WRONG_TYPE, 0, "\"%s\" must be true or false", key);
	*out = json_is_true(v);
	return 0;
}

const char *probe_param_type_name(enum probe_param_type t)
{
	static const char *const names[] = {
		[PROBE_PARAM_INTEGER] = "integer", [PROBE_PARAM_SIZE] = "size", [PROBE_PARAM_BOOLEAN] = "boolean",
		[PROBE_PARAM_STRING] = "string",   [PROBE_PARAM_LIST] = "list", [PROBE_PARAM_OBJECT] = "object",
	};
	return (size_t)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

int probe_params_only(const json_t *params, const struct probe_param *table, mp_err *e)
{
	const char *names[16];
	size_t n = 0;

	for (; table && table->name && n + 1 < sizeof names / sizeof names[0]; table++)
		names[n++] = table->name;
	names[n] = NULL;
	return pp_fields(params, names, e);
}
