/* A JSON text writer for answers too large to build as a jansson tree first (a history page of
 * 1000 operations: about 14,000 values that jansson allocated one by one, then dumped and freed;
 * bench/README.md, history.page1000). Appends to one growing buffer; the text is what
 * json_dumps(JSON_COMPACT) makes of the same values, so a client sees no difference.
 *
 * Errors stick: after a failed allocation every call does nothing and jw_finish returns NULL. */
#ifndef MPD_API_JSONW_H
#define MPD_API_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/err.h"

struct jw {
	char *buf;                   /* owned until jw_finish hands it over */
	size_t len, cap;
	bool failed;                 /* an allocation failed: the text is lost */
};

void jw_raw(struct jw *w, const char *s, size_t n);   /* s as it is (punctuation, keys, literals) */
#define jw_lit(w, s) jw_raw((w), (s), sizeof(s) - 1)  /* a string literal */
/* s as a JSON string (quoted and escaped as jansson does); NULL writes null. Text that is not
 * UTF-8 is written as "(not UTF-8)": a hand-edited row must not make the whole page fail. */
void jw_str(struct jw *w, const char *s);
void jw_int(struct jw *w, int64_t v);
void jw_int_or_null(struct jw *w, bool has, int64_t v);
/* An instant's "_at" value (api/instants.c's rule, which a text answer does not pass through):
 * RFC 3339 UTC text, null when has is false. */
void jw_instant_at(struct jw *w, bool has, int64_t ns);
/* Stored JSON text as a value: parsed and dumped again (so a hand-edited row cannot break the
 * answer's syntax); NULL or unparseable text writes null. */
void jw_json_text(struct jw *w, const char *text);
/* The buffer, NUL-terminated (owned by the caller), its length in *len; NULL if anything failed
 * (the buffer is freed then). */
/* Ends a list page begun as `{"<items>":[` with `],"next_cursor":<cursor>}` and makes it rq's
 * answer (200, application/json); cursor (stolen; NULL is out of memory) is cursor_json's. The
 * buffer is handed over or freed either way. 0, or -1 with e (internal.nomem). */
struct req;
int jw_reply_page(struct req *rq, struct jw *w, json_t *cursor, mp_err *e);
char *jw_finish(struct jw *w, size_t *len);
void jw_free(struct jw *w);

#endif
