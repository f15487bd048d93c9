/* The generated vector exp of every target this machine builds, measured in
 * ulp against double exp over [-87, 0].  The bound is what the polynomial
 * and range reduction achieve (README: "Numerics"); a regression past it
 * fails. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <string.h>

#include "../runtime/mha_cpu.h"
#include "kern/count.h"
#include "params.h"
#include "ulp.h"

ParameterizedTestParameters(exp, accuracy)
{
	return params_index(ulp_nexps);
}

ParameterizedTest(int *i, exp, accuracy)
{
	const struct ulp_exp *e = &ulp_exps[*i];
	float worst;
	double ulp;

	if (!mha_cpu_has(e->cpu))
		cr_skip_test("this CPU cannot run %s (needs %s)", e->name, e->cpu);
	ulp = ulp_max_exp(e->fn, 7, &worst);
	cr_log_info("%s: max %.3f ulp at x = %a", e->name, ulp, (double)worst);
	cr_assert_leq(ulp, e->bound, "%s: %.3f ulp at x = %a", e->name, ulp,
	              (double)worst);
}

ParameterizedTestParameters(exp, special_values)
{
	return params_index(ulp_nexps);
}

/* Special values the softmax relies on. */
ParameterizedTest(int *i, exp, special_values)
{
	const struct ulp_exp *e = &ulp_exps[*i];
	float x[8] = {0.0f, -INFINITY, -100.0f, -87.5f, -1e30f, -0.0f, -1.0f, -87.0f};
	float y[8];
	const char *t = e->name;

	if (!mha_cpu_has(e->cpu))
		cr_skip_test("this CPU cannot run %s (needs %s)", e->name, e->cpu);
	e->fn(x, y, 8);
	cr_assert_eq(y[0], 1.0f, "%s: exp(0) = %a", t, (double)y[0]);
	cr_assert_eq(y[1], 0.0f, "%s: exp(-inf) = %a", t, (double)y[1]);
	cr_assert_eq(y[2], 0.0f, "%s: exp(-100) = %a", t, (double)y[2]);
	cr_assert_eq(y[3], 0.0f, "%s: exp(-87.5) = %a", t, (double)y[3]);
	cr_assert_eq(y[4], 0.0f, "%s: exp(-1e30) = %a", t, (double)y[4]);
	cr_assert_eq(y[5], 1.0f, "%s: exp(-0) = %a", t, (double)y[5]);
	cr_assert_float_eq(y[6], expf(-1.0f), (float)(e->bound * 0x1p-25),
	                   "%s: exp(-1) = %a", t, (double)y[6]);
	cr_assert(y[7] > 0.0f, "%s: exp(-87) = %a", t, (double)y[7]);
}

/* Both variants of every target this machine builds are linked. */
Test(exp, every_host_target)
{
	cr_assert_eq(ulp_nexps, 2 * TARGETS_HOST, "%zu exps for %d targets",
	             (size_t)ulp_nexps, TARGETS_HOST);
}
