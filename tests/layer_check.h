/* Layer checking shared by the Criterion tests (tests/test_layer.c) and the
 * AArch64 driver under qemu (tests/neon_check.c): a generated layer
 * (mhagen --embed) against the double-precision reference of the whole
 * layer, on inputs chosen to break it. */
#ifndef MHA_LAYER_CHECK_H
#define MHA_LAYER_CHECK_H

#include <stddef.h>

#include "../runtime/mha_abi.h"

/* A generated layer and its spec (one MHA_LAYER registry line,
 * tests/registry.h). */
struct mha_layer_kernel {
	const char *name;
	const char *target;
	const char *cpu;                  /* features it needs (mha_cpu_has) */
	mha_layer_fn *forward;            /* NAME_forward */
	mha_layer_pack_fn *pack;          /* NAME_pack */
	mha_layer_size_fn *packed_floats; /* NAME_packed_floats */
	mha_layer_workspace_fn *workspace; /* NAME_workspace */
	size_t seq_q, seq_kv;             /* 0: any */
	struct mha_layer l;
};

/* Every case of layer k: the forward within tolerance of the reference,
 * every output written and nothing outside, the same bits with a
 * workspace of exactly NAME_workspace bytes as with malloc.  0, or -1
 * with the first failure in msg. */
int check_layer(const struct mha_layer_kernel *k, char *msg, size_t n);

#endif
