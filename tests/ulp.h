/* Accuracy of a generated vector exp against double-precision exp, and of
 * its base-2 form (2^x, the tiled softmax's) against double exp2. */
#ifndef MHA_ULP_H
#define MHA_ULP_H

#include <stddef.h>
#include <stdint.h>

/* Measured over every 7th float in [-87, 0] (every 61st under qemu):
 * 0.874 ulp (AVX2, AVX-512), 0.857 ulp (NEON), 1.148 ulp (scalar, whose fma
 * is a multiply and an add).  The pin leaves room for sampling and for
 * compilers contracting a*b+c differently, not for a worse polynomial.
 * The base-2 form, over every float in [-126, 0]: 0.800 ulp (AVX2), 1.072
 * (scalar), 0.782 (NEON, every 61st); it needs no split ln2, so the same
 * pin holds. */
#define EXP_MAX_ULP 1.2
/* The fast variant (--exp fast: degree-5 minimax): 2.187 ulp (AVX2,
 * AVX-512), 2.409 ulp (scalar), 2.187 ulp (NEON); base 2: 2.134 (AVX2),
 * 2.314 (scalar), 2.129 (NEON). */
#define EXPFAST_MAX_ULP 2.5

typedef void (*mha_exp_fn)(const float *x, float *y, size_t n);

/* A target's generated exp (mhagen --emit exp: NAME is exp, NAME_2 is 2^x),
 * from the registry lines of exp.inc and expfast.inc (mhagen --emit
 * registry on the same spec: only the name, target and cpu fields are
 * read). */
struct ulp_exp {
	const char *name, *target, *cpu;
	mha_exp_fn fn, fn2;
	double bound; /* EXP_MAX_ULP or EXPFAST_MAX_ULP, both bases */
};
#define ULP_PROTO(name, tgt, cpu, ...) \
	void name(const float *, float *, size_t); \
	void name##_2(const float *, float *, size_t);
#define ULP_ACCURATE(name, tgt, cpu, ...) {#name, tgt, cpu, name, name##_2, EXP_MAX_ULP},
#define ULP_FAST(name, tgt, cpu, ...) {#name, tgt, cpu, name, name##_2, EXPFAST_MAX_ULP},

/* Every exp the build links (tests/exps.c). */
extern const struct ulp_exp ulp_exps[];
extern const size_t ulp_nexps;

/* Largest error in ulp of the result over floats x in [-87, 0] (base2:
 * 2^x over [-126, 0]), every stride-th bit pattern (1: all of them);
 * *worst gets the x where it is. */
double ulp_max_exp(mha_exp_fn f, int base2, uint32_t stride, float *worst);

/* 2^x at the values the softmax relies on, eleven times over (88 floats:
 * the grouped forms on targets with them): exact at the integers, 0 at and
 * below -126.5 and for NaN, between -126.5 and -126 either 0 (the masked
 * form) or 2^x, a subnormal, within two of its steps (2^-149).  0 if all
 * hold; else 1 with the first miss in msg. */
int ulp_special2(mha_exp_fn f2, char *msg, size_t len);

#endif
