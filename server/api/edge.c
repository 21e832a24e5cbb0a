#include "server/api/edge.h"

#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/api/api.h"

size_t edge_no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes n bytes of s into out (size len, NUL-terminated). Refuses what no name, value
 * or path segment of this API can hold: malformed escapes, control characters and DEL (a NUL
 * would cut the text short in C), and, in a path, an escaped '/' (a separator smuggled into a
 * segment). Returns the decoded length, or -1 with *why set. */
static long decode(const char *s, size_t n, bool path, char *out, size_t len, const char **why)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%') {
			int hi = i + 2 < n ? hexval(s[i + 1]) : -1, lo = i + 2 < n ? hexval(s[i + 2]) : -1;
			if (hi < 0 || lo < 0) {
				*why = "a '%' not followed by two hex digits";
				return -1;
			}
			c = (unsigned char)(hi << 4 | lo);
			i += 2;
			if (path && c == '/') {
				*why = "an escaped '/' (%2F) inside a path segment";
				return -1;
			}
		}
		if (c < 0x20 || c == 0x7f) {
			*why = c ? "a control character" : "a NUL (%00)";
			return -1;
		}
		if (o + 1 >= len) {
			*why = "text too long";
			return -1;
		}
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return (long)o;
}

int edge_decode_path(const char *raw, char *out, size_t len, mp_err *e)
{
	const char *why = NULL;

	if (decode(raw, strlen(raw), true, out, len, &why) < 0)
		return mp_fail(e, MPE_REQUEST_BAD_PATH, 0, "the path holds %s", why);
	return 0;
}

/* ---- headers -------------------------------------------------------------------------------- */

struct hdr_scan {
	bool nul;                     /* a header name or value holds a NUL */
	int hosts;
	const char *host;             /* borrowed from MHD */
	int lengths;
	const char *length;
	bool length_conflict;         /* two Content-Lengths that differ */
	int codings;
	const char *coding;
	const char *origin;
	const char *fetch_site;
};

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
				   const char *value, size_t value_size)
{
	struct hdr_scan *h = cls;
	(void)kind;

	if (strlen(key) != key_size || (value && strlen(value) != value_size))
		h->nul = true;
	if (!value)
		return MHD_YES;
	if (!strcasecmp(key, MHD_HTTP_HEADER_HOST)) {
		h->hosts++;
		h->host = value;
	} else if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
		if (h->lengths++ && strcmp(h->length, value))
			h->length_conflict = true;
		h->length = value;
	} else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		h->codings++;
		h->coding = value;
	} else if (!strcasecmp(key, MHD_HTTP_HEADER_ORIGIN)) {
		h->origin = value;
	} else if (!strcasecmp(key, "Sec-Fetch-Site")) {
		h->fetch_site = value;
	}
	return MHD_YES;
}

static bool host_allowed(const char *host, const char *const *allowed)
{
	for (; allowed && *allowed; allowed++)
		if (!strcasecmp(host, *allowed))
			return true;
	return false;
}

/* "http://127.0.0.1:8700" -> is "127.0.0.1:8700" an allowed host? */
static bool origin_allowed(const char *origin, const char *const *allowed)
{
	const char *p = strstr(origin, "://");
	return p && host_allowed(p + 3, allowed);
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

int edge_check_headers(struct MHD_Connection *conn, const char *version, bool tcp,
		       const char *const *allowed_hosts, mp_err *e)
{
	struct hdr_scan h = { 0 };

	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, scan_header, &h);
	if (h.nul)
		return mp_fail(e, MPE_REQUEST_BAD_HEADER, 0, "a header holds a NUL byte");
	if (h.hosts > 1)
		return mp_fail(e, MPE_REQUEST_BAD_HEADER, 0, "more than one Host header");
	if (!h.hosts && !strcmp(version, MHD_HTTP_VERSION_1_1))
		return mp_fail(e, MPE_REQUEST_MISSING_HOST, 0, "an HTTP/1.1 request needs a Host header");
	if (h.length_conflict)
		return mp_fail(e, MPE_REQUEST_BAD_FRAMING, 0, "two Content-Length headers that differ");
	if (h.lengths && !all_digits(h.length))
		return mp_fail(e, MPE_REQUEST_BAD_FRAMING, 0, "Content-Length is not a decimal number");
	if (h.codings && h.lengths)
		/* RFC 9112 6.3: a proxy could frame the body by either; the bytes after the shorter one
		 * would be read as a second request. */
		return mp_fail(e, MPE_REQUEST_BAD_FRAMING, 0, "Content-Length together with Transfer-Encoding");
	if (h.codings > 1 || (h.codings && strcasecmp(h.coding, "chunked")))
		return mp_fail(e, MPE_REQUEST_UNSUPPORTED_TRANSFER_ENCODING, 0,
			       "the only transfer coding understood is chunked");
	/* A page in a browser can reach a loopback listener under any name it controls (DNS
	 * rebinding): over TCP the Host must be one of the listener's own names. The Unix socket
	 * is out of a browser's reach; curl and libcurl send "localhost" there. The TLS listener
	 * passes no names (NULL): a rebound name would not match its certificate, and every request
	 * on it needs a token, so any Host is taken there (and any Origin refused). */
	if (tcp && h.hosts && allowed_hosts && !host_allowed(h.host, allowed_hosts))
		return mp_fail(e, MPE_REQUEST_MISDIRECTED, 0, "Host '%.64s' is not a name of this listener", h.host);
	if ((h.origin && !(tcp && origin_allowed(h.origin, allowed_hosts))) ||
	    (h.fetch_site && strcmp(h.fetch_site, "same-origin") && strcmp(h.fetch_site, "none")))
		return mp_fail(e, MPE_AUTH_CROSS_ORIGIN, 0, "a browser's cross-origin request is refused");
	return 0;
}

/* ---- query ---------------------------------------------------------------------------------- */

struct query_scan {
	struct req *rq;
	mp_err *e;
	int failed;
};

static enum MHD_Result take_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
				const char *value, size_t value_size)
{
	struct query_scan *q = cls;
	struct req *rq = q->rq;
	char k[128], v[API_MAX_URL + 1];
	const char *why = NULL;
	(void)kind;

	if (decode(key, key_size, false, k, sizeof k, &why) < 0 ||
	    (value && decode(value, value_size, false, v, sizeof v, &why) < 0)) {
		q->failed = mp_fail(q->e, MPE_REQUEST_BAD_QUERY, 0, "a query argument holds %s", why);
		return MHD_NO;
	}
	for (int i = 0; i < rq->nquery; i++)
		if (!strcmp(rq->query[i].key, k)) {
			/* ?dry_run=false&dry_run=true: no rule picks one without surprising somebody. */
			q->failed = mp_fail(q->e, MPE_REQUEST_DUPLICATE_QUERY, 0,
					    "query parameter '%.64s' is given more than once", k);
			return MHD_NO;
		}
	if (rq->nquery == API_MAX_QUERY) {
		q->failed = mp_fail(q->e, MPE_REQUEST_BAD_QUERY, 0, "more than %d query arguments", API_MAX_QUERY);
		return MHD_NO;
	}
	rq->query[rq->nquery].key = strdup(k);
	rq->query[rq->nquery].value = strdup(value ? v : "");
	if (!rq->query[rq->nquery].key || !rq->query[rq->nquery].value) {
		free(rq->query[rq->nquery].key);
		free(rq->query[rq->nquery].value);
		q->failed = mp_nomem(q->e);
		return MHD_NO;
	}
	rq->nquery++;
	return MHD_YES;
}

int edge_decode_query(struct MHD_Connection *conn, struct req *rq, mp_err *e)
{
	struct query_scan q = { rq, e, 0 };

	MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, take_arg, &q);
	return q.failed;
}

bool edge_json_has_negative_zero(const char *body, size_t len)
{
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		char c = body[i];
		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
		} else if (c == '"') {
			in_string = true;
		} else if (c == '-' && i + 1 < len && body[i + 1] == '0') {
			size_t j = i + 2;
			bool nonzero = false;
			/* -0, -0.000, -0e7 are zero; -0.5 is not. */
			if (j < len && body[j] == '.')
				for (j++; j < len && body[j] >= '0' && body[j] <= '9'; j++)
					nonzero |= body[j] != '0';
			if (!nonzero)
				return true;
		}
	}
	return false;
}

bool edge_charset_utf8(const char *p)
{
	while (*p == ';') {
		const char *name, *val;
		size_t nlen, vlen;

		p++;
		p += strspn(p, " \t");
		if (*p == ';' || !*p)
			continue;   /* an empty parameter is allowed */
		name = p;
		nlen = strcspn(p, "=; \t\"");
		p += nlen;
		if (!nlen || *p != '=')
			return false;
		if (*++p == '"') {
			val = ++p;
			vlen = strcspn(p, "\"");
			if (p[vlen] != '"')
				return false;
			p += vlen + 1;
		} else {
			val = p;
			vlen = strcspn(p, "; \t\"");
			if (!vlen)
				return false;
			p += vlen;
		}
		p += strspn(p, " \t");
		if (nlen == 7 && !strncasecmp(name, "charset", 7) && !(vlen == 5 && !strncasecmp(val, "utf-8", 5)))
			return false;
	}
	return *p == '\0';
}
