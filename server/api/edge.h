/* The strict edge: what libmicrohttpd lets through but the daemon refuses before routing.
 *
 * libmicrohttpd decodes %XX in the path and in query arguments before the application sees them,
 * so "/v1/knobs/thp.enabled%00.x" reached the router as "thp.enabled" and "%2F" became a path
 * separator. The daemon installs edge_no_unescape() so it receives the raw text, and decodes it
 * here under one rule: a malformed escape, a NUL or other control character, an escaped '/' in a
 * path segment, a repeated query parameter, a header with a NUL, several Hosts, conflicting
 * Content-Lengths, Content-Length with Transfer-Encoding, or a transfer coding other than chunked
 * is refused, never interpreted. Which framing cases libmicrohttpd itself decides is in DESIGN. */
#ifndef MPD_API_EDGE_H
#define MPD_API_EDGE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

struct MHD_Connection;
struct req;

/* MHD_OPTION_UNESCAPE_CALLBACK: leaves s as sent (returns its length). */
size_t edge_no_unescape(void *cls, struct MHD_Connection *c, char *s);

/* Decodes the raw request path into out (len bytes); 0, or -1 with request.bad_path. */
int edge_decode_path(const char *raw, char *out, size_t len, mp_err *e);

/* Headers: NULs, Host (required for HTTP/1.1, at most one; over TCP one of the listener's names
 * in allowed_hosts, NULL-terminated; allowed_hosts NULL: any Host, as on the TLS listener), Origin / Sec-Fetch-Site of a browser's cross-site request,
 * and the body's framing. 0, or -1 with the problem. */
int edge_check_headers(struct MHD_Connection *conn, const char *version, bool tcp,
		       const char *const *allowed_hosts, mp_err *e);

/* Decodes every query argument into rq->query (owned); refuses malformed escapes, control
 * characters, repeated keys and more than API_MAX_QUERY arguments (request.bad_query /
 * request.duplicate_query). */
int edge_decode_query(struct MHD_Connection *conn, struct req *rq, mp_err *e);

/* A JSON body that holds a negative zero ("-0", "-0.0", "-0e5"), outside strings: jansson reads
 * it as 0, so it would pass as a valid count. */
bool edge_json_has_negative_zero(const char *body, size_t len);

/* A Content-Type's parameters after the media type, from the first ';' (RFC 9110: `*( OWS ";"
 * OWS [ name=value ] )`, a value a token or a quoted string): true when they are well-formed and
 * any charset among them is UTF-8 (any case). The body is read as UTF-8 and nothing else. */
bool edge_charset_utf8(const char *params);

#endif
