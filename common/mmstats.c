#include "common/mmstats.h"

#include <math.h>

double mmstats_percentile(const double *sorted, size_t n, int pct)
{
	/* Stat.pm: my $count = int($nr_elements * $percentile / 100); $count = 1 if $count < 1 */
	size_t count = (size_t)((n * (size_t)pct) / 100);

	if (count < 1)
		count = 1;
	return sorted[count - 1];
}

void mmstats_sorted(const double *sorted, size_t n, struct mmstats *out)
{
	double sum = 0, m2 = 0;

	out->count = n;
	if (n == 0) {
		out->min = out->q1 = out->q2 = out->q3 = out->max = NAN;
		out->p90 = out->p95 = out->p99 = out->amean = out->stddev = NAN;
		return;
	}
	out->min = sorted[0];
	out->max = sorted[n - 1];
	out->q1 = mmstats_percentile(sorted, n, 25);
	out->q2 = mmstats_percentile(sorted, n, 50);
	out->q3 = mmstats_percentile(sorted, n, 75);
	out->p90 = mmstats_percentile(sorted, n, 90);
	out->p95 = mmstats_percentile(sorted, n, 95);
	out->p99 = mmstats_percentile(sorted, n, 99);
	for (size_t i = 0; i < n; i++)
		sum += sorted[i];
	out->amean = sum / (double)n;
	/* Two passes: the sum of squared deviations does not lose precision on large ns values. */
	for (size_t i = 0; i < n; i++)
		m2 += (sorted[i] - out->amean) * (sorted[i] - out->amean);
	out->stddev = n > 1 ? sqrt(m2 / (double)(n - 1)) : NAN;
}
