#include "client/unixreq.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

/* As client/http.c's libcurl options: 5 s to connect, 120 s for the answer. */
#define CONNECT_TIMEOUT_S 5
#define ANSWER_TIMEOUT_S  120

/* r->error: what, then the errno's text when err (either may be absent); -1. */
static int fail(struct http_result *r, const char *what, int err)
{
	snprintf(r->error, sizeof r->error, "%s%s%s", what ? what : "", what && err ? ": " : "", err ? strerror(err) : "");
	return -1;
}

/* The value of header name (case-insensitive) in the header block hdr..end, or NULL. */
static const char *header(const char *hdr, const char *end, const char *name, size_t *vlen)
{
	size_t n = strlen(name);

	for (const char *p = hdr; p < end;) {
		const char *eol = memchr(p, '\r', (size_t)(end - p));
		if (!eol)
			eol = end;
		if ((size_t)(eol - p) > n && p[n] == ':' && !strncasecmp(p, name, n)) {
			const char *v = p + n + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			*vlen = (size_t)(eol - v);
			return v;
		}
		p = eol + 2;
	}
	return NULL;
}

int unixreq_parse(const char *buf, size_t len, struct http_result *r)
{
	const char *hdr_end = memmem(buf, len, "\r\n\r\n", 4), *line_end, *v;
	size_t body_len, vlen;
	char num[24];
	int status;

	memset(r, 0, sizeof *r);
	/* "HTTP/1.x NNN reason" */
	if (len < 13 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ' || !hdr_end || (buf[12] != ' ' && buf[12] != '\r') ||
	    !isdigit((unsigned char)buf[9]) || !isdigit((unsigned char)buf[10]) || !isdigit((unsigned char)buf[11]) ||
	    (status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0')) < 100 || status > 599)
		return fail(r, "the daemon's answer is not HTTP", 0);
	line_end = memchr(buf, '\r', len);
	if ((v = header(line_end + 2, hdr_end, "Transfer-Encoding", &vlen)) && !(vlen == 8 && !strncasecmp(v, "identity", 8)))
		return fail(r, "the daemon's answer is chunked (not expected of it)", 0);
	body_len = len - (size_t)(hdr_end + 4 - buf);
	if ((v = header(line_end + 2, hdr_end, "Content-Length", &vlen))) {
		unsigned long long want;
		char *e;
		if (vlen == 0 || vlen >= sizeof num)
			return fail(r, "the daemon's answer has a bad Content-Length", 0);
		memcpy(num, v, vlen);
		num[vlen] = '\0';
		errno = 0;
		want = strtoull(num, &e, 10);
		if (*e || errno || num[0] == '-')
			return fail(r, "the daemon's answer has a bad Content-Length", 0);
		if (want != body_len)
			return fail(r, want > body_len ? "the daemon's answer was cut short" : "the daemon's answer is longer "
				    "than it says", 0);
	}
	r->status = status;
	if (body_len > 0) {
		json_error_t je;
		if (!(r->body = json_loadb(hdr_end + 4, body_len, 0, &je)))
			snprintf(r->error, sizeof r->error, "the daemon's answer is not JSON: %s", je.text);
	}
	return 0;
}

static int send_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

int unixreq_call(const char *socket_path, const char *method, const char *path, json_t *body,
		 struct http_result *r)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval cto = { .tv_sec = CONNECT_TIMEOUT_S }, ato = { .tv_sec = ANSWER_TIMEOUT_S };
	char head[512], *payload = NULL, *ans = NULL;   /* payload, ans: owned */
	struct iovec iov[2];
	size_t plen = 0, got = 0;
	int fd = -1, rc = -1, err;

	memset(r, 0, sizeof *r);
	if (strlen(socket_path) >= sizeof sa.sun_path)
		return fail(r, "the socket path is too long", 0);
	memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
	if (body && !(payload = json_dumps(body, JSON_COMPACT)))
		return fail(r, "cannot encode the request body", 0);
	plen = payload ? strlen(payload) : 0;
	if (snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: mempolicyctl/" MPD_VERSION
		     "\r\nAccept: application/json, application/problem+json\r\n%sContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n", method, path, payload ? "Content-Type: application/json\r\n" : "",
		     plen) >= (int)sizeof head) {
		fail(r, "request path too long", 0);
		goto out;
	}
	if (!(ans = malloc(UNIXREQ_MAX_ANSWER))) {
		fail(r, "out of memory", 0);
		goto out;
	}
	/* On a Unix socket a blocking connect waits for the listener's backlog: SO_SNDTIMEO bounds it. */
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &cto, sizeof cto) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &ato, sizeof ato) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		fail(r, NULL, errno == EINPROGRESS || errno == EAGAIN ? ETIMEDOUT : errno);
		goto out;
	}
	iov[0] = (struct iovec){ head, strlen(head) };
	iov[1] = (struct iovec){ payload, plen };
	if ((err = send_all(fd, iov, payload ? 2 : 1)) < 0) {
		fail(r, "sending the request", -err);
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, ans + got, UNIXREQ_MAX_ANSWER - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fail(r, "reading the answer", errno == EAGAIN ? ETIMEDOUT : errno);
			goto out;
		}
		if (n == 0)
			break;
		if ((got += (size_t)n) == UNIXREQ_MAX_ANSWER) {
			fail(r, "the daemon's answer is too large", 0);
			goto out;
		}
	}
	rc = unixreq_parse(ans, got, r);
out:
	if (fd >= 0)
		close(fd);
	free(ans);
	free(payload);
	return rc;
}
