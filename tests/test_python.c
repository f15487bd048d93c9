/* The Python package (python/mhagen): tests/test_python.py run by the
 * system's Python with NumPy, one Criterion test per class of it, with
 * build/mhagen, the reference attention as a shared object
 * (build/tests/libpyref.so, from tests/pyref.c and runtime/mha_ref.c) and a
 * fresh kernel cache. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files.h"
#include "params.h"

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

/* The classes of tests/test_python.py. */
static const char *const classes[] = {"AgainstReference", "Cache", "Checks",
                                      "Install"};

static char dir[64]; /* this test's kernel cache */

static void setup(void)
{
	files_tmpdir(dir, sizeof dir, "py");
}

static void teardown(void)
{
	if (dir[0])
		files_remove_tree(dir);
}

TestSuite(python, .init = setup, .fini = teardown, .timeout = 300);

/* The Python to run: $PYTHON, else the first of python3 and
 * /usr/bin/python3 that imports NumPy (tools/install-deps.sh installs
 * python3-numpy for the system's). */
static const char *python(void)
{
	static const char *const tries[] = {"python3", "/usr/bin/python3"};
	const char *env = getenv("PYTHON");
	char cmd[256];

	if (env && *env)
		return env;
	for (size_t i = 0; i < COUNT(tries); ++i) {
		snprintf(cmd, sizeof cmd, "%s -c 'import numpy' > /dev/null 2>&1",
		         tries[i]);
		if (system(cmd) == 0)
			return tries[i];
	}
	return NULL;
}

/* path made absolute (the tests run Python in the repository, but the
 * pip test from elsewhere) into buf of size n. */
static void absolute(const char *path, char *buf, size_t n)
{
	char cwd[PATH_MAX];

	if (path[0] == '/') {
		snprintf(buf, n, "%s", path);
		return;
	}
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	snprintf(buf, n, "%s/%s", cwd, path);
}

ParameterizedTestParameters(python, unittest)
{
	return params_index(COUNT(classes));
}

/* One class of tests/test_python.py passes. */
ParameterizedTest(int *i, python, unittest)
{
	const char *py = python(), *build = getenv("BUILD");
	const char *prog = getenv("MHAGEN");
	char mhagen[PATH_MAX], ref[PATH_MAX], path[PATH_MAX];
	char cmd[4 * PATH_MAX], log[128];
	char *out;
	int rc;

	cr_assert_not_null(py, "no Python with NumPy: run tools/install-deps.sh");
	if (!build || !*build)
		build = "build";
	snprintf(path, sizeof path, "%s/tests/libpyref.so", build);
	cr_assert_eq(access(path, R_OK), 0, "%s: not built", path);
	absolute(path, ref, sizeof ref);
	absolute(prog && *prog ? prog : "build/mhagen", mhagen, sizeof mhagen);
	snprintf(log, sizeof log, "%s/log", dir);
	snprintf(cmd, sizeof cmd, "MHAGEN='%s' MHAGEN_PYREF='%s' "
	         "MHAGEN_CACHE_DIR='%s/cache' PYTHONPATH=python PYTHONDONTWRITEBYTECODE=1 "
	         "%s -m unittest -v tests.test_python.%s > '%s' 2>&1", mhagen,
	         ref, dir, py, classes[*i], log);
	rc = system(cmd);
	out = files_read(log, NULL);
	cr_assert_eq(rc, 0, "%s\n%s", cmd, out ? out : "(no output)");
	free(out);
}
