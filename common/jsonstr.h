/* jansson's rules for the text of a JSON string (dump.c, utf.c), for the daemon's own writers of
 * the text json_dumps(JSON_COMPACT) makes: store/jsontext.c (the stored JSON columns). One place
 * for them, so that the writers cannot drift apart from each other or from jansson. */
#ifndef MPD_JSONSTR_H
#define MPD_JSONSTR_H

#include <stdbool.h>
#include <stddef.h>

/* The length (2 to 4) of the UTF-8 sequence of a byte past ASCII at s, within the n bytes there;
 * 0 when it is not one jansson accepts: an overlong form, a surrogate, past U+10FFFF, cut short. */
size_t json_utf8_len(const unsigned char *s, size_t n);

/* Whether jansson writes the ASCII byte c inside a string as it is (all but '"', '\\' and the
 * control characters; DEL too goes out as it is). Inline: writers ask it for every byte. */
static inline bool json_ascii_plain(unsigned char c)
{
	return c >= 0x20 && c != '"' && c != '\\';
}

/* How jansson writes the ASCII byte c inside a string, without JSON_ESCAPE_SLASH: NULL when as it
 * is, else its escape ("\\\"", "\\n", ... "\\u001F"), possibly written into buf. */
const char *json_ascii_escape(unsigned char c, char buf[8]);

#endif
