/* What one core of this machine can do at best: AVX2 FMA throughput and read
 * bandwidth from memory.  Compiled with -mavx2 -mfma -O2; the benchmark takes
 * the median of several runs of each, in the same run as the kernels. */
#include <immintrin.h>

#include "../runtime/mha_time.h"
#include "bench.h"

#define FMA_ITERS (1u << 22) /* about 10 ms at 2 FMAs per cycle, 3 GHz */
#define FMA_ACCS 12          /* independent chains: latency 4-5 x 2 pipes */

/* 12 independent chains of acc = acc * a + b, FMA_ITERS rounds.  a just
 * below 1 and b small keep the values normal (no denormal slow path).  The
 * start values come through a volatile and every chain ends in an empty asm
 * that reads it, so the compiler computes all 12 as written. */
double bench_fma_gflops(void)
{
	static volatile float seed = 1.0f;
	const __m256 a = _mm256_set1_ps(0x1.fffffep-1f);
	const __m256 b = _mm256_set1_ps(0x1p-20f);
	__m256 acc[FMA_ACCS];
	double t0, t;

	for (int i = 0; i < FMA_ACCS; ++i)
		acc[i] = _mm256_set1_ps(seed * (float)i);
	t0 = mha_now();
	for (unsigned r = 0; r < FMA_ITERS; ++r) {
		acc[0] = _mm256_fmadd_ps(acc[0], a, b);
		acc[1] = _mm256_fmadd_ps(acc[1], a, b);
		acc[2] = _mm256_fmadd_ps(acc[2], a, b);
		acc[3] = _mm256_fmadd_ps(acc[3], a, b);
		acc[4] = _mm256_fmadd_ps(acc[4], a, b);
		acc[5] = _mm256_fmadd_ps(acc[5], a, b);
		acc[6] = _mm256_fmadd_ps(acc[6], a, b);
		acc[7] = _mm256_fmadd_ps(acc[7], a, b);
		acc[8] = _mm256_fmadd_ps(acc[8], a, b);
		acc[9] = _mm256_fmadd_ps(acc[9], a, b);
		acc[10] = _mm256_fmadd_ps(acc[10], a, b);
		acc[11] = _mm256_fmadd_ps(acc[11], a, b);
	}
	for (int i = 0; i < FMA_ACCS; ++i)
		__asm__ volatile("" : : "x"(acc[i]));
	t = mha_now() - t0;
	return 16.0 * FMA_ACCS * (double)FMA_ITERS / t * 1e-9;
}

/* Eight chains of adds over 64 floats per round, so the adds never limit
 * the loads. */
double bench_read_gbs(const float *a, size_t n, float *sink)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	__m256 s4 = s0, s5 = s0, s6 = s0, s7 = s0;
	float out[8];
	double t0, t;

	t0 = mha_now();
	for (size_t i = 0; i < n; i += 64) {
		s0 = _mm256_add_ps(s0, _mm256_load_ps(a + i));
		s1 = _mm256_add_ps(s1, _mm256_load_ps(a + i + 8));
		s2 = _mm256_add_ps(s2, _mm256_load_ps(a + i + 16));
		s3 = _mm256_add_ps(s3, _mm256_load_ps(a + i + 24));
		s4 = _mm256_add_ps(s4, _mm256_load_ps(a + i + 32));
		s5 = _mm256_add_ps(s5, _mm256_load_ps(a + i + 40));
		s6 = _mm256_add_ps(s6, _mm256_load_ps(a + i + 48));
		s7 = _mm256_add_ps(s7, _mm256_load_ps(a + i + 56));
	}
	t = mha_now() - t0;
	s0 = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
	s4 = _mm256_add_ps(_mm256_add_ps(s4, s5), _mm256_add_ps(s6, s7));
	_mm256_storeu_ps(out, _mm256_add_ps(s0, s4));
	*sink = 0.0f;
	for (int i = 0; i < 8; ++i)
		*sink += out[i];
	return (double)n * sizeof(float) / t * 1e-9;
}
