/* Accuracy of a generated vector exp against double-precision exp. */
#ifndef MHA_ULP_H
#define MHA_ULP_H

#include <stddef.h>
#include <stdint.h>

typedef void (*mha_exp_fn)(const float *x, float *y, size_t n);

/* Largest error in ulp of the result over floats x in [-87, 0], every
 * stride-th bit pattern (1: all of them); *worst gets the x where it is. */
double ulp_max_exp(mha_exp_fn f, uint32_t stride, float *worst);

#endif
