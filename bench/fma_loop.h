/* The FMA-throughput loop of bench/peak.c and bench/peak512.c, for one
 * vector type: 12 independent chains of acc = acc * a + b, ITERS rounds.
 * a just below 1 and b small keep the values normal (no denormal slow
 * path).  The start values come through a volatile and every chain ends in
 * an empty asm that reads it, so the compiler computes all 12 as written.
 * Expands to a function body returning GFLOP/s (flops per FMA given). */
#ifndef MHA_BENCH_FMA_LOOP_H
#define MHA_BENCH_FMA_LOOP_H

#include "../runtime/mha_time.h"

#define BENCH_FMA_ACCS 12 /* independent chains: latency 4-5 x 2 pipes */

#define BENCH_FMA_LOOP(vec, set1, fmadd, iters, flops)                      \
	static volatile float seed = 1.0f;                                  \
	const vec a = set1(0x1.fffffep-1f);                                 \
	const vec b = set1(0x1p-20f);                                       \
	vec acc[BENCH_FMA_ACCS];                                            \
	double t0, t;                                                       \
	for (int i = 0; i < BENCH_FMA_ACCS; ++i)                            \
		acc[i] = set1(seed * (float)i);                              \
	t0 = mha_now();                                                     \
	for (unsigned r = 0; r < (iters); ++r) {                            \
		acc[0] = fmadd(acc[0], a, b);                                \
		acc[1] = fmadd(acc[1], a, b);                                \
		acc[2] = fmadd(acc[2], a, b);                                \
		acc[3] = fmadd(acc[3], a, b);                                \
		acc[4] = fmadd(acc[4], a, b);                                \
		acc[5] = fmadd(acc[5], a, b);                                \
		acc[6] = fmadd(acc[6], a, b);                                \
		acc[7] = fmadd(acc[7], a, b);                                \
		acc[8] = fmadd(acc[8], a, b);                                \
		acc[9] = fmadd(acc[9], a, b);                                \
		acc[10] = fmadd(acc[10], a, b);                              \
		acc[11] = fmadd(acc[11], a, b);                              \
	}                                                                   \
	for (int i = 0; i < BENCH_FMA_ACCS; ++i)                            \
		__asm__ volatile("" : : "v"(acc[i]));                        \
	t = mha_now() - t0;                                                 \
	return (flops) * BENCH_FMA_ACCS * (double)(iters) / t * 1e-9

#endif
