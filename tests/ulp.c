/* Accuracy of a generated vector exp in ulp against double exp (exp2). */
#include "ulp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The size of one ulp of the float nearest to r (r > 0). */
static double ulp_of(double r)
{
	int e;

	frexp(r, &e); /* r = m * 2^e, m in [0.5, 1) */
	if (e - 1 < -126)
		return 0x1p-149;
	return ldexp(1.0, e - 24);
}

double ulp_max_exp(mha_exp_fn f, int base2, uint32_t stride, float *worst)
{
	enum { CHUNK = 4096 };
	float x[CHUNK], y[CHUNK];
	double max = 0.0;
	/* bit patterns of -0.0 up to -87.0 (-126.0), the float range [-87, 0]
	 * ([-126, 0]) */
	const uint32_t lo = 0x80000000u, hi = base2 ? 0xc2fc0000u : 0xc2ae0000u;
	uint32_t u = lo;

	*worst = 0.0f;
	while (u <= hi) {
		size_t n = 0;
		for (; n < CHUNK && u <= hi; ++n) {
			memcpy(&x[n], &u, sizeof u);
			u = hi - u < stride ? hi + 1 : u + stride;
		}
		f(x, y, n);
		for (size_t i = 0; i < n; ++i) {
			double r = base2 ? exp2((double)x[i]) : exp((double)x[i]);
			double e = fabs((double)y[i] - r) / ulp_of(r);
			if (e > max || isnan(y[i])) {
				max = isnan(y[i]) ? INFINITY : e;
				*worst = x[i];
			}
		}
		if (u == 0)
			break; /* wrapped */
	}
	return max;
}
