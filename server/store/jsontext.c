/* The compact JSON text of a value, as the store keeps it (see jsontext.h). jansson's json_dumps
 * checks every object and array it enters against the ones it is inside (a "%p" key formatted
 * and put in a hash table, then taken out): a profile.apply's result, about 2.8 kB and some 40
 * containers, took 55 us to dump that way, 3 times in the apply's end commit. Nothing the daemon
 * stores can hold itself (values are built fresh for each row), so here a depth bound stands for
 * that check, and the text is the same byte for byte (tests/unit/test_store_jsontext.c). */
#include "server/store/jsontext.h"

#include "common/jsonstr.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deeper than any value the daemon builds; past it the value is refused as a loop would be. */
#define DEPTH_MAX 512

struct buf {
	char *p;                     /* owned; NULL until the first byte, and after a failed allocation */
	size_t len, cap;
};

/* Room for n more bytes and the final NUL; false (and the buffer freed) when out of memory. */
static bool grow(struct buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 1024;
	char *np;

	while (cap < b->len + n + 1)
		cap *= 2;
	if (!(np = realloc(b->p, cap))) {
		free(b->p);
		*b = (struct buf){ 0 };
		return false;
	}
	b->p = np;
	b->cap = cap;
	return true;
}

static inline bool put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap && !grow(b, n))
		return false;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return true;
}

/* A string as jansson's dump_string writes it without JSON_ENSURE_ASCII or JSON_ESCAPE_SLASH
 * (common/jsonstr.h): runs of bytes that need no escape are copied whole. */
static bool put_string(struct buf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t run = 0;   /* start of the bytes not written yet */

	if (!put(b, "\"", 1))
		return false;
	for (size_t i = 0; i < n;) {
		char esc[8];
		const char *e;

		if (s[i] >= 0x80) {
			size_t l = json_utf8_len(s + i, n - i);
			if (!l)
				return false;   /* jansson refuses it too */
			i += l;
			continue;
		}
		if (json_ascii_plain(s[i])) {
			i++;
			continue;
		}
		e = json_ascii_escape(s[i], esc);
		if (!put(b, str + run, i - run) || !put(b, e, strlen(e)))
			return false;
		run = ++i;
	}
	return put(b, str + run, n - run) && put(b, "\"", 1);
}

/* A real as jansson's jsonp_dtostr prints it with the default precision: "%.17g", then ".0" when
 * that reads as an integer, and the exponent without '+' or leading zeros ("1e+300" is "1e300").
 * The daemon never calls setlocale, so the decimal point is '.'; the unit test compares with
 * jansson on random doubles. */
static bool put_real(struct buf *b, double d)
{
	char t[40], *e;
	int n = snprintf(t, sizeof t, "%.17g", d);

	if (n < 0 || (size_t)n >= sizeof t - 2)
		return false;
	if (!strchr(t, '.') && !strchr(t, 'e')) {
		memcpy(t + n, ".0", 3);
		n += 2;
	}
	if ((e = strchr(t, 'e'))) {
		char *start = e + 1, *end = start + 1;   /* jansson's own steps: "e+07" -> "e7", "e-07" -> "e-7" */
		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start) {
			memmove(start, end, strlen(end) + 1);
			n = (int)strlen(t);
		}
	}
	return put(b, t, (size_t)n);
}

/* An integer in decimal, as "%" JSON_INTEGER_FORMAT prints it (snprintf was a fifth of the time). */
static bool put_int(struct buf *b, json_int_t v)
{
	char num[24], *p = num + sizeof num;
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	return put(b, p, (size_t)(num + sizeof num - p));
}

static bool put_value(struct buf *b, const json_t *v, int depth)
{

	if (depth > DEPTH_MAX)
		return false;
	switch (json_typeof(v)) {
	case JSON_NULL:
		return put(b, "null", 4);
	case JSON_TRUE:
		return put(b, "true", 4);
	case JSON_FALSE:
		return put(b, "false", 5);
	case JSON_INTEGER:
		return put_int(b, json_integer_value(v));
	case JSON_REAL:
		return put_real(b, json_real_value(v));
	case JSON_STRING:
		return put_string(b, json_string_value(v), json_string_length(v));
	case JSON_ARRAY: {
		size_t i;
		const json_t *x;

		if (!put(b, "[", 1))
			return false;
		json_array_foreach(v, i, x)
			if ((i && !put(b, ",", 1)) || !put_value(b, x, depth + 1))
				return false;
		return put(b, "]", 1);
	}
	case JSON_OBJECT: {
		const char *k;
		size_t kn;
		const json_t *x;
		bool first = true;

		if (!put(b, "{", 1))
			return false;
		json_object_keylen_foreach((json_t *)v, k, kn, x) {
			if ((!first && !put(b, ",", 1)) || !put_string(b, k, kn) || !put(b, ":", 1) ||
			    !put_value(b, x, depth + 1))
				return false;
			first = false;
		}
		return put(b, "}", 1);
	}
	}
	return false;
}

char *store_json_text(const json_t *v)
{
	struct buf b = { 0 };

	if (!v || !grow(&b, 2048) || !put_value(&b, v, 0)) {
		free(b.p);
		return NULL;
	}
	b.p[b.len] = '\0';
	return b.p;
}
