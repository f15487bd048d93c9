/* What one core of this machine can do at best: AVX2 FMA throughput and read
 * bandwidth from memory.  Compiled with -mavx2 -mfma -O2; the benchmark takes
 * the median of several runs of each, in the same run as the kernels. */
#include <immintrin.h>

#include "../runtime/mha_time.h"
#include "bench.h"
#include "fma_loop.h"

#define FMA_ITERS (1u << 22) /* about 10 ms at 2 FMAs per cycle, 3 GHz */

/* 16 flops per 256-bit FMA (bench/fma_loop.h). */
double bench_fma_gflops(void)
{
	BENCH_FMA_LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps, FMA_ITERS, 16.0);
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
