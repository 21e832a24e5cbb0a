/* The one "only these members" check for JSON objects from clients (bodies and their nested
 * objects): an unknown member is 400 request.unknown_field naming it, prefixed by where it sits
 * ("action.", "policy.", "" at the top). */
#ifndef MPD_JSONFIELDS_H
#define MPD_JSONFIELDS_H

#include <jansson.h>

#include "common/err.h"

/* allowed is NULL-terminated; obj is an object (the caller checked). 0, or -1 with e filled. */
int json_only_fields(const json_t *obj, const char *where, const char *const *allowed, mp_err *e);

#endif
