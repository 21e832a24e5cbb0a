/* The text the store binds for a JSON column (request, progress, result, action): what
 * json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) returns, byte for byte, written without jansson's
 * check for a value that contains itself (jsontext.c says why; a value nested past a depth no
 * daemon value reaches is refused instead). */
#ifndef MPD_STORE_JSONTEXT_H
#define MPD_STORE_JSONTEXT_H

#include <jansson.h>

/* The text (owned by the caller, free()), or NULL: out of memory, a string that is not UTF-8, a
 * value nested too deep (json_dumps fails on the first two as well). */
char *store_json_text(const json_t *v);

#endif
