/* The benchmark's baselines: the machine's own single-core FMA peak and read
 * bandwidth (bench/peak.c) and attention composed from OpenBLAS calls the way
 * a user writes it by hand (bench/blas_attn.c). */
#ifndef MHA_BENCH_H
#define MHA_BENCH_H

#include <stddef.h>

#include "../runtime/mha_ref.h"

/* One run of an AVX2 FMA-throughput loop on the calling thread: GFLOP/s,
 * counting 16 flops per 256-bit fused multiply-add. */
double bench_fma_gflops(void);
/* The same with AVX-512 (bench/peak512.c), 32 flops per fused multiply-add;
 * only on a CPU that has it. */
double bench_fma512_gflops(void);

/* One pass summing the n floats at a (64-byte aligned, n a multiple of 64)
 * with AVX2 loads: GB/s read.  The sum goes to *sink so the loads stay. */
double bench_read_gbs(const float *a, size_t n, float *sink);

/* x->out = softmax(q k^T * scale + bias + masks) v for the inputs in x,
 * layout bshd, with one cblas_sgemm for the scores and one for P V per
 * head, strided into the [seq][h][d] tensors, and a scalar softmax per row
 * in between; the masks causal, bias (its planes by a->mask_dims), bool and
 * keys.  s is a workspace of seq_q * seq_kv floats.  Padding, layouts other
 * than bshd and windows are not supported (returns -1; else 0). */
int blas_attention(const struct mha_attn *a, const struct mha_args *x,
                   float *s);

#endif
