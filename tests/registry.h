/* The kernels a test binary links, from registry lines written by
 * `mhagen --emit registry`: one MHA_KERNEL(...) per kernel, behind its
 * target's architecture guard (so one registry serves the x86 tests and the
 * AArch64 driver alike; each links the kernels its architecture builds).
 * Fields: name, target, cpu (the features it needs, for mha_cpu_has), h,
 * kv_heads, dk, dv, seq_q, seq_kv, mask, align, layout, scale, window, wts
 * (1 when the kernel also exports NAME_weights).
 *
 * A consumer defines MHA_KERNEL as MHA_PROTO and includes the registry
 * files, to declare every kernel, then as MHA_ENTRY inside a table of
 * struct mha_kernel. */
#ifndef MHA_REGISTRY_H
#define MHA_REGISTRY_H

#include "check.h"

#define MHA_PROTO(name, tgt, cpu, h, kvh, dk, dv, sq, skv, mask, align, layout, scale, win, wts) \
	mha_kernel_fn name;                                                    \
	MHA_PROTO_W##wts(name)
#define MHA_ENTRY(name, tgt, cpu, h, kvh, dk, dv, sq, skv, mask, align, layout, scale, win, wts) \
	{#name, tgt, cpu, name, h, kvh, dk, dv, sq, skv, mask, align, layout,   \
	 scale, win, MHA_ENTRY_W##wts(name)},
/* wts pasted on: NAME_weights declared and taken only when it exists */
#define MHA_PROTO_W0(name)
#define MHA_PROTO_W1(name) mha_weights_fn name##_weights;
#define MHA_ENTRY_W0(name) NULL
#define MHA_ENTRY_W1(name) name##_weights

#endif
