/* The AVX-512 FMA throughput of one core, for benchmarks of avx512 kernels.
 * Compiled with -mavx512f -O2, apart from the rest of the benchmark, and
 * called only on a CPU that has AVX-512. */
#include <immintrin.h>

#include "bench.h"
#include "fma_loop.h"

#define FMA_ITERS (1u << 21) /* about 10 ms at 2 FMAs per cycle, 3 GHz */

/* 32 flops per 512-bit FMA (bench/fma_loop.h). */
double bench_fma512_gflops(void)
{
	BENCH_FMA_LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps, FMA_ITERS, 32.0);
}
