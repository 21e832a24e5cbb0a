/* JSON text written straight into one growing buffer, byte for byte what jansson's
 * json_dumps(JSON_COMPACT) writes for the same values, so that a client or a stored row sees no
 * difference from the text jansson made before.
 *
 * Two uses: answers and pages written value by value without building a jansson tree first
 * (server/api/jsonw.h), and jansson trees dumped faster than json_dumps, which formats each
 * container's address and enters it in a hash table to detect cycles (about half its time for a
 * profile.apply job's 4 kB of small objects: bench/README.md section 18). The trees this daemon
 * builds are acyclic by construction; a tree nested deeper than JTEXT_MAX_DEPTH (a cycle among
 * them) fails as json_dumps fails on a cycle.
 *
 * Errors stick: after a failed allocation, or a string that is not UTF-8 in jt_value, every call
 * does nothing and jw_finish returns NULL. */
#ifndef MPD_JTEXT_H
#define MPD_JTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define JTEXT_MAX_DEPTH 2048

struct jw {
	char *buf;                   /* owned until jw_finish hands it over */
	size_t len, cap;
	bool failed;                 /* an allocation failed, or a value could not be written */
};

void jw_raw(struct jw *w, const char *s, size_t n);   /* s as it is (punctuation, keys, literals) */
#define jw_lit(w, s) jw_raw((w), (s), sizeof(s) - 1)  /* a string literal */
/* s as a JSON string (quoted and escaped as jansson does); NULL writes null. Text that is not
 * UTF-8 is written as "(not UTF-8)": a hand-edited row must not make the whole page fail. */
void jw_str(struct jw *w, const char *s);
void jw_int(struct jw *w, int64_t v);
/* A jansson value as json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) writes it. A string that is
 * not UTF-8 (only a json_string_nocheck makes one) fails the writer, as it fails json_dumps. */
void jw_value(struct jw *w, const json_t *v);
/* The buffer, NUL-terminated (owned by the caller), its length in *len; NULL if anything failed
 * (the buffer is freed then). */
char *jw_finish(struct jw *w, size_t *len);
void jw_free(struct jw *w);

/* json_dumps(v, flags) for flags JSON_COMPACT, optionally with JSON_ENCODE_ANY (any other flag is
 * refused: NULL), in a buffer the caller frees; *len (when not NULL) its length. NULL where
 * json_dumps gives NULL: no memory, a string that is not UTF-8, a root that is neither an object
 * nor an array without JSON_ENCODE_ANY, a cycle. */
char *jtext_dump(const json_t *v, size_t flags, size_t *len);

#endif
