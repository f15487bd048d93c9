/* The table of every exp a test build links (exp.inc and expfast.inc, each
 * line behind its target's guard), shared by test_exp and the AArch64
 * driver. */
#include "ulp.h"

#define MHA_KERNEL ULP_PROTO
#include "exp/exp.inc"
#include "exp/expfast.inc"
#undef MHA_KERNEL

const struct ulp_exp ulp_exps[] = {
#define MHA_KERNEL ULP_ACCURATE
#include "exp/exp.inc"
#undef MHA_KERNEL
#define MHA_KERNEL ULP_FAST
#include "exp/expfast.inc"
#undef MHA_KERNEL
};
const size_t ulp_nexps = sizeof ulp_exps / sizeof ulp_exps[0];
