/* NEON kernels, built by clang and by gcc for AArch64, checked against the
 * reference under qemu-aarch64 (tests/neon_check.c does the checking). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulp.h" /* the exp bounds of tests/test_exp.c hold on NEON too */

static const char *qemu(void)
{
	const char *q = getenv("QEMU");
	return q ? q : "qemu-aarch64 -L /usr/aarch64-linux-gnu";
}

static const char *dir(void)
{
	const char *d = getenv("BUILD");
	return d ? d : "build";
}

/* Run the driver built by compiler cc with args; output into buf. */
static int run(const char *cc, const char *args, char *buf, size_t n)
{
	char cmd[1024];
	FILE *p;
	size_t len = 0, got;

	snprintf(cmd, sizeof cmd, "%s %s/tests/neon_check_%s %s 2>&1", qemu(),
	         dir(), cc, args);
	p = popen(cmd, "r");
	cr_assert_not_null(p, "cannot run %s", cmd);
	while (len + 1 < n && (got = fread(buf + len, 1, n - 1 - len, p)) > 0)
		len += got;
	buf[len] = '\0';
	return pclose(p);
}

/* Parameters are indices into this table: each test runs in a fresh
 * process, where pointers from the parent's table would be meaningless. */
static const char *const compilers[] = {"clang", "gcc"};
static int compiler_index[] = {0, 1};

ParameterizedTestParameters(neon, kernels_match_reference)
{
	return cr_make_param_array(int, compiler_index, 2);
}

/* Every NEON (and scalar) kernel, every case, under qemu. */
ParameterizedTest(int *ci, neon, kernels_match_reference, .timeout = 600)
{
	const char *const *cc = &compilers[*ci];
	static char out[1 << 16];
	int rc = run(*cc, "", out, sizeof out);
	size_t ok = 0;

	for (const char *p = out; (p = strstr(p, "ok ")); ++p)
		++ok;
	cr_assert(rc == 0, "%s build: failures under qemu:\n%s", *cc, out);
	cr_assert_geq(ok, 93, "%s build: only %zu kernels passed:\n%s", *cc, ok, out);
}

ParameterizedTestParameters(neon, exp_accuracy)
{
	return cr_make_param_array(int, compiler_index, 2);
}

/* Both exp variants of compiler cc's build, against their pinned bounds. */
ParameterizedTest(int *ci, neon, exp_accuracy, .timeout = 600)
{
	static const char *const flag[] = {"--exp", "--expfast"};
	static const double bound[] = {EXP_MAX_ULP, EXPFAST_MAX_ULP};
	const char *const *cc = &compilers[*ci];

	for (int i = 0; i < 2; ++i) {
		char out[256];
		double ulp = -1.0;
		int rc = run(*cc, flag[i], out, sizeof out);
		cr_assert(rc == 0 && sscanf(out, "exp %lf", &ulp) == 1,
		          "%s build %s: %s", *cc, flag[i], out);
		cr_log_info("neon (%s) %s: %s", *cc, flag[i], out);
		cr_assert_leq(ulp, bound[i], "%s build %s: %s", *cc, flag[i], out);
	}
}
