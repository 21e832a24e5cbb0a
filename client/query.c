#include "client/query.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Appends n bytes, or marks the query unusable if they do not fit: all or nothing, so a value is
 * never cut short. */
static void put(struct query *q, const char *s, size_t n)
{
	if (q->too_long)
		return;
	if (n > QUERY_MAX - q->len) {
		q->too_long = true;
		return;
	}
	memcpy(q->buf + q->len, s, n);
	q->len += n;
	q->buf[q->len] = '\0';
}

/* RFC 3986 unreserved characters stay as they are, every other byte becomes %XX. A segment of
 * only dots is encoded too: curl would otherwise resolve "." and ".." and send another path. */
static void put_escaped(struct query *q, const char *s, bool segment)
{
	static const char hex[] = "0123456789ABCDEF";
	bool dots = segment && s[0] && strspn(s, ".") == strlen(s);

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			     ch == '-' || ch == '_' || ch == '~' || (ch == '.' && !dots);
		char enc[3] = { '%', hex[ch >> 4], hex[ch & 15] };
		if (plain)
			put(q, (const char *)&ch, 1);
		else
			put(q, enc, 3);
	}
}

void query_init(struct query *q, const char *prefix)
{
	q->len = 0;
	q->buf[0] = '\0';
	q->too_long = false;
	q->has_args = false;
	put(q, prefix, strlen(prefix));
}

void query_segment(struct query *q, const char *seg)
{
	/* A segment after the query has begun would land inside a value: a bug of ours, refused. */
	if (q->has_args) {
		q->too_long = true;
		return;
	}
	put(q, "/", 1);
	put_escaped(q, seg, true);
}

void query_segment_u64(struct query *q, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof num, "%" PRIu64, v);
	query_segment(q, num);
}

void query_arg(struct query *q, const char *key, const char *val)
{
	if (!val)
		return;
	put(q, q->has_args ? "&" : "?", 1);
	q->has_args = true;
	put_escaped(q, key, false);
	put(q, "=", 1);
	put_escaped(q, val, false);
}

void query_arg_u64(struct query *q, const char *key, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof num, "%" PRIu64, v);
	query_arg(q, key, num);
}

const char *query_path(const struct query *q)
{
	return q->too_long ? NULL : q->buf;
}
