/* mhagen example: call the generated kernels (attn__avx2 where the CPU has
 * AVX2 and FMA, attn__scalar everywhere) and compare each with a naive
 * attention written here.  Exit status 1 when one differs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "attn__scalar.h"
#if defined(__x86_64__)
#include "attn__avx2.h"
#endif
#ifdef HAVE_ATTN_ANY
#include "attn_any.h" /* the CMake example's --target avx512,avx2,scalar file */
#endif

enum { B = 2, S = 37, H = 4, D = 32 }; /* as attn.spec says: h 4, dk 32 */

/* softmax(q k^T / sqrt(D) + causal mask) v, layout [b][s][h][d]. */
static void naive(const float *q, const float *k, const float *v, float *out)
{
	for (int b = 0; b < B; ++b)
		for (int i = 0; i < S; ++i)
			for (int h = 0; h < H; ++h) {
				const float *qi = q + ((b * S + i) * H + h) * D;
				double w[S], max = -INFINITY, sum = 0;
				for (int j = 0; j <= i; ++j) {
					const float *kj = k + ((b * S + j) * H + h) * D;
					double dot = 0;
					for (int d = 0; d < D; ++d)
						dot += (double)qi[d] * kj[d];
					w[j] = dot / sqrt((double)D);
					max = w[j] > max ? w[j] : max;
				}
				for (int j = 0; j <= i; ++j)
					sum += w[j] = exp(w[j] - max);
				for (int d = 0; d < D; ++d) {
					double acc = 0;
					for (int j = 0; j <= i; ++j)
						acc += w[j] * v[((b * S + j) * H + h) * D + d];
					out[((b * S + i) * H + h) * D + d] = (float)(acc / sum);
				}
			}
}

typedef void kernel_fn(const float *, const float *, const float *, float *,
                       size_t, size_t, size_t, const int32_t *, const float *);

/* Run fn and compare with want; 0 when every output is within 1e-4. */
static int check(const char *name, kernel_fn *fn, const float *q,
                 const float *k, const float *v, const float *want)
{
	static float out[B * S * H * D];
	double err = 0;

	fn(q, k, v, out, B, S, S, NULL, NULL);
	for (int i = 0; i < B * S * H * D; ++i)
		err = fmax(err, fabs((double)out[i] - want[i]));
	printf("%s: max |error| %.2g %s\n", name, err, err <= 1e-4 ? "ok" : "WRONG");
	return err <= 1e-4 ? 0 : 1;
}

int main(void)
{
	static float q[B * S * H * D], k[B * S * H * D], v[B * S * H * D];
	static float want[B * S * H * D];
	int bad = 0;

	srand(7);
	for (int i = 0; i < B * S * H * D; ++i) {
		q[i] = (float)(rand() / (RAND_MAX / 2.0) - 1);
		k[i] = (float)(rand() / (RAND_MAX / 2.0) - 1);
		v[i] = (float)(rand() / (RAND_MAX / 2.0) - 1);
	}
	naive(q, k, v, want);
	bad |= check("attn__scalar", attn__scalar, q, k, v, want);
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		bad |= check("attn__avx2", attn__avx2, q, k, v, want);
	else
		printf("attn__avx2: not run (this CPU lacks AVX2 or FMA)\n");
#endif
#ifdef HAVE_ATTN_ANY
	bad |= check("attn_any", attn_any, q, k, v, want);
	printf("attn_any ran its %s variant\n", attn_any_variant());
#endif
	return bad;
}
