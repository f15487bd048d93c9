/* The kernels a test binary links, from registry lines written by
 * `mhagen --emit registry` (one MHA_KERNEL_<TARGET>(...) per kernel).
 * Before including this, define MHA_HAVE_SCALAR, MHA_HAVE_AVX2 and/or
 * MHA_HAVE_NEON for the targets the binary links; KERNEL_INCS lists the
 * registry files (each included twice: prototypes, then table). */
#ifndef MHA_REGISTRY_H
#define MHA_REGISTRY_H

#include "check.h"

#define MHA_PROTO(name, tgt, h, kvh, dk, dv, sq, skv, mask, align, layout, scale, win) \
	void name(const float *, const float *, const float *, float *, size_t,     \
	          size_t, size_t, const int32_t *, const float *);
#define MHA_ENTRY(name, tgt, h, kvh, dk, dv, sq, skv, mask, align, layout, scale, win) \
	{#name, tgt, name, h, kvh, dk, dv, sq, skv, mask, align, layout, scale, win},
#define MHA_SKIP(...)

#endif
