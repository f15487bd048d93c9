/* One shape's inputs and calls, shared by make bench (bench/bench.c) and
 * make bench-ab (bench/ab.c): a generated kernel as its registry line
 * describes it (mhagen --emit registry), its inputs filled the same way in
 * both, one call of the kernel, the reference or the OpenBLAS baseline on
 * them, and the machine's FMA peak. */
#ifndef MHA_BENCH_JOB_H
#define MHA_BENCH_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "../runtime/mha_ref.h"

#define BENCH_PEAK_RUNS 11 /* runs of the FMA loop (and read loop) timed */

/* What the errors start with ("bench", "bench-ab"). */
extern const char *bench_prog;

/* A kernel and the spec it was generated for. */
struct shape {
	const char *name;
	mha_args_fn *fn;
	struct mha_attn attn;
	size_t seq_q, seq_kv; /* fixed by the spec */
};

/* A kernel's registry line (mhagen --emit registry) as its declaration, and
 * as an entry of a table of shapes:
 *   #define MHA_KERNEL BENCH_PROTO, then #include "kernels.inc"
 *   #define MHA_KERNEL BENCH_SHAPE, then a table that includes it again */
#define BENCH_PROTO(name, tgt, cpu, sq, skv, plain, wts, lse, stack, ...)  \
	mha_args_fn name##_args;
#define BENCH_SHAPE(name, tgt, cpu, sq, skv, plain, wts, lse, stack, ...)  \
	{#name, name##_args, {__VA_ARGS__}, sq, skv},

enum impl { KERNEL, REFERENCE, OPENBLAS };

/* One implementation applied to one shape's buffers. */
struct job {
	const struct shape *sh;
	size_t batch;
	enum impl impl;
	const float *q, *k, *v;
	/* k and v as the kernel and the reference read them: k and v, or
	 * their f16 or bf16 bits (--kv-dtype; k and v then hold the stored
	 * values, for OpenBLAS) */
	const void *kx, *vx;
	/* q as the kernel reads it: q, or its f16 or bf16 bits (--dtype; q
	 * then holds the stored values, and the kernel writes 16-bit outputs
	 * at out's start) */
	const void *qx;
	float *out, *s; /* s: OpenBLAS workspace, seq_q * seq_kv floats */
	const float *bias; /* NULL unless the mask has bias */
	const uint8_t *bool_mask, *key_mask; /* NULL unless the mask has them */
};

/* The buffers of one shape's inputs, and of the reference's output. */
struct inputs {
	float *q, *k, *v, *ref, *s, *bias;
	uint8_t *bm, *km;
	void *k16, *v16, *q16;
	size_t no;        /* output floats */
	size_t kvbytes;   /* bytes of K and V as stored */
	double tol;       /* max|kernel - reference| allowed */
};

/* Allocate and fill sh's inputs for a batch of items from seed (uniform in
 * [-1, 1); bool and key masks hide about one key in eight), and set *j to
 * the reference applied to them, into in->ref.  -1 with a message when the
 * shape's mask, inputs or batch are not benchmarked, or out of memory (in then
 * holds nothing); else 0. */
int job_inputs(struct inputs *in, struct job *j, const struct shape *sh,
               size_t batch, uint64_t seed);
void job_inputs_free(struct inputs *in);

/* Run the job once; seconds taken (wall clock). */
double job_run(const struct job *j);

/* After a kernel of --dtype f16 or bf16 (job j) wrote its n outputs at
 * out's start as 16-bit values: the n outputs as floats, in place. */
void job_out_floats(const struct job *j, float *out, size_t n);

/* Largest |x - y| over n floats; infinite when x holds a NaN (an output the
 * kernel did not write, or a wrong one). */
double job_max_err(const float *x, const float *y, size_t n);

/* "h8 dk64 s512 causal", "decode h32 dk128 q1 kv2048 f16kv batch8". */
void job_label(char *buf, size_t size, const struct shape *sh, size_t batch);

/* Useful flops: 2 (dk + dv) per head and visible (query, key) pair. */
double job_flops(const struct shape *sh, size_t batch);

/* One run of the FMA loop of vectors of width floats (16: AVX-512, else
 * 256-bit): this core's GFLOP/s, about 10 ms of it. */
double job_fma(int width);

/* Median single-core FMA GFLOP/s of vectors of width floats (8: AVX2, 16:
 * AVX-512), after a warm-up (the core takes a while to reach its full
 * clock), on the calling thread: per second of wall-clock time, or of
 * clock's (a CPU-time clock, for kernels timed by one) unless NULL. */
double job_peak(int width, double (*clock)(void));

#endif
