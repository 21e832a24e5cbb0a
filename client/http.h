/* How mempolicyctl talks to the daemon: HTTP requests over the Unix socket (or --url) with
 * libcurl, the JSON answer parsed; only `run`'s single self-launch request over the socket goes
 * without libcurl (client/unixreq.h), and its answer is judged here (http_judge). All requests of one command share one curl handle (c->curl),
 * so they share one connection: a job polled ten times a second is not ten connects a second. "No daemon there" and "the daemon said no" are different
 * outcomes (exit 3 and exit 1), so they are told apart here. */
#ifndef MPD_CLIENT_HTTP_H
#define MPD_CLIENT_HTTP_H

#include <jansson.h>

#include "client/cli.h"

struct http_result {
	int status;             /* HTTP status; 0 when no answer came */
	json_t *body;           /* owned: the parsed JSON body (object, problem or not), or NULL */
	char error[512];        /* why no answer came, or why the body did not parse */
};

/* Sends METHOD path (built with client/query.h; it may carry a query) with an optional JSON body (borrowed).
 * Returns 0 when the daemon answered (any status; r->body set when it sent JSON), or -1 when it
 * could not be reached (no socket, connection refused or reset, timeout): r->error says why.
 * Always call http_result_free afterwards. */
int http_call(struct cli *c, const char *method, const char *path, json_t *body, struct http_result *r);
void http_result_free(struct http_result *r);

/* The common path of a command: calls, and on anything but a 2xx prints the error (problem detail
 * and code, or the unreachable message) to stderr. Returns EXIT_OK with r->body a JSON value, or
 * the exit code to return (r is then already freed). */
int http_expect(struct cli *c, const char *method, const char *path, json_t *body, struct http_result *r);

/* The second half of http_expect, for a caller that looks at some answers itself first: called is
 * what http_call returned for r. */
int http_judge(struct cli *c, int called, struct http_result *r);

/* http_expect for a command that prints what it got: under --json the body is printed as it came
 * and freed here, and EXIT_OK returns with r->body NULL, so the caller only renders its table when
 * r->body is set. */
int http_show(struct cli *c, const char *method, const char *path, json_t *body, struct http_result *r);

#endif
