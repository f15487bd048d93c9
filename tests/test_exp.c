/* The generated vector exp of every target this machine builds, measured in
 * ulp against double exp over [-87, 0], and its base-2 form (2^x, the tiled
 * softmax's) against double exp2 over [-126, 0].  The bound is what the
 * polynomial and range reduction achieve (README: "Numerics"); a regression
 * past it fails. */
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
	for (int base2 = 0; base2 < 2; ++base2) {
		const char *f = base2 ? "2^x" : "exp";

		ulp = ulp_max_exp(base2 ? e->fn2 : e->fn, base2, 7, &worst);
		cr_log_info("%s %s: max %.3f ulp at x = %a", e->name, f, ulp, (double)worst);
		cr_assert_leq(ulp, e->bound, "%s %s: %.3f ulp at x = %a", e->name, f, ulp,
		              (double)worst);
	}
}

ParameterizedTestParameters(exp, special_values)
{
	return params_index(ulp_nexps);
}

/* Special values the softmax relies on, eleven times over: 88 floats take
 * the grouped forms (N_exps, N_exp2s: the tiled softmax's) on targets with them,
 * the remainder's group where the target has one (AVX2: a group of 6
 * vectors, one of 4, then one alone), as well as the one-vector form; 2^x
 * by ulp_special2 (tests/ulp.c), which the NEON driver runs under qemu too. */
ParameterizedTest(int *i, exp, special_values)
{
	const struct ulp_exp *e = &ulp_exps[*i];
	static const float sp[8] = {0.0f, -INFINITY, -100.0f, -87.5f, -1e30f, -0.0f, -1.0f, -87.0f};
	float x[88], y[88];
	const char *t = e->name;

	if (!mha_cpu_has(e->cpu))
		cr_skip_test("this CPU cannot run %s (needs %s)", e->name, e->cpu);
	for (size_t k = 0; k < 88; ++k)
		x[k] = sp[(k + k / 8) % 8];
	e->fn(x, y, 88);
	for (size_t k = 0; k < 88; ++k) {
		const float v = y[k];

		switch ((k + k / 8) % 8) {
		case 0: case 5:
			cr_assert_eq(v, 1.0f, "%s: exp(%g) = %a at %zu", t, (double)x[k], (double)v, k);
			break;
		case 1: case 2: case 3: case 4:
			cr_assert_eq(v, 0.0f, "%s: exp(%g) = %a at %zu", t, (double)x[k], (double)v, k);
			break;
		case 6:
			cr_assert_float_eq(v, expf(-1.0f), (float)(e->bound * 0x1p-25),
			                   "%s: exp(-1) = %a at %zu", t, (double)v, k);
			break;
		default:
			cr_assert(v > 0.0f, "%s: exp(-87) = %a at %zu", t, (double)v, k);
		}
	}
	char msg[256];

	cr_assert(!ulp_special2(e->fn2, msg, sizeof msg), "%s: %s", t, msg);
}

/* Both variants of every target this machine builds are linked. */
Test(exp, every_host_target)
{
	cr_assert_eq(ulp_nexps, 2 * TARGETS_HOST, "%zu exps for %d targets",
	             (size_t)ulp_nexps, TARGETS_HOST);
}
