/* Kernel checking shared by the Criterion tests and the AArch64 driver that runs
 * under qemu: builds cases that break naive kernels, runs a generated kernel
 * and the reference on them, compares. */
#ifndef MHA_CHECK_H
#define MHA_CHECK_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../runtime/mha_abi.h"

/* A generated kernel and the spec it was generated for (one registry line,
 * tests/registry.h). */
struct mha_kernel {
	const char *name;
	const char *target; /* the target table it was generated from */
	const char *cpu;    /* the CPU features it needs (mha_cpu_has) */
	mha_args_fn *args;  /* NAME_args */
	mha_kernel_fn *fn;  /* the 9-argument NAME, or NULL without one */
	mha_weights_fn *wfn; /* NAME_weights, or NULL without one */
	int weights;        /* generated with --weights (NAME_args writes them) */
	size_t seq_q, seq_kv; /* 0: dynamic */
	struct mha_attn a;  /* the problem it solves */
	mha_workspace_fn *workspace; /* NAME_workspace */
	size_t stack;       /* NAME_STACK_BYTES: the stack a call takes at most */
	mha_merge_fn *merge; /* NAME_merge, or NULL without --lse */
};

/* How key padding lengths are chosen for a case. */
enum check_pad { PAD_FULL, PAD_ZERO, PAD_MIXED };

/* Input values: uniform in [-1, 1], or q and k aligned so that scores are
 * near +100 (exp overflows float without the max subtraction). */
enum check_data { DATA_UNIFORM, DATA_HOT };

struct check_case {
	size_t batch, seq_q, seq_kv;
	enum check_pad pad;
	enum check_data data;
	uint64_t seed;
	int via_args; /* call NAME_args even when the 9-argument NAME exists */
};

/* CHECK_ASAN: built with AddressSanitizer (clang or gcc). */
#if defined(__SANITIZE_ADDRESS__)
#define CHECK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHECK_ASAN 1
#endif
#endif

/* Test buffers of n floats: under AddressSanitizer allocated to the exact
 * float (ASan sees any access past either end), otherwise fenced (ending
 * at a PROT_NONE page, with guard floats before the start).  check_free
 * takes the same n. */
float *check_alloc(size_t n);
void check_free(float *p, size_t n);
/* 1 when the guard before a buffer from check_alloc is intact (always 1
 * under ASan, which watches that memory itself). */
int check_intact(const float *p);

/* The tests' pseudo-random numbers (splitmix64): the next 64 bits, and a
 * float uniform in [-1, 1). */
uint64_t check_rng_next(uint64_t *s);
float check_rng_unit(uint64_t *s);

/* Fill cases for kernel k (sampled so every listed length meets the kernel
 * over the whole matrix); returns how many, at most max. */
size_t check_cases(const struct mha_kernel *k, size_t index,
                   struct check_case *cases, size_t max);

/* Run one case; 0 when the kernel matches the reference within tolerance and
 * wrote exactly its output (and, for a kernel with NAME_weights, when that
 * one's output and weights match too), else -1 with a message in msg. */
int check_run(const struct mha_kernel *k, const struct check_case *c,
              char *msg, size_t msglen);

/* Run every case of kernel k; 0 or -1 with the first failure in msg. */
int check_kernel(const struct mha_kernel *k, size_t index, char *msg,
                 size_t msglen);

/* A host's thread pool as the contract's parallel-for (struct mha_args'
 * parallel, with pool pointing at it): `workers` (at most 8) threads take
 * items from a shared counter; it counts its calls and records a worker
 * that failed to start or an item not run exactly once. */
struct check_pool {
	size_t workers, n;
	mha_task_fn *fn;
	void *task;
	atomic_size_t next, calls;
	unsigned char *ran; /* ran[i]: times item i ran */
	int bad_worker;
};
void check_pool_parallel(void *pool, size_t n, mha_task_fn *fn, void *task);

#endif
