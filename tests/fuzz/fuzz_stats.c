/* common/stats.c on arbitrary samples: the first byte splits the rest (8-byte doubles, any bit
 * pattern: NaN, infinities, subnormals, -0, 1e300) into a baseline and an arm. Refused exactly
 * when a sample is out of range; otherwise the result's invariants hold: p in (0, 1], the
 * estimate inside its interval, swapping the arms keeps p (and, without ties, mirrors the
 * interval). */
#include <errno.h>
#include <math.h>

#include "common/stats.h"
#include "tests/fuzz/fuzz.h"

static int all_in_range(const double *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!(fabs(x[i]) <= STATS_MAX_ABS))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = size > 1 ? (size - 1) / 8 : 0, nb;
	double *x;
	struct stats_cmp o, sw;
	int rc, ok;

	if (n < 2 || n > 4096)
		return 0;
	nb = 1 + data[0] % (n - 1);
	x = malloc(n * sizeof *x);
	if (!x)
		abort();
	memcpy(x, data + 1, n * sizeof *x);
	ok = all_in_range(x, n);
	rc = stats_compare(x, nb, x + nb, n - nb, 1, &o);
	FZ_ASSERT(ok ? rc == 0 : rc == -1 && errno == EINVAL, "rc %d errno %d in range %d", rc, errno, ok);
	if (rc == 0) {
		FZ_ASSERT(o.p_value > 0 && o.p_value <= 1, "p %.17g", o.p_value);
		FZ_ASSERT(!o.ci_ok || (o.ci95[0] <= o.hl_shift && o.hl_shift <= o.ci95[1]), "[%.17g, %.17g] %.17g",
			  o.ci95[0], o.ci95[1], o.hl_shift);
		FZ_ASSERT(!o.different || o.ci_ok, "different without an interval");
		FZ_ASSERT(o.verdict[0] != '\0' && strlen(o.verdict) < sizeof o.verdict, "verdict");
		FZ_ASSERT(stats_compare(x + nb, n - nb, x, nb, 1, &sw) == 0, "swapped refused");
		FZ_ASSERT(sw.p_value == o.p_value, "p %.17g vs %.17g", sw.p_value, o.p_value);
		/* without ties the interval's ends are order statistics, exactly mirrored; with them
		 * the test is inverted at arm - mu, whose rounding is not base + mu's */
		FZ_ASSERT(o.ties || (sw.ci_ok == o.ci_ok && (!o.ci_ok || (sw.ci95[0] == -o.ci95[1] && sw.ci95[1] == -o.ci95[0]))),
			  "swapped interval");
	}
	free(x);
	return 0;
}
