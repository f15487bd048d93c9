/* The command lines the spec and cli tests share: argument lists, the bad
 * ones with the piece of message each must give, and parsing them. */
#ifndef MHA_TEST_CASES_H
#define MHA_TEST_CASES_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stddef.h>

#include "../generator/cli.h"
#include "params.h"

#define MAXARG 64
#define FIX "tests/fixtures/spec/"
#define COUNT(a) (sizeof (a) / sizeof (a)[0])
#define HD "--h", "8", "--dk", "64"
#define BIG "99999999999999999999"

/* A NULL-terminated argument list after the program name. */
struct args {
	const char *v[MAXARG];
};


/* A bad command line and a piece its one-line message must contain: the
 * flag (or file) at fault and the value. */
struct bad {
	struct args a;
	const char *want;
};


/* Every case names the flag or value at fault.  The parser rejects each
 * (test_spec); the program does too (test_cli). */
extern const struct bad bad_cases[];
extern const size_t nbad_cases;

/* Parse args (argv[0] is supplied); the return code of mhagen_parse_args. */
int cases_parse(struct mhagen_cli *cli, const struct args *a, char *err);

/* Parse args that must be valid. */
void cases_parse_ok(struct mhagen_cli *cli, const struct args *a);

#endif
