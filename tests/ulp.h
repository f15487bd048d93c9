/* Accuracy of a generated vector exp against double-precision exp. */
#ifndef MHA_ULP_H
#define MHA_ULP_H

#include <stddef.h>
#include <stdint.h>

/* Measured over every 7th float in [-87, 0] (every 61st under qemu):
 * 0.874 ulp (AVX2, AVX-512), 0.857 ulp (NEON), 1.148 ulp (scalar, whose fma
 * is a multiply and an add).  The pin leaves room for sampling and for
 * compilers contracting a*b+c differently, not for a worse polynomial. */
#define EXP_MAX_ULP 1.2
/* The fast variant (--exp fast: degree-5 minimax): 2.187 ulp (AVX2,
 * AVX-512), 2.409 ulp (scalar), 2.187 ulp (NEON). */
#define EXPFAST_MAX_ULP 2.5

typedef void (*mha_exp_fn)(const float *x, float *y, size_t n);

/* Largest error in ulp of the result over floats x in [-87, 0], every
 * stride-th bit pattern (1: all of them); *worst gets the x where it is. */
double ulp_max_exp(mha_exp_fn f, uint32_t stride, float *worst);

#endif
