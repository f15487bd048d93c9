/* Properties of attention that hold whatever the inputs, checked on
 * generated kernels without the reference. */
#ifndef MHA_PROPS_H
#define MHA_PROPS_H

#include <stddef.h>

#include "check.h"

/* Adding a constant to every bias of a query row leaves the output
 * unchanged (softmax is shift invariant).  For kernels with a bias mask;
 * 0, or -1 with a message. */
int props_bias_shift(const struct mha_kernel *k, char *msg, size_t len);

/* With a causal mask, changing keys and values that a row cannot see
 * leaves that row's output bit for bit the same.  0, or -1 with a message. */
int props_causal_future(const struct mha_kernel *k, char *msg, size_t len);

/* A NaN in one row of q, k or v changes only outputs of the same batch
 * item that depend on that row: q, its own output row (zeros); k, the rows
 * of the head group that see that key; v, the NaN's column in that head
 * group (NaN in the rows that see the key).  Every other output keeps every
 * bit.  0, or -1 with a message. */
int props_nan_rows(const struct mha_kernel *k, char *msg, size_t len);

/* A --lse kernel with a dynamic key length, on keys [0, s1) and [s1,
 * seq_kv) by two calls (the bias columns and padding lengths cut to each
 * range; the sinks on the first call only, the second's -inf), the results
 * merged by NAME_merge, gives what one call on all keys gives, out and lse
 * within rounding.  0, or -1 with a message. */
int props_lse_merge(const struct mha_kernel *k, char *msg, size_t len);
/* 1 when props_lse_merge applies to k: --lse, a dynamic seq_kv, and no
 * causal, window or ALiBi (whose keys and scores follow a call's seq_kv),
 * no boolean or key mask and no --mask-dims (the split cuts only a bias
 * of one plane). */
int props_lse_splits(const struct mha_kernel *k);

/* Embedding: the kernel run on a thread with a 64 KiB stack uses at most
 * its stated stack bound (not under AddressSanitizer, whose frames are
 * larger); with a workspace of NAME_workspace bytes at an odd address it
 * uses it and writes nothing past it; with one too small, and through a
 * host's parallel-for of 3 threads (with and without a workspace; the
 * weights too), each item run once; each time the output keeps every bit
 * of the default call's.  0, or -1 with a message. */
int props_embedding(const struct mha_kernel *k, char *msg, size_t len);

/* A kernel that takes scratch, called with no workspace when malloc fails
 * (this file replaces malloc; not under AddressSanitizer, which replaces it
 * too): every output NaN and errno ENOMEM.  0, or -1 with a message. */
int props_nomem(const struct mha_kernel *k, char *msg, size_t len);

/* --varlen: a sequence's outputs (and lse, weights) keep every bit when
 * the other sequences of its batch change their data and lengths (with
 * packed, moving it to other rows of the buffers).  0, or -1 with a
 * message. */
int props_varlen_alone(const struct mha_kernel *k, char *msg, size_t len);

#endif
