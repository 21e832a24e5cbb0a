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
/* The buffer, NUL-terminated (owned by the caller), its length in *len; NULL if anything failed
 * (the buffer is freed then). */
char *jw_finish(struct jw *w, size_t *len);
void jw_free(struct jw *w);

#endif
