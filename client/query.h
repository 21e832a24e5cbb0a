/* The one way mempolicyctl builds a request path: fixed segments, escaped path segments and query
 * arguments into one bounded buffer. Whatever does not fit makes the whole path unusable (never a
 * shorter path, never a dropped filter): the command then refuses with a usage error. No I/O, so
 * tests/unit/test_cli_query.c checks it directly. */
#ifndef MPD_CLIENT_QUERY_H
#define MPD_CLIENT_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Path plus query, without the NUL. Generous for every filter the daemon knows; a path longer
 * than this is a mistake on the command line, not a request worth sending. */
#define QUERY_MAX 2047

struct query {
	char buf[QUERY_MAX + 1];   /* the path so far, always NUL-terminated */
	size_t len;
	bool too_long;             /* sticky: something did not fit, and buf must not be sent */
	bool has_args;             /* a '?' has been written: the next argument starts with '&' */
};

/* Starts a path with a fixed prefix such as "/v1/jobs" (not escaped: it is ours, not the user's). */
void query_init(struct query *q, const char *prefix);
/* Appends "/" and seg percent-encoded (a '/' in seg cannot reach another resource). */
void query_segment(struct query *q, const char *seg);
void query_segment_u64(struct query *q, uint64_t v);
/* Appends "?key=value" or "&key=value", value percent-encoded; nothing when val is NULL. */
void query_arg(struct query *q, const char *key, const char *val);
void query_arg_u64(struct query *q, const char *key, uint64_t v);
/* The finished path, or NULL when something did not fit. */
const char *query_path(const struct query *q);

#endif
