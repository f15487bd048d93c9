/* The kernels of the AArch64 targets (and the portable ones), built by clang
 * and by gcc for AArch64, checked against the reference under qemu-aarch64
 * (tests/neon_check.c does the checking). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern/count.h"
#include "params.h"

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

ParameterizedTestParameters(neon, kernels_match_reference)
{
	return params_index(sizeof compilers / sizeof compilers[0]);
}

/* Every kernel of compiler cc's build (the test list for each AArch64 and
 * portable target, and the committed ones), every case, under qemu. */
ParameterizedTest(int *ci, neon, kernels_match_reference, .timeout = 600)
{
	const char *const *cc = &compilers[*ci];
	static char out[1 << 16], list[1 << 16];
	int rc;
	size_t ok = 0, linked = 0;

	cr_assert_eq(run(*cc, "--list", list, sizeof list), 0, "%s", list);
	for (const char *p = list; (p = strchr(p, '\n')); ++p)
		++linked;
	cr_assert_geq(linked, (size_t)KERNELS_LISTED * TARGETS_CROSS,
	              "%s build links %zu kernels, the list has %d for each of %d "
	              "targets", *cc, linked, KERNELS_LISTED, TARGETS_CROSS);
	rc = run(*cc, "", out, sizeof out);
	for (const char *p = out; (p = strstr(p, "ok ")); ++p)
		++ok;
	cr_assert(rc == 0, "%s build: failures under qemu:\n%s", *cc, out);
	cr_assert_eq(ok, linked, "%s build: %zu of %zu kernels passed:\n%s", *cc,
	             ok, linked, out);
}

ParameterizedTestParameters(neon, exp_accuracy)
{
	return params_index(sizeof compilers / sizeof compilers[0]);
}

/* Every exp of compiler cc's build (accurate and fast, each AArch64 and
 * portable target, each in base e and base 2), against its pinned bound;
 * the driver says ok or FAIL per exp and fails when one is past its
 * bound. */
ParameterizedTest(int *ci, neon, exp_accuracy, .timeout = 600)
{
	const char *const *cc = &compilers[*ci];
	char out[4096];
	int rc = run(*cc, "--exp", out, sizeof out), n = 0;

	for (const char *p = out; (p = strstr(p, " exp")); ++p)
		++n;
	cr_log_info("%s build:\n%s", *cc, out);
	cr_assert(rc == 0, "%s build: %s", *cc, out);
	cr_assert_geq(n, 8, "%s build: only %d exps measured:\n%s", *cc, n, out);
	cr_assert_null(strstr(out, "FAIL"), "%s build: %s", *cc, out);
}
