/* The nb*na pairwise differences arm[j] - base[i] of two ascending samples, never formed: their
 * order statistics (the Hodges-Lehmann estimate and interval) and, with ties, the interval found by
 * inverting the U test itself (common/stats.c). */
#include "common/stats_hl.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* Doubles in an order-preserving integer code, so the pairwise differences can be searched by
 * bisection on the value to the exact bit. */
static uint64_t dkey(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof u);
	return u >> 63 ? ~u : u | (1ull << 63);
}

static double dval(uint64_t k)
{
	uint64_t u = k >> 63 ? k & ~(1ull << 63) : ~k;
	double d;

	memcpy(&d, &u, sizeof d);
	return d;
}

/* #{(i, j): a[j] - b[i] <= v}, both ascending. fl(a - b) is monotone in a and in b (rounding is),
 * so per b[i] the qualifying a[j] are a prefix, and it grows with i: one pass of two pointers. */
static uint64_t count_le(const double *b, size_t nb, const double *a, size_t na, double v)
{
	uint64_t c = 0;
	size_t j = 0;

	for (size_t i = 0; i < nb; i++) {
		while (j < na && a[j] - b[i] <= v)
			j++;
		c += j;
	}
	return c;
}

static double mid3(double x, double y, double z)
{
	return x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
}

/* The k-th smallest (0-based) of x[0..n), reordering x: Wirth's selection (Hoare's partition),
 * the pivot the median of three so that the rows' ascending runs gather() leaves are no worst
 * case. Every pivot is a value inside [l, r], which bounds both scans. */
static double select_kth(double *x, size_t n, size_t k)
{
	ptrdiff_t l = 0, r = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;

	while (l < r) {
		double p = mid3(x[l], x[l + (r - l) / 2], x[r]);
		ptrdiff_t i = l, j = r;
		do {
			while (x[i] < p)
				i++;
			while (p < x[j])
				j--;
			if (i <= j) {
				double t = x[i];
				x[i++] = x[j];
				x[j--] = t;
			}
		} while (i <= j);
		if (j < kk)
			l = i;
		if (kk < i)
			r = j;
	}
	return x[kk];
}

/* The differences d with lo < d <= hi into buf (as many as there are: the caller counted them). */
static size_t gather(const double *b, size_t nb, const double *a, size_t na, double lo, double hi, double *buf)
{
	size_t j0 = 0, j1 = 0, n = 0;

	for (size_t i = 0; i < nb; i++) {
		while (j0 < na && a[j0] - b[i] <= lo)
			j0++;
		while (j1 < na && a[j1] - b[i] <= hi)
			j1++;
		for (size_t j = j0; j < j1; j++)
			buf[n++] = a[j] - b[i];
	}
	return n;
}

/* The r-th smallest (1-based) of the nb*na differences a[j] - b[i], without forming them. Keeps
 * count(<= lo) < r <= count(<= hi) and halves [lo, hi] by value — by the value's code (dkey) when
 * the value's midpoint makes no progress, so it ends at adjacent doubles at worst — until at most
 * `room` differences lie inside, which are then gathered into scratch (room doubles) and selected.
 * On samples of 10,000 that is about a dozen O(nb + na) passes instead of one per bit. */
double stats_diff_rank(const double *b, size_t nb, const double *a, size_t na, uint64_t r, double *scratch,
		       size_t room)
{
	double lo = nextafter(a[0] - b[nb - 1], -INFINITY), hi = a[na - 1] - b[0];
	uint64_t clo = 0, chi = (uint64_t)nb * na;

	for (;;) {
		double mid = lo / 2 + hi / 2;
		uint64_t c;

		if (chi - clo <= room)
			return select_kth(scratch, gather(b, nb, a, na, lo, hi, scratch), (size_t)(r - clo - 1));
		if (!(mid > lo && mid < hi)) {
			uint64_t kl = dkey(lo), kh = dkey(hi);
			if (kh - kl <= 1)
				return hi;   /* nothing between: hi is the r-th (ties) */
			mid = dval(kl + (kh - kl) / 2);
		}
		c = count_le(b, nb, a, na, mid);
		if (c >= r)
			hi = mid, chi = c;
		else
			lo = mid, clo = c;
	}
}

void stats_u_at(const double *b, size_t nb, const double *a, size_t na, double mu, double *u, double *tie_term)
{
	size_t i = 0, j = 0, pos = 0;
	double rank_sum = 0, tt = 0;

	/* a[j] - mu is ascending like a (rounding is monotone): one merge of the two */
	while (i < nb || j < na) {
		double v = i < nb && (j >= na || b[i] <= a[j] - mu) ? b[i] : a[j] - mu;
		size_t cb = 0, ca = 0;
		while (i < nb && b[i] == v)
			i++, cb++;
		while (j < na && a[j] - mu == v)
			j++, ca++;
		double t = (double)(cb + ca), mid = (double)pos + (t + 1) / 2;
		rank_sum += mid * (double)ca;
		tt += t * t * t - t;
		pos += cb + ca;
	}
	*u = rank_sum - (double)na * ((double)na + 1) / 2;
	*tie_term = tt;
}

/* The continuity-corrected, tie-corrected z of the U test of arm - mu against base (as SciPy's
 * asymptotic mannwhitneyu: positive when the shifted arm is the larger). */
static double z_at(const double *b, size_t nb, const double *a, size_t na, double mu)
{
	double mn = (double)nb * (double)na, nt = (double)nb + (double)na, u, tt, sigma, dz;

	stats_u_at(b, nb, a, na, mu, &u, &tt);
	sigma = sqrt(mn / 12 * ((nt + 1) - tt / (nt * (nt - 1))));
	dz = u - mn / 2;
	dz -= dz > 0 ? 0.5 : dz < 0 ? -0.5 : 0;
	return sigma > 0 ? dz / sigma : 0;
}

/* The difference nearest to v: the smallest one >= v or the largest one <= v. */
static double nearest_diff(const double *b, size_t nb, const double *a, size_t na, double v)
{
	double above = INFINITY, below = -INFINITY;
	size_t j = 0, k = 0;

	/* per b[i] (ascending), the first a[j] with a[j] - b[i] >= v moves only forward; so does the
	 * last one with a[k] - b[i] <= v */
	for (size_t i = 0; i < nb; i++) {
		while (j < na && a[j] - b[i] < v)
			j++;
		if (j < na && a[j] - b[i] < above)
			above = a[j] - b[i];
		while (k < na && a[k] - b[i] <= v)
			k++;
		if (k > 0 && a[k - 1] - b[i] > below)
			below = a[k - 1] - b[i];
	}
	return above - v <= v - below ? above : below;
}

/* Where along mu the test's decision flips: lo has want(lo) false, hi true (or the reverse when
 * rising is false), halved by the value's code to adjacent doubles (at most 64 passes); the flip is
 * then snapped to the nearest difference, where the U statistic steps. */
static double flip(const double *b, size_t nb, const double *a, size_t na, double lo, double hi, double zq,
		   bool rising)
{
	uint64_t kl = dkey(lo), kh = dkey(hi);

	while (kh - kl > 1) {
		uint64_t km = kl + (kh - kl) / 2;
		double z = z_at(b, nb, a, na, dval(km));
		if (rising ? z <= zq : z < -zq)
			kh = km;
		else
			kl = km;
	}
	return nearest_diff(b, nb, a, na, dval(rising ? kh : kl));
}

int stats_hl_tied_interval(const double *b, size_t nb, const double *a, size_t na, double zq, double ci[2])
{
	double dmin = a[0] - b[nb - 1], dmax = a[na - 1] - b[0];
	double lo = dmin - (fabs(dmin) + 1), hi = dmax + (fabs(dmax) + 1);

	/* below every difference the shifted arm is above the whole baseline, above every one below
	 * it: if even those are not significant, no shift is excluded and there is no interval */
	if (z_at(b, nb, a, na, lo) <= zq || z_at(b, nb, a, na, hi) >= -zq)
		return -1;
	ci[0] = flip(b, nb, a, na, lo, hi, zq, true);    /* the smallest mu with z(mu) <= zq */
	ci[1] = flip(b, nb, a, na, lo, hi, zq, false);   /* the largest mu with z(mu) >= -zq */
	return 0;
}
