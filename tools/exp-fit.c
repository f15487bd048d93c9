/* The polynomials of the vector exp (templates/vexp.c.in): for degree N,
 * exp(r) ~ 1 + r + c2 r^2 + ... + cN r^N on |r| <= ln2/2 (and a little
 * more: n is rounded in float), c2..cN minimizing the largest relative
 * error, by the Remez exchange in long double.  Prints the coefficients
 * rounded to float, in the template's order (cN first, then down to the
 * two 1s of Horner's rule), and the error of the fit.  Then the same
 * polynomials for 2^r = exp(r ln2) on |r| <= 1/2, the base-2 form the tiled
 * softmax takes (its scores carry the factor log2(e)): ck ln2^k, from c1 =
 * ln2 down to Horner's last 1, the same relative error before rounding.
 *
 *   exp-fit [N ...]     (default: 6 for accurate, 5 for fast)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXC 8          /* c2..c9 */
#define GRID 200000     /* points where the error's extrema are looked for */

typedef long double real;

static const real half = 0.3466L; /* ln2/2 = 0.34657 ... */
static const real slack = 0.0005L;

/* relative error of 1 + r + sum c[k] r^(k+2), k < m */
static real err(const real *c, int m, real r)
{
	real p = 0.0L;

	for (int k = m - 1; k >= 0; --k)
		p = p * r + c[k];
	return (1.0L + r + r * r * p) / expl(r) - 1.0L;
}

/* Solves a x = b (n unknowns) by Gaussian elimination with pivoting. */
static void solve(int n, real a[][MAXC + 1], real *b, real *x)
{
	for (int i = 0; i < n; ++i) {
		int p = i;

		for (int r = i + 1; r < n; ++r)
			if (fabsl(a[r][i]) > fabsl(a[p][i]))
				p = r;
		for (int c = 0; c < n; ++c) {
			real t = a[i][c];
			a[i][c] = a[p][c];
			a[p][c] = t;
		}
		real t = b[i];
		b[i] = b[p];
		b[p] = t;
		for (int r = 0; r < n; ++r) {
			if (r == i)
				continue;
			real f = a[r][i] / a[i][i];
			for (int c = 0; c < n; ++c)
				a[r][c] -= f * a[i][c];
			b[r] -= f * b[i];
		}
	}
	for (int i = 0; i < n; ++i)
		x[i] = b[i] / a[i][i];
}

/* Fits c2..c(m+1); returns the largest relative error on the interval. */
static real fit(int m, real *c)
{
	const real lo = -(half + slack), hi = half + slack;
	real pts[MAXC + 1];

	for (int i = 0; i <= m; ++i)
		pts[i] = (lo + hi) / 2 - (hi - lo) / 2 * cosl(M_PI * i / m);
	for (int it = 0; it < 40; ++it) {
		real a[MAXC + 1][MAXC + 1], b[MAXC + 1], x[MAXC + 1];

		/* error (-1)^i E at each reference point: linear in c and E */
		for (int i = 0; i <= m; ++i) {
			real r = pts[i];
			for (int k = 0; k < m; ++k)
				a[i][k] = powl(r, k + 2);
			a[i][m] = -(i % 2 ? -1.0L : 1.0L) * expl(r);
			b[i] = expl(r) - 1.0L - r;
		}
		solve(m + 1, a, b, x);
		for (int k = 0; k < m; ++k)
			c[k] = x[k];
		/* the new reference: the largest error of each run of one sign,
		 * trimmed from the ends to m + 1 points */
		real ext[64];
		int n = 0;
		real best = err(c, m, lo), at = lo;
		for (int j = 1; j <= GRID; ++j) {
			real r = lo + (hi - lo) * j / GRID, e = err(c, m, r);
			if ((e > 0) != (best > 0)) {
				if (n < 64)
					ext[n++] = at;
				best = e;
				at = r;
			} else if (fabsl(e) > fabsl(best)) {
				best = e;
				at = r;
			}
		}
		if (n < 64)
			ext[n++] = at;
		while (n > m + 1) {
			if (fabsl(err(c, m, ext[0])) < fabsl(err(c, m, ext[n - 1])))
				for (int i = 0; i < n - 1; ++i)
					ext[i] = ext[i + 1];
			--n;
		}
		if (n < m + 1)
			break;
		for (int i = 0; i <= m; ++i)
			pts[i] = ext[i];
	}
	real worst = 0.0L;
	for (int j = 0; j <= GRID; ++j) {
		real e = fabsl(err(c, m, lo + (hi - lo) * j / GRID));
		if (e > worst)
			worst = e;
	}
	return worst;
}

int main(int argc, char **argv)
{
	int degrees[16] = {6, 5}, nd = 2;

	if (argc > 1) {
		nd = 0;
		for (int i = 1; i < argc && nd < 16; ++i) {
			char *end;
			long d = strtol(argv[i], &end, 10);
			if (*end || d < 3 || d > MAXC + 1) {
				fprintf(stderr, "exp-fit: degree '%s' is not in 3..%d\n", argv[i], MAXC + 1);
				return 2;
			}
			degrees[nd++] = (int)d;
		}
	}
	for (int i = 0; i < nd; ++i) {
		int m = degrees[i] - 1;
		real c[MAXC];
		real e = fit(m, c);

		printf("degree %d: relative error %.3Lg (%.3Lg ulp in [1/2, 1))\n  {", degrees[i],
		       e, e / ldexpl(1.0L, -24));
		for (int k = m - 1; k >= 0; --k)
			printf("%a, ", (double)(float)c[k]);
		printf("0x1p+0, 0x1p+0}\n");
		printf("  2^r: {");
		for (int k = m - 1; k >= -1; --k)
			printf("%a, ", (double)(float)((k < 0 ? 1.0L : c[k]) * powl(logl(2.0L), k + 2)));
		printf("0x1p+0}\n");
	}
	return 0;
}
