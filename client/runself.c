#include "client/runself.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "client/curlapi.h"
#include "client/http.h"
#include "client/out.h"
#include "client/unixreq.h"
#include "common/parse.h"

/* PR_SET_THP_DISABLE's arg3 flag for "except where MADV_HUGEPAGE asks" (6.18,
 * include/uapi/linux/prctl.h); older headers lack it. */
#define RUN_THP_DISABLE_EXCEPT_ADVISED (1UL << 1)
#define RUN_MASK_BITS IDSET_MAX

int run_resolve(const char *name, const char *pathenv, char *path, size_t len)
{
	const char *p;
	bool denied = false;

	if (!*name)
		return -ENOENT;
	if (strchr(name, '/')) {
		if ((size_t)snprintf(path, len, "%s", name) >= len)
			return -ENAMETOOLONG;
		if (access(path, F_OK) < 0)
			return -errno;
		return access(path, X_OK) < 0 ? -EACCES : 0;
	}
	/* execvp's search: each directory of PATH in order, an empty entry meaning ".". */
	for (p = pathenv ? pathenv : "/bin:/usr/bin";; p++) {
		const char *end = strchrnul(p, ':');
		int n = (int)(end - p);
		if ((size_t)snprintf(path, len, "%.*s%s%s", n, n ? p : ".", "/", name) < len &&
		    access(path, F_OK) == 0) {
			if (access(path, X_OK) == 0)
				return 0;
			denied = true;   /* execvp goes on, and reports EACCES if nothing else runs */
		}
		if (!*end)
			break;
		p = end;
	}
	return denied ? -EACCES : -ENOENT;
}

int run_mask(const char *list, unsigned long *mask, unsigned nbits, int *maxbit)
{
	idset s;
	size_t words = (nbits + 8 * sizeof *mask - 1) / (8 * sizeof *mask);

	memset(mask, 0, words * sizeof *mask);
	*maxbit = -1;
	if (idset_parse(list, &s) < 0)
		return -1;
	for (int n = idset_next(&s, 0); n >= 0; n = idset_next(&s, (unsigned)n + 1)) {
		unsigned i = (unsigned)n;
		if (i >= nbits)
			return -1;
		mask[i / (8 * sizeof *mask)] |= 1UL << (i % (8 * sizeof *mask));
		*maxbit = (int)i;
	}
	return 0;
}

/* What the daemon's answer says to do, done to this process, in spawn.c's order: CPUs, policy,
 * THP. 0, or an error message in err. */
static int apply(const json_t *ap, char *err, size_t errlen)
{
	const json_t *mode = json_object_get(ap, "mode");
	const char *cpus = json_string_value(json_object_get(ap, "cpus"));
	const char *nodes = json_string_value(json_object_get(ap, "nodes"));
	const char *thp = json_string_value(json_object_get(ap, "thp"));
	unsigned long mask[RUN_MASK_BITS / (8 * sizeof(unsigned long))];
	int maxbit;

	if (cpus) {
		cpu_set_t *set = CPU_ALLOC(RUN_MASK_BITS);   /* owned */
		size_t size = CPU_ALLOC_SIZE(RUN_MASK_BITS);
		int rc = -1;
		if (set && run_mask(cpus, (unsigned long *)set, RUN_MASK_BITS, &maxbit) == 0)
			rc = sched_setaffinity(0, size, set);
		if (set)
			CPU_FREE(set);
		if (rc < 0) {
			snprintf(err, errlen, "binding to CPUs %.200s: %s", cpus, strerror(errno));
			return -1;
		}
	}
	if (json_is_integer(mode)) {
		long rc;
		if (run_mask(nodes ? nodes : "", mask, RUN_MASK_BITS, &maxbit) < 0) {
			snprintf(err, errlen, "the daemon's node list '%.200s' does not parse", nodes ? nodes : "");
			return -1;
		}
		/* The kernel reads maxnode - 1 bits (mempolicy.h): the highest node + 2, 0 for none. */
		rc = syscall(SYS_set_mempolicy, (int)json_integer_value(mode), maxbit < 0 ? NULL : mask,
			     maxbit < 0 ? 0UL : (unsigned long)maxbit + 2);
		if (rc < 0) {
			snprintf(err, errlen, "set_mempolicy: %s", strerror(errno));
			return -1;
		}
	}
	if (thp && prctl(PR_SET_THP_DISABLE, 1UL, strcmp(thp, "except-advised") ? 0UL : RUN_THP_DISABLE_EXCEPT_ADVISED,
			 0UL, 0UL) < 0) {
		snprintf(err, errlen, "PR_SET_THP_DISABLE (%s): %s", thp, strerror(errno));
		return -1;
	}
	return 0;
}

int run_here(struct cli *c, const struct args *a, json_t *body)
{
	struct http_result r;
	char path[4096], err[512];
	int rc;

	/* A program that is not there is said before anything is sent, so nothing is recorded. */
	if ((rc = run_resolve(a->pos[0], getenv("PATH"), path, sizeof path)) < 0) {
		out_error("%s: %s", a->pos[0], rc == -ENOENT ? "command not found" : strerror(-rc));
		return rc == -ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
	}
	/* Over the socket, the one request without libcurl (client/unixreq.h); --url is refused by
	 * the daemon (a self launch needs the socket's peer credentials) and says so through curl. */
	if ((rc = http_judge(c, c->url ? http_call(c, "POST", "/v1/processes/self", body, &r)
				       : unixreq_call(c->socket, "POST", "/v1/processes/self", body, &r), &r)) != EXIT_OK)
		return rc;
	rc = apply(json_object_get(r.body, "apply"), err, sizeof err);
	http_result_free(&r);
	/* The connection is not the program's: closed before it runs. */
	curlapi_close(c);
	if (rc < 0) {
		out_error("%s (the launch was recorded, the program not run)", err);
		return EXIT_REFUSED;
	}
	fflush(stdout);
	fflush(stderr);
	execv(path, a->pos);
	rc = errno;
	out_error("%s: %s", a->pos[0], strerror(rc));
	return rc == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}
