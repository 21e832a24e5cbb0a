/* The distributions under common/stats.c: the exact null distribution of the Mann-Whitney U, the
 * Student t quantile (Welch's interval) and the binomial CDF (the percentile's interval), the last
 * two through the regularized incomplete beta function. */
#include "common/stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* The continued fraction of I_x(a, b) (modified Lentz); converges fast for x < (a+1)/(a+b+2). The
 * iteration bound is generous: the count needed grows like sqrt(max(a, b)), 10^4 covers a in the
 * hundreds of millions (Welch's df for 10,000 samples per arm is at most about 2*10^4). */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 10000; m++) {
		double m2 = 2.0 * m, an = m * (b - m) * x / ((a + m2 - 1) * (a + m2)), del;

		d = 1 + an * d;
		d = fabs(d) < tiny ? 1 / tiny : 1 / d;
		c = 1 + an / c;
		if (fabs(c) < tiny)
			c = tiny;
		h *= d * c;
		an = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
		d = 1 + an * d;
		d = fabs(d) < tiny ? 1 / tiny : 1 / d;
		c = 1 + an / c;
		if (fabs(c) < tiny)
			c = tiny;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-16)
			break;
	}
	return h;
}

/* I_x(a, b) with y = 1 - x given by the caller, who often knows it without the cancellation. */
static double ibeta(double a, double b, double x, double y)
{
	double front;

	if (x <= 0)
		return 0;
	if (y <= 0)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log(y));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_cf(a, b, x) / a;
	return 1 - front * beta_cf(b, a, y) / b;
}

/* P(T > t) for t >= 0: I_{df/(df+t^2)}(df/2, 1/2) / 2. */
static double t_upper(double t, double df)
{
	double t2 = t * t;

	return 0.5 * ibeta(df / 2, 0.5, df / (df + t2), t2 / (df + t2));
}

/* The standard normal's upper quantile: z with P(Z > z) = q, q in (0, 1/2], by bisection on erfc. */
static double z_upper(double q)
{
	double lo = 0, hi = 40;

	for (int i = 0; i < 200 && hi - lo > 4e-16 * hi; i++) {
		double mid = lo + (hi - lo) / 2;
		if (0.5 * erfc(mid / M_SQRT2) > q)
			lo = mid;
		else
			hi = mid;
	}
	return lo + (hi - lo) / 2;
}

double stats_t_quantile(double p, double df)
{
	double q, lo = 0, hi = 1;

	if (!(p > 0 && p < 1) || !(df > 0))
		return NAN;
	if (p == 0.5)
		return 0;
	if (p < 0.5)
		return -stats_t_quantile(1 - p, df);
	q = 1 - p;
	/* Large df: the incomplete beta's prefactor takes lgamma(df/2) ~ 10^5, whose rounding costs
	 * ~1e-12 of the quantile; the Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5) is within
	 * ~1e-14 from df 1000 on where |z| <= 4, and exact to rounding by 2000. */
	if (df >= 1000 && q >= 3.2e-5) {
		double z = z_upper(q), z2 = z * z, v = df;
		double g1 = (z2 + 1) * z / 4;
		double g2 = ((5 * z2 + 16) * z2 + 3) * z / 96;
		double g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384;
		double g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160;
		return z + (g1 + (g2 + (g3 + g4 / v) / v) / v) / v;
	}
	while (t_upper(hi, df) > q && hi < 1e300)
		hi *= 2;
	/* t_upper is decreasing: bisect to the last bit (about 60 halvings from a power of two) */
	for (int i = 0; i < 2000 && hi - lo > 4e-16 * hi; i++) {
		double mid = lo + (hi - lo) / 2;
		if (t_upper(mid, df) > q)
			lo = mid;
		else
			hi = mid;
	}
	return lo + (hi - lo) / 2;
}

double stats_binom_cdf(size_t k, size_t n, double p)
{
	/* P(B <= k) = I_{1-p}(n - k, k + 1) */
	if (k >= n)
		return 1;
	return ibeta((double)(n - k), (double)k + 1, 1 - p, p);
}

/* P(U = u) for samples of i and j without ties, counted by where the largest value falls: with
 * probability i/(i+j) it is one of the i, above all j of the others (U gains j), else one of the
 * j (U gains nothing). Probabilities rather than counts (C(100, 50) is 1e29), layer by layer over
 * i, each layer (s+1) rows of width s*l+1 over j <= s = min(nb, na). */
int stats_mwu_cdf(size_t nb, size_t na, double *cdf)
{
	size_t s = nb < na ? nb : na, l = nb < na ? na : nb, w, mn;
	double *prev = NULL, *cur = NULL, acc = 0;

	if (!cdf || nb == 0 || na == 0 || nb > STATS_EXACT_MAX_PAIRS / na) {
		errno = EINVAL;
		return -1;
	}
	mn = s * l;
	w = mn + 1;
	prev = calloc((s + 1) * w, sizeof *prev);
	cur = calloc((s + 1) * w, sizeof *cur);
	if (!prev || !cur) {
		free(prev);
		free(cur);
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i <= l; i++) {
		for (size_t j = 0; j <= s; j++) {
			double *row = cur + j * w;
			if (i == 0 || j == 0) {
				row[0] = 1;
				continue;
			}
			for (size_t u = 0; u <= i * j; u++) {
				double a = u >= j && u - j <= (i - 1) * j ? prev[j * w + u - j] : 0;
				double b = u <= i * (j - 1) ? cur[(j - 1) * w + u] : 0;
				row[u] = ((double)i * a + (double)j * b) / (double)(i + j);
			}
		}
		double *t = prev;
		prev = cur;
		cur = t;
	}
	/* the last layer written is prev; its row s is the distribution for (l, s) */
	for (size_t u = 0; u <= mn; u++) {
		acc += prev[s * w + u];
		cdf[u] = acc > 1 ? 1 : acc;
	}
	free(prev);
	free(cur);
	return 0;
}
