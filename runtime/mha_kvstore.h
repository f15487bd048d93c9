/* Stores into a 16-bit KV cache (--kv-dtype f16, bf16): a float rounded to
 * nearest, ties to even.  f16: magnitudes from 65520 on become inf (65504
 * is the largest finite), below 2^-14 subnormals; bf16: past FLT_MAX's
 * rounding inf.  A NaN stays a quiet NaN, its sign and the payload's high
 * bits kept.  The reference's conversions (runtime/mha_ref.h), and the
 * decoder step's (mhagen --kv-cache): a generated layer carries a copy of
 * the function between its marks, renamed. */
#ifndef MHA_KVSTORE_H
#define MHA_KVSTORE_H

#include <stdint.h>
#include <string.h>

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

#endif
