#include "server/api/jsonw.h"

#include "server/api/api.h"

#include <inttypes.h>
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

/* The length of the UTF-8 sequence at s (1 to 4), or 0 when it is not one (overlong forms,
 * surrogates and code points past U+10FFFF are not, as for jansson). */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0], cp;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c < 0xc2 || c > 0xf4)
		return 0;
	n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
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

void jw_str(struct jw *w, const char *s)
{
	size_t start = w->len;
	const char *run;
	size_t len;

	if (!s) {
		jw_lit(w, "null");
		return;
	}
	/* Most strings (every one of a knob's answer) need no escape: one copy between the quotes.
	 * Written piece by piece, the ten strings of a knob GET were 30 appends. */
	len = strlen(s);
	if (plain_len(s, len) == len) {
		if (!room(w, len + 2))
			return;
		w->buf[w->len] = '"';
		memcpy(w->buf + w->len + 1, s, len);
		w->buf[w->len + 1 + len] = '"';
		w->len += len + 2;
		return;
	}
	jw_lit(w, "\"");
	/* One pass that copies plain runs whole and checks UTF-8 only where a byte is past ASCII: a
	 * knob's answer is mostly such runs (its description and path), and escaping it byte by
	 * byte after a separate UTF-8 pass was a tenth of the user-space CPU of a knob GET. */
	for (run = s;;) {
		unsigned char c = (unsigned char)*s;
		char esc[8];
		const char *e = NULL;
		size_t n;

		if (plain[c]) {
			s++;
			continue;
		}
		if (c >= 0x80) {
			if (!(n = utf8_len((const unsigned char *)s))) {
				w->len = start;   /* what was written of it is dropped */
				jw_lit(w, "\"(not UTF-8)\"");
				return;
			}
			s += n;
			continue;
		}
		jw_raw(w, run, (size_t)(s - run));   /* the plain run before this byte */
		if (!c)
			break;
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
		run = ++s;
	}
	jw_lit(w, "\"");
}

void jw_int(struct jw *w, int64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof num, "%" PRId64, v);

	jw_raw(w, num, (size_t)n);
}

void jw_int_or_null(struct jw *w, bool has, int64_t v)
{
	if (has)
		jw_int(w, v);
	else
		jw_lit(w, "null");
}

void jw_instant_at(struct jw *w, bool has, int64_t ns)
{
	char at[48];

	if (has && api_instant_text(ns, at, sizeof at) == 0)
		jw_str(w, at);
	else
		jw_lit(w, "null");
}

void jw_json_text(struct jw *w, const char *text)
{
	json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
	char *t = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

	if (v && !t)
		w->failed = true;
	if (t)
		jw_raw(w, t, strlen(t));
	else
		jw_lit(w, "null");
	free(t);
	json_decref(v);
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
}

int jw_reply_page(struct req *rq, struct jw *w, json_t *cursor, mp_err *e)
{
	char *ctext = cursor ? json_dumps(cursor, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	char *text;
	size_t len;

	json_decref(cursor);
	if (!ctext) {
		jw_free(w);
		return mp_nomem(e);
	}
	jw_lit(w, "],\"next_cursor\":");
	jw_raw(w, ctext, strlen(ctext));
	free(ctext);
	jw_lit(w, "}");
	if (!(text = jw_finish(w, &len)))
		return mp_nomem(e);
	return req_reply_text(rq, text, len, "application/json");
}
