/* A JSON text writer for answers too large to build as a jansson tree first (a history page of
 * 1000 operations: about 14,000 values that jansson allocated one by one, then dumped and freed;
 * bench/README.md, history.page1000): the writer of common/jtext.h, and what only answers write
 * (instants, stored JSON as a value, the end of a list page). */
#ifndef MPD_API_JSONW_H
#define MPD_API_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/err.h"
#include "common/jtext.h"

void jw_int_or_null(struct jw *w, bool has, int64_t v);
/* An instant's "_at" value (api/instants.c's rule, which a text answer does not pass through):
 * RFC 3339 UTC text, null when has is false. */
void jw_instant_at(struct jw *w, bool has, int64_t ns);
/* Stored JSON text as a value: parsed and dumped again (so a hand-edited row cannot break the
 * answer's syntax); NULL or unparseable text writes null. */
void jw_json_text(struct jw *w, const char *text);
/* Ends a list page begun as `{"<items>":[` with `],"next_cursor":<cursor>}` and makes it rq's
 * answer (200, application/json); cursor (stolen; NULL is out of memory) is cursor_json's. The
 * buffer is handed over or freed either way. 0, or -1 with e (internal.nomem). */
struct req;
int jw_reply_page(struct req *rq, struct jw *w, json_t *cursor, mp_err *e);

#endif
