#include "common/mmstats.h"

#include <math.h>

/* The 0-based position of percentile pct among n ascending samples. */
static size_t rank(size_t n, int pct)
{
	/* Stat.pm: my $count = int($nr_elements * $percentile / 100); $count = 1 if $count < 1 */
	size_t count = (size_t)((n * (size_t)pct) / 100);

	return count < 1 ? 0 : count - 1;
}

double mmstats_percentile(const double *sorted, size_t n, int pct)
{
	return sorted[rank(n, pct)];
}

static const int walk_pct[6] = { 25, 50, 75, 90, 95, 99 };

void mmstats_walk_begin(struct mmstats_walk *w, size_t n, double mean, struct mmstats *out)
{
	*w = (struct mmstats_walk){ .out = out, .n = n };
	mmstats_sorted(NULL, 0, out);   /* NaN everywhere until the samples arrive */
	out->count = n;
	out->amean = n ? mean : NAN;
	for (int k = 0; k < 6; k++)
		w->rank[k] = rank(n, walk_pct[k]);
}

void mmstats_walk_add(struct mmstats_walk *w, double v)
{
	struct mmstats *o = w->out;
	double *dst[6] = { &o->q1, &o->q2, &o->q3, &o->p90, &o->p95, &o->p99 };

	if (w->i == 0)
		o->min = v;
	for (int k = 0; k < 6; k++)
		if (w->rank[k] == w->i)
			*dst[k] = v;
	o->max = v;
	w->m2 += (v - o->amean) * (v - o->amean);
	w->i++;
}

void mmstats_walk_end(struct mmstats_walk *w)
{
	w->out->stddev = w->n > 1 ? sqrt(w->m2 / (double)(w->n - 1)) : NAN;
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
