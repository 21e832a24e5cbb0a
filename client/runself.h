/* `mempolicyctl run` without --detach, numactl's way: the daemon checks the request and records the
 * launch (POST /v1/processes/self: one request), then this process sets the policy, the CPU
 * binding and the THP opt-out on itself (the kernel lets a process set only its own policy) and
 * execs the program, which so keeps the terminal, stdin/stdout/stderr, the environment and the
 * exit status the shell sees. */
#ifndef MPD_CLIENT_RUNSELF_H
#define MPD_CLIENT_RUNSELF_H

#include <jansson.h>

#include "client/cli.h"

/* Exit statuses when the program cannot be run, as a shell's (and numactl's execvp failure). */
enum {
	EXIT_CANNOT_EXEC = 126,   /* found but not executable */
	EXIT_NOT_FOUND = 127,     /* not found (nothing was sent or recorded) */
};

/* body: argv, policy, cpus/cpunodes, thp, cwd (borrowed). Execs the program and does not return;
 * returns an exit code only when it cannot: not found (127, before anything is sent), the daemon
 * refused or is unreachable (1, 3), the kernel refused what the daemon accepted (1), exec failed
 * (126/127). */
int run_here(struct cli *c, const struct args *a, json_t *body);

/* Whether command k, with a, needs libcurl set up before it runs (curlapi_open): every command but
 * run's own launch over the socket, whose one request goes without it (client/unixreq.h); run
 * --detach and run with --url go through libcurl. */
bool run_needs_curl(const struct cli *c, const struct command *k, const struct args *a);

/* The file execvp would run for name (a '/' in it: name itself; else the first executable match in
 * $PATH, or "/bin:/usr/bin" without one) into path. 0, or -errno: -ENOENT when there is none,
 * -EACCES when a match is not executable (tests/e2e/test_cli_process.py: 127 and 126). */
int run_resolve(const char *name, const char *pathenv, char *path, size_t len);

/* A kernel list "0-3,8" into the kernel's bitmask (an array of unsigned long, nbits bits): 0, or
 * -1 when the list does not parse or names a bit >= nbits. *maxbit: the highest bit set, -1 for
 * none. */
int run_mask(const char *list, unsigned long *mask, unsigned nbits, int *maxbit);

#endif
