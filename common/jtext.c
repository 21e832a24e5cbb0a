#include "common/jtext.h"

#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and a NUL. */
static bool room(struct jw *w, size_t n)
{
	char *nb;
	size_t cap;

	if (w->failed)
		return false;
	if (w->len + n + 1 <= w->cap)
		return true;
	/* First 1 KiB: a single knob's answer (about 270 bytes) then fits a block glibc's per-thread
	 * cache serves (requests up to 1032 bytes); 4 KiB went through the arena's bins for every GET. */
	for (cap = w->cap ? w->cap : 1024; cap < w->len + n + 1; cap *= 2)
		;
	if (!(nb = realloc(w->buf, cap))) {
		w->failed = true;
		return false;
	}
	w->buf = nb;
	w->cap = cap;
	return true;
}

void jw_raw(struct jw *w, const char *s, size_t n)
{
	if (!room(w, n))
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

/* The length of the UTF-8 sequence at s, of the n bytes left (1 to 4), or 0 when it is not one
 * (overlong forms, surrogates and code points past U+10FFFF are not, as for jansson). */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	unsigned c = s[0], cp;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c < 0xc2 || c > 0xf4)
		return 0;
	n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	if (n > left)
		return 0;
	cp = c & (0x3f >> (n - 1));
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Bytes that go out as they are inside a JSON string (jansson escapes only these two and the
 * control characters below 0x20; DEL goes out as it is). */
static const bool plain[256] = {
	[0x20 ... '"' - 1] = true,
	['"' + 1 ... '\\' - 1] = true,
	['\\' + 1 ... 0x7f] = true,
};

/* Whether the 8 bytes at s are all plain[] (no control byte, quote, backslash or byte past
 * ASCII), a word at a time: the zero-byte test on x, x ^ '"'... and x ^ '\\'..., and the
 * less-than-0x20 test on x. The lowest byte that is not plain always sets its high bit (no borrow
 * reaches it from below); a borrow may flag a plain byte above it, which only makes the caller
 * look at the word byte by byte. */
static bool plain8(const char *s)
{
	const uint64_t ones = 0x0101010101010101ull, highs = ones * 0x80;
	uint64_t x, q, b;

	memcpy(&x, s, sizeof x);
	q = x ^ (ones * '"');
	b = x ^ (ones * '\\');
	return !((x | ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs);
}

/* How many of the n bytes at s are plain[] before the first that is not. */
static size_t plain_len(const char *s, size_t n)
{
	size_t i = 0;

	while (n - i >= 8 && plain8(s + i))
		i += 8;
	while (i < n && plain[(unsigned char)s[i]])
		i++;
	return i;
}

/* The n bytes at s as a JSON string; false, with nothing of it written, when they are not UTF-8. */
static bool put_str(struct jw *w, const char *s, size_t n)
{
	size_t start = w->len, i, run;

	/* Most strings (every one of a knob's answer) need no escape: one copy between the quotes.
	 * Written piece by piece, the ten strings of a knob GET were 30 appends. */
	if (plain_len(s, n) == n) {
		if (!room(w, n + 2))
			return true;
		w->buf[w->len] = '"';
		memcpy(w->buf + w->len + 1, s, n);
		w->buf[w->len + 1 + n] = '"';
		w->len += n + 2;
		return true;
	}
	jw_lit(w, "\"");
	/* One pass that copies plain runs whole and checks UTF-8 only where a byte is past ASCII: a
	 * knob's answer is mostly such runs (its description and path), and escaping it byte by
	 * byte after a separate UTF-8 pass was a tenth of the user-space CPU of a knob GET. */
	for (i = run = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];
		const char *e = NULL;
		size_t u;

		if (plain[c]) {
			i++;
			continue;
		}
		if (c >= 0x80) {
			if (!(u = utf8_len((const unsigned char *)s + i, n - i))) {
				w->len = start;   /* what was written of it is dropped */
				return false;
			}
			i += u;
			continue;
		}
		jw_raw(w, s + run, i - run);   /* the plain run before this byte */
		switch (c) {
		case '"':  e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		default:
			snprintf(esc, sizeof esc, "\\u%04X", c);   /* jansson's form */
			e = esc;
		}
		jw_raw(w, e, strlen(e));
		run = ++i;
	}
	jw_raw(w, s + run, n - run);
	jw_lit(w, "\"");
	return true;
}

void jw_str(struct jw *w, const char *s)
{
	if (!s)
		jw_lit(w, "null");
	else if (!put_str(w, s, strlen(s)))
		jw_lit(w, "\"(not UTF-8)\"");
}

void jw_int(struct jw *w, int64_t v)
{
	char num[24], *p = num + sizeof num;
	/* Unsigned, so that INT64_MIN negates. */
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	jw_raw(w, p, (size_t)(num + sizeof num - p));
}

/* jansson's real (jsonp_dtostr): "%.17g", the locale's decimal point made '.', a ".0" where that
 * looks like an integer, the exponent without '+' or leading zeros. */
static void put_real(struct jw *w, double d)
{
	char num[40], *p;
	const char *point = localeconv()->decimal_point;
	int n = snprintf(num, sizeof num, "%.17g", d);

	if (n < 0 || (size_t)n + 3 >= sizeof num) {
		w->failed = true;
		return;
	}
	if (*point != '.' && (p = strchr(num, *point)))
		*p = '.';
	if (!strchr(num, '.') && !strchr(num, 'e')) {
		memcpy(num + n, ".0", 3);
		n += 2;
	}
	if ((p = strchr(num, 'e'))) {
		char *start = p + 1, *end = start + 1;
		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start)
			memmove(start, end, strlen(end) + 1);
		n = (int)strlen(num);
	}
	jw_raw(w, num, (size_t)n);
}

static void put_value(struct jw *w, const json_t *v, int depth)
{
	if (w->failed)
		return;
	if (depth > JTEXT_MAX_DEPTH) {
		w->failed = true;
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		bool first = true;
		jw_lit(w, "{");
		for (void *it = json_object_iter((json_t *)v); it && !w->failed;
		     it = json_object_iter_next((json_t *)v, it), first = false) {
			if (!first)
				jw_lit(w, ",");
			if (!put_str(w, json_object_iter_key(it), json_object_iter_key_len(it)))
				w->failed = true;
			jw_lit(w, ":");
			put_value(w, json_object_iter_value(it), depth + 1);
		}
		jw_lit(w, "}");
		return;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(v);
		jw_lit(w, "[");
		for (size_t i = 0; i < n && !w->failed; i++) {
			if (i)
				jw_lit(w, ",");
			put_value(w, json_array_get(v, i), depth + 1);
		}
		jw_lit(w, "]");
		return;
	}
	case JSON_STRING:
		if (!put_str(w, json_string_value(v), json_string_length(v)))
			w->failed = true;
		return;
	case JSON_INTEGER:
		jw_int(w, json_integer_value(v));
		return;
	case JSON_REAL:
		put_real(w, json_real_value(v));
		return;
	case JSON_TRUE:
		jw_lit(w, "true");
		return;
	case JSON_FALSE:
		jw_lit(w, "false");
		return;
	default:
		jw_lit(w, "null");
	}
}

void jw_value(struct jw *w, const json_t *v)
{
	if (!v)
		w->failed = true;   /* json_dumps(NULL) is NULL too */
	else
		put_value(w, v, 0);
}

char *jw_finish(struct jw *w, size_t *len)
{
	char *out;

	if (!room(w, 0)) {
		jw_free(w);
		return NULL;
	}
	w->buf[w->len] = '\0';
	out = w->buf;
	if (len)
		*len = w->len;
	w->buf = NULL;
	w->len = w->cap = 0;
	return out;
}

void jw_free(struct jw *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
	w->failed = false;
}

char *jtext_dump(const json_t *v, size_t flags, size_t *len)
{
	struct jw w = { 0 };

	if ((flags & ~(size_t)JSON_ENCODE_ANY) != JSON_COMPACT)
		return NULL;
	if (!v || (!(flags & JSON_ENCODE_ANY) && !json_is_object(v) && !json_is_array(v)))
		return NULL;
	jw_value(&w, v);
	return jw_finish(&w, len);
}
