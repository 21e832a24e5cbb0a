/* bench/b_statistics.py's timer: stats_compare and stats_p95_ci over N samples per arm (two normal
 * arms 5 % apart, a fixed seed), R timed rounds after one untimed; prints one JSON object with the
 * milliseconds of each round. Built at bench time from common/ with the Makefile's -O2. */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>

#include "common/stats.h"

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double normal(uint64_t *s, double mean, double sd)
{
	double u1 = ((double)(next(s) >> 11) + 0.5) / 9007199254740992.0;
	double u2 = ((double)(next(s) >> 11) + 0.5) / 9007199254740992.0;
	return mean + sd * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

int main(int argc, char **argv)
{
	char *end = NULL;
	size_t n = argc > 1 ? strtoul(argv[1], &end, 10) : 10000;
	long rounds = 15;

	if (argc > 1 && (!end || *end || n > 100000000))
		return 2;
	if (argc > 2 && ((rounds = strtol(argv[2], &end, 10)) > 1000 || *end))
		return 2;
	double *b = malloc(n * sizeof *b), *a = malloc(n * sizeof *a), p95, lo, hi;
	uint64_t seed = 20261201;
	struct stats_cmp o;

	if (!b || !a || n == 0 || rounds < 1)
		return 2;
	for (size_t i = 0; i < n; i++) {
		b[i] = normal(&seed, 100, 15);
		a[i] = normal(&seed, 105, 15);
	}
	printf("{\"n\": %zu, \"compare_ms\": [", n);
	for (int r = 0; r <= rounds; r++) {
		struct timespec t0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (stats_compare(b, n, a, n, 1, &o) < 0)
			return 1;
		if (r)
			printf("%s%.4f", r > 1 ? ", " : "", ms_since(&t0));
	}
	printf("], \"p95_ms\": [");
	for (int r = 0; r <= rounds; r++) {
		struct timespec t0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (stats_p95_ci(a, n, &p95, &lo, &hi) < 0)
			return 1;
		if (r)
			printf("%s%.4f", r > 1 ? ", " : "", ms_since(&t0));
	}
	printf("], \"verdict\": \"%s\", \"p_exact\": %s, \"p95\": [%.6g, %.6g, %.6g]}\n", o.verdict,
	       o.p_exact ? "true" : "false", p95, lo, hi);
	free(a);
	free(b);
	return 0;
}
