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

#endif
