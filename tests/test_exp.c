/* The generated vector exp of each x86 target, measured in ulp against
 * double exp over [-87, 0].  The bound is what the polynomial and range
 * reduction achieve (README: "Numerics"); a regression past it fails. */
#include <criterion/criterion.h>
#include <math.h>

#include "../runtime/mha_cpu.h"
#include "ulp.h"

void mha_exp_scalar(const float *x, float *y, size_t n);
void mha_exp_avx2(const float *x, float *y, size_t n);
void mha_expfast_scalar(const float *x, float *y, size_t n);
void mha_expfast_avx2(const float *x, float *y, size_t n);
void mha_exp_avx512(const float *x, float *y, size_t n);
void mha_expfast_avx512(const float *x, float *y, size_t n);

static void check_bound(mha_exp_fn f, const char *target, double bound)
{
	float worst;
	double ulp = ulp_max_exp(f, 7, &worst);

	cr_log_info("%s exp: max %.3f ulp at x = %a", target, ulp, (double)worst);
	cr_assert_leq(ulp, bound, "%s exp: %.3f ulp at x = %a", target,
	              ulp, (double)worst);
}

static void check(mha_exp_fn f, const char *target)
{
	check_bound(f, target, EXP_MAX_ULP);
}

Test(exp, fast_scalar_accuracy)
{
	check_bound(mha_expfast_scalar, "scalar fast", EXPFAST_MAX_ULP);
}

Test(exp, fast_avx2_accuracy)
{
	if (!mha_cpu_supports("avx2"))
		cr_skip_test("this CPU has no AVX2+FMA");
	check_bound(mha_expfast_avx2, "avx2 fast", EXPFAST_MAX_ULP);
}

Test(exp, fast_avx512_accuracy)
{
	if (!mha_cpu_supports("avx512"))
		cr_skip_test("this CPU has no AVX-512");
	check_bound(mha_expfast_avx512, "avx512 fast", EXPFAST_MAX_ULP);
}

Test(exp, avx512_accuracy)
{
	if (!mha_cpu_supports("avx512"))
		cr_skip_test("this CPU has no AVX-512");
	check(mha_exp_avx512, "avx512");
}

Test(exp, scalar_accuracy)
{
	check(mha_exp_scalar, "scalar");
}

Test(exp, avx2_accuracy)
{
	if (!mha_cpu_supports("avx2"))
		cr_skip_test("this CPU has no AVX2+FMA");
	check(mha_exp_avx2, "avx2");
}

/* Special values the softmax relies on, for target f whose error bound is
 * ulp. */
static void special(mha_exp_fn f, const char *t, double ulp)
{
	float x[8] = {0.0f, -INFINITY, -100.0f, -87.5f, -1e30f, -0.0f, -1.0f, -87.0f};
	float y[8];

	f(x, y, 8);
	cr_assert_eq(y[0], 1.0f, "%s: exp(0) = %a", t, (double)y[0]);
	cr_assert_eq(y[1], 0.0f, "%s: exp(-inf) = %a", t, (double)y[1]);
	cr_assert_eq(y[2], 0.0f, "%s: exp(-100) = %a", t, (double)y[2]);
	cr_assert_eq(y[3], 0.0f, "%s: exp(-87.5) = %a", t, (double)y[3]);
	cr_assert_eq(y[4], 0.0f, "%s: exp(-1e30) = %a", t, (double)y[4]);
	cr_assert_eq(y[5], 1.0f, "%s: exp(-0) = %a", t, (double)y[5]);
	cr_assert_float_eq(y[6], expf(-1.0f), (float)(ulp * 0x1p-25), "%s: exp(-1) = %a",
	                   t, (double)y[6]);
	cr_assert(y[7] > 0.0f, "%s: exp(-87) = %a", t, (double)y[7]);
}

Test(exp, special_values)
{
	special(mha_exp_scalar, "scalar", EXP_MAX_ULP);
	special(mha_expfast_scalar, "scalar fast", EXPFAST_MAX_ULP);
	if (mha_cpu_supports("avx2")) {
		special(mha_exp_avx2, "avx2", EXP_MAX_ULP);
		special(mha_expfast_avx2, "avx2 fast", EXPFAST_MAX_ULP);
	}
	if (mha_cpu_supports("avx512")) {
		special(mha_exp_avx512, "avx512", EXP_MAX_ULP);
		special(mha_expfast_avx512, "avx512 fast", EXPFAST_MAX_ULP);
	}
}
