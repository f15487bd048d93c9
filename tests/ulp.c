/* Accuracy of a generated vector exp in ulp against double exp (exp2). */
#include "ulp.h"

#include <math.h>
#include <stdio.h>
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

int ulp_special2(mha_exp_fn f2, char *msg, size_t len)
{
	static const float exact[8] = {0.0f, -INFINITY, -150.0f, -126.5f, -1e30f, -0.0f, -1.0f, -126.0f};
	static const float want[8] = {1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.5f, 0x1p-126f};
	static const float win[8] = {-126.25f, -126.49f, -126.0001f, -126.3f, NAN, -126.125f, -126.4f, -126.01f};
	float x[88], y[88];

	for (size_t k = 0; k < 88; ++k)
		x[k] = exact[(k + k / 8) % 8];
	f2(x, y, 88);
	for (size_t k = 0; k < 88; ++k)
		if (y[k] != want[(k + k / 8) % 8]) {
			snprintf(msg, len, "2^%g = %a at %zu", (double)x[k], (double)y[k], k);
			return 1;
		}
	for (size_t k = 0; k < 88; ++k)
		x[k] = win[(k + k / 8) % 8];
	f2(x, y, 88);
	for (size_t k = 0; k < 88; ++k) {
		const double r = isnan(x[k]) ? 0.0 : exp2((double)x[k]);

		if (y[k] == 0.0f ? !isnan(x[k]) && r >= 0x1p-126 : !(fabs((double)y[k] - r) <= 0x1p-148)) {
			snprintf(msg, len, "2^%g = %a at %zu", (double)x[k], (double)y[k], k);
			return 1;
		}
	}
	return 0;
}
