/* mempolicyctl run's one request over the Unix socket (client/unixreq.c, compiled in here: unit
 * test programs link the server library, not the client): the answer's parsing, and whole
 * exchanges with a listener in a child process that answers what each case needs (a daemon that
 * cuts its answer short, sends chunks, sends nothing). */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "client/unixreq.c"
#include "tests/unit/check_main.h"

static int parse(const char *text, struct http_result *r)
{
	return unixreq_parse(text, strlen(text), r);
}

START_TEST(answers_parse)
{
	struct http_result r;

	ck_assert_int_eq(parse("HTTP/1.1 201 Created\r\nContent-Length: 8\r\ncontent-type: application/json\r\n\r\n"
			       "{\"a\": 1}", &r), 0);
	ck_assert_int_eq(r.status, 201);
	ck_assert_int_eq(json_integer_value(json_object_get(r.body, "a")), 1);
	json_decref(r.body);
	/* header names in any case; no Content-Length: the body is what came before EOF */
	ck_assert_int_eq(parse("HTTP/1.0 422 Unprocessable\r\ncontent-length:  2\r\n\r\n{}", &r), 0);
	ck_assert_int_eq(r.status, 422);
	ck_assert(json_is_object(r.body));
	json_decref(r.body);
	ck_assert_int_eq(parse("HTTP/1.1 200 OK\r\nX: y\r\n\r\n[1]", &r), 0);
	ck_assert(json_is_array(r.body));
	json_decref(r.body);
	/* an answer without a body, and one whose body is not JSON: answered, with the reason */
	ck_assert_int_eq(parse("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", &r), 0);
	ck_assert_ptr_null(r.body);
	ck_assert_int_eq(parse("HTTP/1.1 500 Oops\r\nContent-Length: 3\r\n\r\nabc", &r), 0);
	ck_assert_ptr_null(r.body);
	ck_assert_ptr_nonnull(strstr(r.error, "not JSON"));
}
END_TEST

START_TEST(what_is_not_an_answer_is_refused)
{
	static const struct { const char *text, *why; } bad[] = {
		{ "", "not HTTP" },
		{ "SSH-2.0-OpenSSH\r\n\r\n", "not HTTP" },
		{ "HTTP/1.1 2000 OK\r\n\r\n", "not HTTP" },
		{ "HTTP/1.1 099 Low\r\n\r\n", "not HTTP" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", "not HTTP" },           /* headers never end */
		{ "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}", "cut short" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n{}", "longer" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n{}", "bad Content-Length" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\n{}", "bad Content-Length" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n{}", "bad Content-Length" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", "chunked" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct http_result r;
		ck_assert_msg(parse(bad[i].text, &r) == -1, "accepted case %zu", i);
		ck_assert_msg(strstr(r.error, bad[i].why), "case %zu: %s", i, r.error);
		ck_assert_ptr_null(r.body);
	}
}
END_TEST

/* A listener at path that reads one request and answers `answer` (NULL: closes without a word),
 * in a child. Returns its pid; the request it read is written to req_out (a pipe) for the test. */
static pid_t serve_once(const char *path, const char *answer, int req_out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	pid_t pid;

	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	unlink(path);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(listen(l, 1), 0);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		char buf[4096];
		int c = accept(l, NULL, NULL);
		ssize_t n = read(c, buf, sizeof buf);   /* the request fits one read here */
		if (n > 0 && write(req_out, buf, (size_t)n) != n)
			_exit(2);
		if (answer && write(c, answer, strlen(answer)) < 0)
			_exit(2);
		close(c);
		_exit(0);
	}
	close(l);
	return pid;
}

START_TEST(one_exchange)
{
	char path[64], req[4096];
	int fds[2];
	struct http_result r;
	json_t *body = json_pack("{s:[s]}", "argv", "true");
	pid_t pid;
	ssize_t n;

	snprintf(path, sizeof path, "/tmp/mpd-unixreq-%d.sock", (int)getpid());
	ck_assert_int_eq(pipe(fds), 0);
	pid = serve_once(path, "HTTP/1.1 201 Created\r\nContent-Length: 11\r\n\r\n{\"pid\": 42}", fds[1]);
	ck_assert_int_eq(unixreq_call(path, "POST", "/v1/processes/self", body, &r), 0);
	ck_assert_int_eq(r.status, 201);
	ck_assert_int_eq(json_integer_value(json_object_get(r.body, "pid")), 42);
	json_decref(r.body);
	waitpid(pid, NULL, 0);
	/* what was sent: one HTTP/1.1 request with its length, closing, and the body as JSON */
	ck_assert_int_gt(n = read(fds[0], req, sizeof req - 1), 0);
	req[n] = '\0';
	ck_assert_msg(!strncmp(req, "POST /v1/processes/self HTTP/1.1\r\nHost: localhost\r\n", 51), "%s", req);
	ck_assert_ptr_nonnull(strstr(req, "\r\nConnection: close\r\n"));
	ck_assert_ptr_nonnull(strstr(req, "\r\nContent-Type: application/json\r\nContent-Length: 17\r\n"));
	ck_assert_str_eq(strstr(req, "\r\n\r\n") + 4, "{\"argv\":[\"true\"]}");

	/* a daemon that closes without answering: unreachable, with the reason */
	pid = serve_once(path, NULL, fds[1]);
	ck_assert_int_eq(unixreq_call(path, "POST", "/v1/processes/self", body, &r), -1);
	ck_assert_ptr_nonnull(strstr(r.error, "not HTTP"));
	waitpid(pid, NULL, 0);
	ck_assert_int_gt(read(fds[0], req, sizeof req), 0);

	/* nobody there: the errno's text, as the libcurl path says it */
	unlink(path);
	ck_assert_int_eq(unixreq_call(path, "POST", "/v1/processes/self", body, &r), -1);
	ck_assert_str_eq(r.error, strerror(ENOENT));
	memset(path, 'x', sizeof path - 1);
	path[sizeof path - 1] = '\0';
	char longpath[200];
	snprintf(longpath, sizeof longpath, "/tmp/%s%s", path, path);
	ck_assert_int_eq(unixreq_call(longpath, "GET", "/", NULL, &r), -1);
	ck_assert_ptr_nonnull(strstr(r.error, "too long"));
	json_decref(body);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

static Suite *unixreq_suite(void)
{
	Suite *s = suite_create("cli_unixreq");
	TCase *tc = tcase_create("unixreq");
	tcase_add_test(tc, answers_parse);
	tcase_add_test(tc, what_is_not_an_answer_is_refused);
	tcase_add_test(tc, one_exchange);
	suite_add_tcase(s, tc);
	return s;
}

MPD_CHECK_MAIN(unixreq_suite)
