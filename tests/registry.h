/* The kernels a test binary links, from registry lines written by
 * `mhagen --emit registry` (one MHA_KERNEL_<TARGET>(...) per kernel; the
 * last field, wts, is 1 when the kernel also exports NAME_weights).
 * Before including this, define MHA_HAVE_SCALAR, MHA_HAVE_AVX2 and/or
 * MHA_HAVE_NEON for the targets the binary links; KERNEL_INCS lists the
 * registry files (each included twice: prototypes, then table). */
#ifndef MHA_REGISTRY_H
#define MHA_REGISTRY_H

#include "check.h"

#define MHA_PROTO(name, tgt, h, kvh, dk, dv, sq, skv, mask, align, layout, scale, win, wts) \
	void name(const float *, const float *, const float *, float *, size_t,     \
	          size_t, size_t, const int32_t *, const float *);                  \
	MHA_PROTO_W##wts(name)
#define MHA_ENTRY(name, tgt, h, kvh, dk, dv, sq, skv, mask, align, layout, scale, win, wts) \
	{#name, tgt, name, h, kvh, dk, dv, sq, skv, mask, align, layout, scale, win,   \
	 MHA_ENTRY_W##wts(name)},
/* wts pasted on: NAME_weights declared and taken only when it exists */
#define MHA_PROTO_W0(name)
#define MHA_PROTO_W1(name)                                                     \
	void name##_weights(const float *, const float *, const float *, float *,  \
	                    size_t, size_t, size_t, const int32_t *, const float *, \
	                    float *);
#define MHA_ENTRY_W0(name) NULL
#define MHA_ENTRY_W1(name) name##_weights
#define MHA_SKIP(...)

#endif
