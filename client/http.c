#include "client/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/curlapi.h"
#include "client/out.h"
#include "client/query.h"

/* Answers beyond this are not something our daemon sends; refuse rather than grow forever. */
#define MAX_RESPONSE (32 * 1024 * 1024)

struct buf {
	char *data;             /* owned */
	size_t len, cap;
	bool too_big;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;
	size_t add = size * n;

	if (b->len + add > MAX_RESPONSE) {
		b->too_big = true;
		return 0;   /* makes curl fail with CURLE_WRITE_ERROR */
	}
	if (b->len + add + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *d;
		while (cap < b->len + add + 1)
			cap *= 2;
		if (!(d = realloc(b->data, cap)))
			return 0;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, add);
	b->len += add;
	b->data[b->len] = '\0';
	return add;
}

int http_call(struct cli *c, const char *method, const char *path, json_t *body, struct http_result *r)
{
	const struct curlapi *api = c->api;   /* borrowed: set by curlapi_open */
	CURL *h;                        /* borrowed: c->curl, kept for the next request */
	struct curl_slist *hdr = NULL;  /* owned */
	struct buf b = { 0 };
	char url[QUERY_MAX + CLI_URL_MAX + 1], auth[64 + CLI_TOKEN_MAX], errbuf[CURL_ERROR_SIZE] = "", *payload = NULL;   /* payload: owned */
	CURLcode cc;
	long status = 0;
	int rc = -1;

	memset(r, 0, sizeof *r);
	if (snprintf(url, sizeof url, "%s%s", c->url ? c->url : "http://localhost", path) >= (int)sizeof url) {
		snprintf(r->error, sizeof r->error, "request path too long");
		return -1;
	}
	if (!c->curl && !(c->curl = api->easy_init())) {
		snprintf(r->error, sizeof r->error, "cannot initialise libcurl");
		return -1;
	}
	h = c->curl;
	/* Forgets the previous request's options but keeps its connection open for this one. */
	api->easy_reset(h);
	if (c->url) {
		/* Only http and https, no redirects (curl's default): the token goes to this URL only. */
		api->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
		if (c->cacert)
			api->easy_setopt(h, CURLOPT_CAINFO, c->cacert);
	} else {
		api->easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket);
	}
	api->easy_setopt(h, CURLOPT_URL, url);
	api->easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	api->easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	api->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	api->easy_setopt(h, CURLOPT_WRITEDATA, &b);
	api->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	api->easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
	/* Long operations (pool resizes) are jobs; waiting for one holds a request at most 30 s
	 * (?wait=, client/jobview.c), so no single request waits long. */
	api->easy_setopt(h, CURLOPT_TIMEOUT, 120L);
	api->easy_setopt(h, CURLOPT_USERAGENT, "mempolicyctl/" MPD_VERSION);
	hdr = api->slist_append(hdr, "Accept: application/json, application/problem+json");
	/* Only over https (main.c refuses a token with an http URL): checked in cli_transport. */
	if (c->token && c->url) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", c->token);
		hdr = api->slist_append(hdr, auth);
		explicit_bzero(auth, sizeof auth);
	}
	if (body) {
		if (!(payload = json_dumps(body, JSON_COMPACT))) {
			snprintf(r->error, sizeof r->error, "cannot encode the request body");
			goto out;
		}
		hdr = api->slist_append(hdr, "Content-Type: application/json");
		api->easy_setopt(h, CURLOPT_POSTFIELDS, payload);
		api->easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
	} else if (strcmp(method, "GET") != 0) {
		/* PUT/PATCH/DELETE without a body still need curl to send Content-Length: 0. */
		api->easy_setopt(h, CURLOPT_POSTFIELDS, "");
		api->easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
	}
	api->easy_setopt(h, CURLOPT_HTTPHEADER, hdr);

	cc = api->easy_perform(h);
	if (cc != CURLE_OK && !c->url && cc == CURLE_COULDNT_CONNECT) {
		/* curl says "Failed to connect to localhost port 80" of a socket path: the host and
		 * port of the URL it was given, not what was tried. Say why the socket refused. */
		long os_errno = 0;
		api->easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
		snprintf(r->error, sizeof r->error, "%s", os_errno ? strerror((int)os_errno) : "cannot connect to the socket");
		goto out;
	}
	if (cc != CURLE_OK) {
		snprintf(r->error, sizeof r->error, "%s", b.too_big ? "the daemon's answer is too large" :
			 errbuf[0] ? errbuf : api->easy_strerror(cc));
		goto out;
	}
	api->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	r->status = (int)status;
	if (b.len > 0) {
		json_error_t je;
		if (!(r->body = json_loadb(b.data, b.len, 0, &je)))
			snprintf(r->error, sizeof r->error, "the daemon's answer is not JSON: %s", je.text);
	}
	rc = 0;
out:
	/* The handle outlives this call: drop its pointers to our stack and to what is freed here. */
	api->easy_reset(h);
	free(payload);
	free(b.data);
	api->slist_free_all(hdr);
	return rc;
}

void http_result_free(struct http_result *r)
{
	json_decref(r->body);
	r->body = NULL;
}

int http_expect(struct cli *c, const char *method, const char *path, json_t *body, struct http_result *r)
{
	return http_judge(c, http_call(c, method, path, body, r), r);
}

int http_judge(struct cli *c, int called, struct http_result *r)
{
	if (called < 0) {
		out_unreachable(c, r->error);
		http_result_free(r);
		return EXIT_UNREACHABLE;
	}
	if (r->status < 200 || r->status > 299) {
		out_problem(c, r);
		http_result_free(r);
		return EXIT_REFUSED;
	}
	if (!r->body) {
		out_fail(c, "%s (HTTP %d)", r->error[0] ? r->error : "the daemon sent an empty answer", r->status);
		http_result_free(r);
		return EXIT_REFUSED;
	}
	return EXIT_OK;
}

int http_show(struct cli *c, const char *method, const char *path, json_t *body, struct http_result *r)
{
	int rc = http_expect(c, method, path, body, r);

	if (rc == EXIT_OK && c->json) {
		out_json(r->body);
		http_result_free(r);
	}
	return rc;
}
