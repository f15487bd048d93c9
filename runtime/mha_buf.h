/* Aligned and guarded float buffers for tests and benchmarks. */
#ifndef MHA_BUF_H
#define MHA_BUF_H

#include <stddef.h>

/* 64-byte aligned array of n floats (n may be 0); free with mha_free. */
float *mha_alloc(size_t n);
void mha_free(void *p);

/* A buffer of n floats surrounded by guard floats holding a NaN payload that
 * no computation produces, so a stray write on either side is detected. */
struct mha_guarded {
	float *data; /* n usable floats */
	size_t n;
	float *base; /* allocation: guard, data, guard */
};

#define MHA_GUARD 64 /* guard floats on each side */

int mha_guarded_init(struct mha_guarded *g, size_t n);
void mha_guarded_free(struct mha_guarded *g);
/* Fill the data with the guard payload (a NaN) so unwritten outputs show. */
void mha_guarded_poison(struct mha_guarded *g);
/* 1 when both guards still hold the payload. */
int mha_guarded_intact(const struct mha_guarded *g);
/* 1 when x is the guard payload. */
int mha_is_poison(float x);

#endif
