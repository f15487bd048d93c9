/* Aligned and guarded float buffers for tests and benchmarks. */
#ifndef MHA_BUF_H
#define MHA_BUF_H

#include <stddef.h>

/* 64-byte aligned array of n floats (n may be 0); free with mha_free. */
float *mha_alloc(size_t n);
void mha_free(void *p);

/* n floats that end exactly where a PROT_NONE page begins, so reading or
 * writing one float past the end faults; MHA_GUARD floats of the guard
 * payload lie just before the start (see mha_fenced_intact).  The data is
 * aligned to 4 bytes only: kernels read and write callers' buffers with
 * unaligned loads and stores.  NULL when the mapping fails; free with
 * mha_fenced_free. */
float *mha_fenced_alloc(size_t n);
void mha_fenced_free(float *p, size_t n);
/* 1 when the guard floats before a fenced buffer still hold the payload. */
int mha_fenced_intact(const float *p);

/* A buffer of n floats surrounded by guard floats holding a NaN payload that
 * no computation produces, so a stray write on either side is detected. */
struct mha_guarded {
	float *data; /* n usable floats */
	size_t n;
	float *base; /* allocation: guard (MHA_GUARD floats or more), data,
	              * guard; NULL when fenced */
};

#define MHA_GUARD 64 /* guard floats on each side */

int mha_guarded_init(struct mha_guarded *g, size_t n);
/* The same with the data at the address of like modulo the 4 KiB page (and
 * so on the same cache sets as like's rows: a benchmark's output placed as
 * its inputs, as an allocator places buffers of their size, whatever the
 * guard before it).  like must be 4-byte aligned. */
int mha_guarded_init_at(struct mha_guarded *g, size_t n, const void *like);
/* The same with the data in a fenced buffer: the guard after it is the
 * PROT_NONE page. */
int mha_guarded_init_fenced(struct mha_guarded *g, size_t n);
void mha_guarded_free(struct mha_guarded *g);
/* Fill the data with the guard payload (a NaN) so unwritten outputs show. */
void mha_guarded_poison(struct mha_guarded *g);
/* 1 when both guards still hold the payload. */
int mha_guarded_intact(const struct mha_guarded *g);
/* 1 when x is the guard payload. */
int mha_is_poison(float x);

#endif
