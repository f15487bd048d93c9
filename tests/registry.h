/* The kernels a test binary links, from registry lines written by
 * `mhagen --emit registry`: one MHA_KERNEL(...) per kernel, behind its
 * target's architecture guard (so one registry serves the x86 tests and the
 * AArch64 driver alike; each links the kernels its architecture builds).
 * Fields: name, target, cpu (the features it needs, for mha_cpu_has),
 * seq_q, seq_kv (0: any), plain (1 when the 9-argument NAME exists), wts
 * (1 when the kernel has --weights), lse (1 when it has --lse, so
 * NAME_merge), stack (NAME_STACK_BYTES, its stack bound), then the fields of its struct mha_attn as designated
 * initializers.
 *
 * A consumer defines MHA_KERNEL as MHA_PROTO and includes the registry
 * files, to declare every kernel, then as MHA_ENTRY inside a table of
 * struct mha_kernel. */
#ifndef MHA_REGISTRY_H
#define MHA_REGISTRY_H

#include "check.h"
#include "layer_check.h"

/* Layers (mhagen --embed): MHA_LAYER(name, target, cpu, seq_q, seq_kv,
 * then struct mha_layer's fields as designated initializers).  A consumer
 * defines MHA_LAYER as MHA_LAYER_PROTO, then as MHA_LAYER_ENTRY inside a
 * table of struct mha_layer_kernel. */
#define MHA_LAYER_PROTO(name, tgt, cpu, sq, skv, ...)                       \
	mha_layer_fn name##_forward;                                           \
	mha_layer_pack_fn name##_pack;                                         \
	mha_layer_size_fn name##_packed_floats;                                \
	mha_layer_workspace_fn name##_workspace;
#define MHA_LAYER_ENTRY(name, tgt, cpu, sq, skv, ...)                       \
	{#name, tgt, cpu, name##_forward, name##_pack, name##_packed_floats,   \
	 name##_workspace, sq, skv, {__VA_ARGS__}},

#define MHA_PROTO(name, tgt, cpu, sq, skv, plain, wts, lse, stack, ...)     \
	mha_args_fn name##_args;                                               \
	mha_workspace_fn name##_workspace;                                     \
	MHA_PROTO_P##plain(name)                                               \
	MHA_PROTO_W##plain##wts(name)                                          \
	MHA_PROTO_M##lse(name)
#define MHA_ENTRY(name, tgt, cpu, sq, skv, plain, wts, lse, stack, ...)     \
	{#name, tgt, cpu, name##_args, MHA_ENTRY_P##plain(name),               \
	 MHA_ENTRY_W##plain##wts(name), wts, sq, skv, {__VA_ARGS__},           \
	 name##_workspace, stack, MHA_ENTRY_M##lse(name)},
/* plain, wts and lse pasted on: NAME, NAME_weights and NAME_merge declared
 * and taken only when they exist */
#define MHA_PROTO_P0(name)
#define MHA_PROTO_P1(name) mha_kernel_fn name;
#define MHA_PROTO_W00(name)
#define MHA_PROTO_W01(name)
#define MHA_PROTO_W10(name)
#define MHA_PROTO_W11(name) mha_weights_fn name##_weights;
#define MHA_ENTRY_P0(name) NULL
#define MHA_ENTRY_P1(name) name
#define MHA_ENTRY_W00(name) NULL
#define MHA_ENTRY_W01(name) NULL
#define MHA_ENTRY_W10(name) NULL
#define MHA_ENTRY_W11(name) name##_weights
#define MHA_PROTO_M0(name)
#define MHA_PROTO_M1(name) mha_merge_fn name##_merge;
#define MHA_ENTRY_M0(name) NULL
#define MHA_ENTRY_M1(name) name##_merge

#endif
