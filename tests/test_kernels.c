/* Every generated kernel of the targets this machine builds (the test list
 * and the committed generated/ ones) against the reference on its case
 * matrix. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../runtime/mha_buf.h"
#include "../runtime/mha_cpu.h"
#include "../runtime/mha_ref.h"
#include "params.h"
#include "props.h"
#include "registry.h"
#ifdef CHECK_ASAN
#include <sanitizer/asan_interface.h>
#endif

#include "kern/count.h"

#define MHA_KERNEL MHA_PROTO
#include "kernels.inc"
#include "generated/kernels.inc"
#undef MHA_KERNEL

/* The test list's kernels (every target this build links), then the
 * committed ones of generated/. */
#define MHA_KERNEL MHA_ENTRY
static const struct mha_kernel kernels[] = {
#include "kernels.inc"
#include "generated/kernels.inc"
};
static const struct mha_kernel listed[] = {
#include "kernels.inc"
};
#undef MHA_KERNEL

#define NKERNELS (sizeof kernels / sizeof kernels[0])

#define NLISTED (sizeof listed / sizeof listed[0])

static int any(const struct mha_kernel *k)
{
	(void)k;
	return 1;
}

/* The indices of the kernels a property applies to, into the test's own
 * array ix, as its parameters: a kernel it does not apply to costs no
 * process (under AddressSanitizer each costs tens of ms).  The properties
 * (tests/props.c) take kernels with --dtype f16 or bf16 too: their inputs
 * stored in the type, their outputs read as 16-bit elements. */
static struct criterion_test_params
kernels_where(int *ix, int (*applies)(const struct mha_kernel *))
{
	size_t n = 0;

	for (size_t i = 0; i < NKERNELS; ++i)
		if (applies(&kernels[i]))
			ix[n++] = (int)i;
	return cr_make_param_array(int, ix, n);
}

static int has_shiftable_bias(const struct mha_kernel *k)
{
	return (k->a.mask & MHA_MASK_BIAS) && !k->a.sinks;
}

static int is_causal(const struct mha_kernel *k)
{
	return (k->a.mask & MHA_MASK_CAUSAL) != 0;
}

static int merges_lse(const struct mha_kernel *k)
{
	return k->merge && props_lse_splits(k);
}

static int is_varlen(const struct mha_kernel *k)
{
	return k->a.varlen != 0;
}

/* kernels with scratch (none under AddressSanitizer, whose malloc the
 * test cannot fail) */
static int takes_scratch(const struct mha_kernel *k)
{
#ifdef CHECK_ASAN
	(void)k;
	return 0;
#else
	const struct mha_args none = {.batch = 1, .seq_q = 1, .seq_kv = 1};
	return k->workspace(&none) != 0;
#endif
}

ParameterizedTestParameters(kernels, match_reference)
{
	return params_index(NKERNELS);
}

/* Each kernel, every case of its matrix: outputs within tolerance of the
 * reference, every output written, nothing written outside. */
ParameterizedTest(int *index, kernels, match_reference)
{
	const struct mha_kernel *k = &kernels[*index];
	char msg[1024];

	if (!mha_cpu_has(k->cpu))
		cr_skip_test("this CPU cannot run %s kernels (needs %s)",
		             k->target, k->cpu);
	cr_assert(check_kernel(k, *index, msg, sizeof msg) == 0, "%s", msg);
}

ParameterizedTestParameters(kernels, bias_shift_invariant)
{
	static int ix[NKERNELS];
	return kernels_where(ix, has_shiftable_bias);
}

/* Bias kernels: a constant added to a bias row does not change the output
 * (unless a sink logit, which the bias does not shift, joins the softmax). */
ParameterizedTest(int *index, kernels, bias_shift_invariant)
{
	const struct mha_kernel *k = &kernels[*index];
	char msg[512];

	if (!mha_cpu_has(k->cpu))
		cr_skip_test("this CPU cannot run %s kernels (needs %s)",
		             k->target, k->cpu);
	cr_assert(props_bias_shift(k, msg, sizeof msg) == 0, "%s", msg);
}

ParameterizedTestParameters(kernels, causal_ignores_future)
{
	static int ix[NKERNELS];
	return kernels_where(ix, is_causal);
}

/* Causal kernels: rows that cannot see changed keys keep every bit. */
ParameterizedTest(int *index, kernels, causal_ignores_future)
{
	const struct mha_kernel *k = &kernels[*index];
	char msg[512];

	if (!mha_cpu_has(k->cpu))
		cr_skip_test("this CPU cannot run %s kernels (needs %s)",
		             k->target, k->cpu);
	cr_assert(props_causal_future(k, msg, sizeof msg) == 0, "%s", msg);
}

ParameterizedTestParameters(kernels, nan_stays_in_its_rows)
{
	static int ix[NKERNELS];
	return kernels_where(ix, any);
}

/* A NaN in one input row reaches only the outputs that depend on it. */
ParameterizedTest(int *index, kernels, nan_stays_in_its_rows)
{
	const struct mha_kernel *k = &kernels[*index];
	char msg[512];

	if (!mha_cpu_has(k->cpu))
		cr_skip_test("this CPU cannot run %s kernels (needs %s)",
		             k->target, k->cpu);
	cr_assert(props_nan_rows(k, msg, sizeof msg) == 0, "%s", msg);
}

ParameterizedTestParameters(kernels, lse_merges_key_ranges)
{
	static int ix[NKERNELS];
	return kernels_where(ix, merges_lse);
}

/* --lse kernels: attention over two key ranges merged by NAME_merge is
 * attention over both (for lengths and positions that do not depend on
 * the call's seq_kv: no causal, window or ALiBi, a dynamic seq_kv). */
ParameterizedTest(int *index, kernels, lse_merges_key_ranges)
{
	const struct mha_kernel *k = &kernels[*index];
	char msg[512];

	if (!mha_cpu_has(k->cpu))
		cr_skip_test("this CPU cannot run %s kernels (needs %s)",
		             k->target, k->cpu);
	cr_assert(props_lse_merge(k, msg, sizeof msg) == 0, "%s", msg);
}

ParameterizedTestParameters(kernels, varlen_sequences_alone)
{
	static int ix[NKERNELS];
	return kernels_where(ix, is_varlen);
}

/* --varlen kernels: a sequence's outputs do not depend on the other
 * sequences of its batch. */
ParameterizedTest(int *index, kernels, varlen_sequences_alone)
{
	const struct mha_kernel *k = &kernels[*index];
	char msg[512];

	if (!mha_cpu_has(k->cpu))
		cr_skip_test("this CPU cannot run %s kernels (needs %s)",
		             k->target, k->cpu);
	cr_assert(props_varlen_alone(k, msg, sizeof msg) == 0, "%s", msg);
}

ParameterizedTestParameters(kernels, embeds)
{
	return params_index(NKERNELS);
}

/* Small stacks, workspaces and a host's thread pool change no output bit,
 * and the stack stays within NAME_STACK_BYTES. */
ParameterizedTest(int *index, kernels, embeds)
{
	const struct mha_kernel *k = &kernels[*index];
	char msg[512];

	if (!mha_cpu_has(k->cpu))
		cr_skip_test("this CPU cannot run %s kernels (needs %s)",
		             k->target, k->cpu);
	cr_assert(props_embedding(k, msg, sizeof msg) == 0, "%s", msg);
}

ParameterizedTestParameters(kernels, nomem_is_nan)
{
	static int ix[NKERNELS];
	return kernels_where(ix, takes_scratch);
}

/* Kernels that take scratch: no memory for it gives NaN outputs and
 * ENOMEM (not under AddressSanitizer, whose malloc the test cannot fail:
 * takes_scratch lists none there). */
ParameterizedTest(int *index, kernels, nomem_is_nan)
{
#ifndef CHECK_ASAN
	const struct mha_kernel *k = &kernels[*index];
	char msg[512];

	if (!mha_cpu_has(k->cpu))
		cr_skip_test("this CPU cannot run %s kernels (needs %s)",
		             k->target, k->cpu);
	cr_assert(props_nomem(k, msg, sizeof msg) == 0, "%s", msg);
#else
	(void)index;
#endif
}

/* The registry really holds the whole test list (tests/kernels.list) for
 * every target this machine builds, and NAME_weights of every --weights
 * kernel. */
Test(kernels, registry_complete)
{
	const char *seen[32];
	size_t nseen = 0;

	for (size_t i = 0; i < NKERNELS; ++i) {
		cr_assert_eq(kernels[i].weights,
		             strstr(kernels[i].name, "_weights") != NULL,
		             "%s: weights iff the name says weights",
		             kernels[i].name);
		/* the 9-argument forms exist iff the spec reads no other input
		 * and its k and v are floats */
		cr_assert_eq(kernels[i].merge != NULL,
		             strstr(kernels[i].name, "_lse") != NULL,
		             "%s: NAME_merge iff the name says lse",
		             kernels[i].name);
		int plain = !kernels[i].a.sinks && !kernels[i].merge &&
		            kernels[i].a.alibi != MHA_ALIBI_SLOPES &&
		            !(kernels[i].a.mask & (MHA_MASK_BOOL | MHA_MASK_KEYS)) &&
		            !kernels[i].a.varlen && !kernels[i].a.kv_dtype &&
		            !kernels[i].a.dtype;
		cr_assert_eq(kernels[i].fn != NULL, plain, "%s: NAME linked iff "
		             "plain", kernels[i].name);
		cr_assert_eq(kernels[i].wfn != NULL, plain && kernels[i].weights,
		             "%s: NAME_weights linked iff plain with weights",
		             kernels[i].name);
	}
	for (size_t i = 0; i < NLISTED; ++i) {
		const char *t = listed[i].target;
		size_t n = 0, w = 0, s;
		for (s = 0; s < nseen && strcmp(seen[s], t); ++s)
			;
		if (s < nseen)
			continue;
		cr_assert_lt(nseen, 32);
		seen[nseen++] = t;
		for (size_t j = 0; j < NLISTED; ++j)
			if (strcmp(listed[j].target, t) == 0) {
				++n;
				w += listed[j].weights;
			}
		cr_assert_eq(n, KERNELS_LISTED, "%zu %s kernels linked, %d listed",
		             n, t, KERNELS_LISTED);
		cr_assert_eq(w, WEIGHTS_LISTED, "%zu %s weights kernels, %d listed",
		             w, t, WEIGHTS_LISTED);
	}
	cr_assert_eq(nseen, TARGETS_HOST, "%zu targets linked, %d built here",
	             nseen, TARGETS_HOST);
}

/* A guarded buffer placed at another's page offset (the benchmarks' outputs
 * at their inputs'): there, with its whole guard before and after it. */
Test(buffers, guarded_at_a_page_offset)
{
	static _Alignas(4096) float like[2048];
	const size_t offs[] = {0, 1, 16, 64, 1000, 1023, 1024, 2047};

	for (size_t i = 0; i < sizeof offs / sizeof offs[0]; ++i) {
		struct mha_guarded g;
		const size_t n = 37 + i;

		cr_assert_eq(mha_guarded_init_at(&g, n, like + offs[i]), 0);
		cr_assert_eq(((uintptr_t)g.data - (uintptr_t)(like + offs[i])) % 4096, 0,
		             "offset %zu floats: the data at %p", offs[i], (void *)g.data);
		cr_assert(g.data >= g.base + MHA_GUARD, "a whole guard before the data");
		for (size_t j = 0; j < n; ++j)
			g.data[j] = (float)j;
		cr_assert(mha_guarded_intact(&g), "writes inside spoil nothing");
		g.data[-1] = 0.0f;
		cr_assert_not(mha_guarded_intact(&g), "a write just before shows");
		g.data[-1] = g.base[0];
		cr_assert(mha_guarded_intact(&g));
		g.base[0] = 0.0f;
		cr_assert_not(mha_guarded_intact(&g), "a write at the guard's start shows");
		g.base[0] = g.data[-1];
		g.data[n + MHA_GUARD - 1] = 0.0f;
		cr_assert_not(mha_guarded_intact(&g), "a write at the guard's end shows");
		mha_guarded_free(&g);
	}
}

/* The buffers the kernels are checked in stop any access one float past
 * the end: ASan in its build (the bytes around the buffer are poisoned),
 * the PROT_NONE page in the others. */
#ifdef CHECK_ASAN
Test(buffers, one_past_the_end_stops)
{
	float *p = check_alloc(37);

	cr_assert_not_null(p);
	cr_assert_not(__asan_address_is_poisoned(p + 36), "the last float is usable");
	cr_assert(__asan_address_is_poisoned(p + 37), "one past the end is open");
	cr_assert(__asan_address_is_poisoned(p - 1), "one before the start is open");
	check_free(p, 37);
}
#else
Test(buffers, one_past_the_end_stops, .signal = SIGSEGV)
{
	float *p = check_alloc(37);
	volatile float *vp = p;

	cr_assert_not_null(p);
	vp[36] = 1.0f; /* the last float is usable */
	cr_assert(check_intact(p));
	(void)vp[37];
	cr_assert_fail("read past the end went unnoticed");
}

/* A write just before the start spoils the guard floats. */
Test(buffers, write_before_start_shows)
{
	float *p = check_alloc(3);

	cr_assert(check_intact(p));
	p[-1] = 0.0f;
	cr_assert_not(check_intact(p));
	check_free(p, 3);
}
#endif
