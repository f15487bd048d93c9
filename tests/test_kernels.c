/* Every generated x86 kernel (scalar, AVX2 and AVX-512; the test list and the
 * committed generated/ ones) against the reference on its case matrix. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../runtime/mha_cpu.h"
#include "../runtime/mha_ref.h"
#include "props.h"
#include "registry.h"
#ifdef CHECK_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define MHA_KERNEL_SCALAR MHA_PROTO
#define MHA_KERNEL_AVX2 MHA_PROTO
#define MHA_KERNEL_AVX512 MHA_PROTO
#define MHA_KERNEL_NEON MHA_SKIP
#include "scalar/kernels.inc"
#include "avx2/kernels.inc"
#include "avx512/kernels.inc"
#include "generated/kernels.inc"
#undef MHA_KERNEL_SCALAR
#undef MHA_KERNEL_AVX2
#undef MHA_KERNEL_AVX512

static const struct mha_kernel kernels[] = {
#define MHA_KERNEL_SCALAR MHA_ENTRY
#define MHA_KERNEL_AVX2 MHA_ENTRY
#define MHA_KERNEL_AVX512 MHA_ENTRY
#include "scalar/kernels.inc"
#include "avx2/kernels.inc"
#include "avx512/kernels.inc"
#include "generated/kernels.inc"
};

#define NKERNELS (sizeof kernels / sizeof kernels[0])

/* Parameters are indices: Criterion runs each test in a fresh process, where
 * the table's pointers are only valid when looked up again. */
static struct criterion_test_params every_kernel(void)
{
	static size_t index[NKERNELS];

	for (size_t i = 0; i < NKERNELS; ++i)
		index[i] = i;
	return cr_make_param_array(size_t, index, NKERNELS);
}

ParameterizedTestParameters(kernels, match_reference)
{
	return every_kernel();
}

/* Each kernel, every case of its matrix: outputs within tolerance of the
 * reference, every output written, nothing written outside. */
ParameterizedTest(size_t *index, kernels, match_reference)
{
	const struct mha_kernel *k = &kernels[*index];
	char msg[1024];

	if (!mha_cpu_supports(k->target))
		cr_skip_test("this CPU cannot run %s kernels", k->target);
	cr_assert(check_kernel(k, *index, msg, sizeof msg) == 0, "%s", msg);
}

ParameterizedTestParameters(kernels, bias_shift_invariant)
{
	return every_kernel();
}

/* Bias kernels: a constant added to a bias row does not change the output. */
ParameterizedTest(size_t *index, kernels, bias_shift_invariant)
{
	const struct mha_kernel *k = &kernels[*index];
	char msg[512];

	if (!(k->mask & MHA_MASK_BIAS))
		cr_skip_test("%s has no bias", k->name);
	if (!mha_cpu_supports(k->target))
		cr_skip_test("this CPU cannot run %s kernels", k->target);
	cr_assert(props_bias_shift(k, msg, sizeof msg) == 0, "%s", msg);
}

ParameterizedTestParameters(kernels, causal_ignores_future)
{
	return every_kernel();
}

/* Causal kernels: rows that cannot see changed keys keep every bit. */
ParameterizedTest(size_t *index, kernels, causal_ignores_future)
{
	const struct mha_kernel *k = &kernels[*index];
	char msg[512];

	if (!(k->mask & MHA_MASK_CAUSAL))
		cr_skip_test("%s is not causal", k->name);
	if (!mha_cpu_supports(k->target))
		cr_skip_test("this CPU cannot run %s kernels", k->target);
	cr_assert(props_causal_future(k, msg, sizeof msg) == 0, "%s", msg);
}

ParameterizedTestParameters(kernels, nan_stays_in_its_rows)
{
	return every_kernel();
}

/* A NaN in one input row reaches only the outputs that depend on it. */
ParameterizedTest(size_t *index, kernels, nan_stays_in_its_rows)
{
	const struct mha_kernel *k = &kernels[*index];
	char msg[512];

	if (!mha_cpu_supports(k->target))
		cr_skip_test("this CPU cannot run %s kernels", k->target);
	cr_assert(props_nan_rows(k, msg, sizeof msg) == 0, "%s", msg);
}

/* The registry really holds the whole test list for every x86 target, and
 * NAME_weights of every --weights kernel (8 in the list, 1 in generated/). */
Test(kernels, registry_complete)
{
	size_t scalar = 0, avx2 = 0, avx512 = 0, wscalar = 0, wavx2 = 0;

	for (size_t i = 0; i < NKERNELS; ++i) {
		int s = strcmp(kernels[i].target, "scalar") == 0;
		int a = strcmp(kernels[i].target, "avx2") == 0;
		scalar += s;
		avx2 += a;
		avx512 += strcmp(kernels[i].target, "avx512") == 0;
		wscalar += s && kernels[i].wfn;
		wavx2 += a && kernels[i].wfn;
		cr_assert_eq(kernels[i].wfn != NULL,
		             strstr(kernels[i].name, "_weights") != NULL,
		             "%s: NAME_weights linked iff the name says weights",
		             kernels[i].name);
	}
	cr_assert_geq(scalar, 46, "only %zu scalar kernels linked", scalar);
	cr_assert_geq(avx2, 49, "only %zu avx2 kernels linked", avx2);
	cr_assert_geq(avx512, 47, "only %zu avx512 kernels linked", avx512);
	cr_assert_geq(wscalar, 8, "only %zu scalar weights kernels", wscalar);
	cr_assert_geq(wavx2, 9, "only %zu avx2 weights kernels", wavx2);
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
