/* Stores into a 16-bit KV cache (--kv-dtype f16, bf16): a float rounded to
 * nearest, ties to even.  f16: magnitudes from 65520 on become inf (65504
 * is the largest finite), below 2^-14 subnormals; bf16: past FLT_MAX's
 * rounding inf.  A NaN stays a quiet NaN, its sign and the payload's high
 * bits kept.  Into a q8 cache (--kv-dtype q8): 32 floats as one ggml q8_0
 * block.  The reference's conversions (runtime/mha_ref.h), and the decoder
 * step's (mhagen --kv-cache): a generated layer carries a copy of the
 * functions between their marks, renamed. */
#ifndef MHA_KVSTORE_H
#define MHA_KVSTORE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mha_abi.h"

/* mha_store f16: begin */
static inline uint16_t mha_f16_from_float(float f)
{
	uint32_t u, a, sign;

	memcpy(&u, &f, sizeof u);
	sign = (u >> 16) & 0x8000u;
	a = u & 0x7fffffffu;
	if (a > 0x7f800000u) /* NaN: quiet, the payload's high bits kept */
		return (uint16_t)(sign | 0x7e00u | (a >> 13 & 0x3ffu));
	if (a >= 0x477ff000u) /* 65520 and up (and inf) round to inf */
		return (uint16_t)(sign | 0x7c00u);
	if (a < 0x38800000u) {
		/* below 2^-14: a subnormal m * 2^-24 (or 0), rounded to nearest
		 * even */
		const uint32_t e = a >> 23, mant = (a & 0x7fffffu) | 0x800000u;
		const uint32_t shift = 126 - e; /* mant * 2^-shift units */
		uint32_t q, rem, half;
		if (shift >= 32)
			return (uint16_t)sign;
		q = mant >> shift;
		rem = mant & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		q += rem > half || (rem == half && (q & 1));
		return (uint16_t)(sign | q);
	}
	/* normal: rebias, round the 13 dropped bits to nearest even (a carry
	 * into the exponent is right, up to 65504's successor inf) */
	a -= 0x38000000u;
	a += 0xfffu + (a >> 13 & 1u);
	return (uint16_t)(sign | a >> 13);
}
/* mha_store f16: end */

/* mha_store bf16: begin */
static inline uint16_t mha_bf16_from_float(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet, high payload kept */
		return (uint16_t)(u >> 16 | 0x40u);
	u += 0x7fffu + (u >> 16 & 1u); /* to nearest even; past FLT_MAX: inf */
	return (uint16_t)(u >> 16);
}
/* mha_store bf16: end */

/* mha_store q8: begin */
/* x[0..31] as one q8_0 block, as ggml's quantize_row_q8_0_ref: the scale
 * d = max |x| / 127 (stored as f16), each value round(x * (1 / d)), 0 for
 * an all-zero block; with an inf or NaN among x, d is NaN and the values 0
 * (every element reads as NaN). */
static inline void mha_q8_from_floats(const float *x, struct mha_q8_0 *b)
{
	float amax = 0.0f, d, id;
	int finite = 1;

	for (int i = 0; i < 32; ++i) {
		finite &= isfinite(x[i]) != 0;
		amax = fmaxf(amax, fabsf(x[i]));
	}
	d = finite ? amax / 127.0f : NAN;
	id = finite && d != 0.0f ? 1.0f / d : 0.0f;
	b->d = mha_f16_from_float(d);
	for (int i = 0; i < 32; ++i)
		b->qs[i] = finite ? (int8_t)roundf(x[i] * id) : 0;
}
/* mha_store q8: end */

#endif
