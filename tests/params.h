/* Criterion parameters that are indices.  Criterion copies parameters into
 * each test's process, where pointers in them would dangle: a test gets an
 * index into its static table and looks its case up there. */
#ifndef MHA_TEST_PARAMS_H
#define MHA_TEST_PARAMS_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stddef.h>

#define PARAMS_MAX 1024

/* The parameters 0..n-1, as int. */
static inline struct criterion_test_params params_index(size_t n)
{
	static int ix[PARAMS_MAX];

	cr_assert_leq(n, PARAMS_MAX, "%zu parameters, at most %d", n, PARAMS_MAX);
	for (size_t i = 0; i < n; ++i)
		ix[i] = (int)i;
	return cr_make_param_array(int, ix, n);
}

#endif
