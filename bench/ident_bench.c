/* bench/b_handoff.py's timer of what a launch's identity check costs the helper: priv_identity
 * (server/priv/identity.c, the function the helper calls for every PRIV_SPAWN) on a live
 * connection accepted on a listener bound in DIR, and priv_unix_vfs_of alone (its netlink round
 * trip). N timed calls of each after 100 untimed; prints one JSON object with the microseconds of
 * each call. Built at bench time with -O2 from that one file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "server/priv/identity.h"

static double us_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e6 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e3;
}

static void print_list(const char *name, const double *v, long n, const char *sep)
{
	printf("\"%s\": [", name);
	for (long i = 0; i < n; i++)
		printf("%s%.3f", i ? ", " : "", v[i]);
	printf("]%s", sep);
}

static int check(int fd)
{
	struct priv_ident who;

	return priv_identity(fd, &who);
}

static int diag(int fd)
{
	struct priv_unix_vfs vfs;

	return priv_unix_vfs_of(fd, &vfs);
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct {
		const char *name;
		int (*fn)(int fd);
		double *us;   /* owned */
	} t[] = { { "check_us", check, NULL }, { "diag_us", diag, NULL } };
	struct timespec t0;
	char *end = NULL;
	long n;
	int l, c, s, rc;

	if (argc != 3 || (n = strtol(argv[2], &end, 10)) < 1 || *end || n > 1000000 ||
	    (size_t)snprintf(sa.sun_path, sizeof sa.sun_path, "%s/ident.sock", argv[1]) >= sizeof sa.sun_path)
		return 2;
	unlink(sa.sun_path);
	if ((l = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(l, 4) < 0 ||
	    (c = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 || connect(c, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    (s = accept(l, NULL, NULL)) < 0) {
		fprintf(stderr, "socket set-up: %s\n", strerror(errno));
		return 1;
	}
	/* A serving user that is not this process's: the client (this process) has an identity. */
	if ((rc = priv_identity_init(l, (uid_t)-2)) < 0) {
		fprintf(stderr, "priv_identity_init: %s\n", strerror(-rc));
		return 1;
	}
	for (size_t k = 0; k < 2; k++)
		if (!(t[k].us = calloc((size_t)n, sizeof *t[k].us)))
			return 1;
	for (long i = -100; i < n; i++)
		for (size_t k = 0; k < 2; k++) {
			clock_gettime(CLOCK_MONOTONIC, &t0);
			rc = t[k].fn(s);
			if (i >= 0)
				t[k].us[i] = us_since(&t0);
			if (rc < 0) {
				fprintf(stderr, "%s: %s\n", t[k].name, strerror(-rc));
				return 1;
			}
		}
	printf("{");
	for (size_t k = 0; k < 2; k++) {
		print_list(t[k].name, t[k].us, n, k ? "}\n" : ", ");
		free(t[k].us);
	}
	unlink(sa.sun_path);
	return 0;
}
