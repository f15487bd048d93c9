/* The spec parser and validator, and the mhagen program that fronts it:
 * flags fill the spec, defaults and canonical names, one clear message per
 * bad input, and the command line's exit codes, streams and output files. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../generator/cli.h"
#include "../generator/spec.h"
#include "files.h"
#include "../runtime/mha_cpu.h"
#include "../generator/gen.h"
#include "../runtime/mha_ref.h"

/* Read a whole file; NUL-terminated, length in *n; the test fails when it
 * cannot. */
static char *slurp(const char *path, size_t *n)
{
	char *buf = files_read(path, n);

	cr_assert_not_null(buf, "cannot read %s", path);
	return buf;
}

extern char **environ;

#define MAXARG 64
#define FIX "tests/fixtures/spec/"
#define COUNT(a) (sizeof (a) / sizeof (a)[0])

/* Criterion copies parameters into each test process, where pointers in
 * them would dangle; tables are static and tests get an index into one. */
static int indices[160];

/* The parameters 0..n-1. */
static struct criterion_test_params index_params(size_t n)
{
	cr_assert(n <= COUNT(indices));
	for (size_t i = 0; i < n; ++i)
		indices[i] = (int)i;
	return cr_make_param_array(int, indices, n);
}

/* A NULL-terminated argument list after the program name. */
struct args {
	const char *v[MAXARG];
};

/* Parse args (argv[0] is supplied); the return code of mhagen_parse_args. */
static int parse(struct mhagen_cli *cli, const struct args *a, char *err)
{
	char *argv[MAXARG + 2] = {"mhagen"};
	int argc = 1;

	for (int i = 0; a->v[i]; ++i)
		argv[argc++] = (char *)a->v[i];
	err[0] = '\0';
	return mhagen_parse_args(cli, argc, argv, err);
}

/* Parse args that must be valid. */
static void parse_ok(struct mhagen_cli *cli, const struct args *a)
{
	char err[MHAGEN_ERR];

	cr_assert_eq(parse(cli, a, err), 0, "%s rejected: %s", a->v[0], err);
}

Test(spec, defaults)
{
	struct mhagen_cli c;
	struct mhagen_target t[MHAGEN_TARGETS_MAX];
	struct mha_spec native;
	char err[MHAGEN_ERR];
	const char *best = native.target;
	size_t n;

	mha_spec_init(&native);
	cr_assert_eq(mhagen_resolve_target(&native, NULL, err), 0, "%s", err);
	cr_assert_eq(mhagen_targets(NULL, t, MHAGEN_TARGETS_MAX, &n, err), 0,
	             "%s", err);

	parse_ok(&c, &(struct args){{"--h", "8", "--dk", "64", "--seq", "128"}});
	cr_assert_eq(c.spec.h, 8);
	cr_assert_eq(c.spec.kv_heads, 8, "kv_heads defaults to h");
	cr_assert_eq(c.spec.dk, 64);
	cr_assert_eq(c.spec.dv, 64, "dv defaults to dk");
	cr_assert_eq(c.spec.seq_q, 128);
	cr_assert_eq(c.spec.seq_kv, 128, "seq_kv defaults to --seq");
	cr_assert_eq(c.spec.mask, 0u);
	cr_assert_eq(c.spec.align, MHA_ALIGN_BOTTOM_RIGHT);
	cr_assert_eq(c.spec.layout, MHA_LAYOUT_BSHD);
	cr_assert_eq(c.spec.scale, 0.0);
	cr_assert_eq(c.spec.block_kv, 0, "unset knobs: the target's default");
	cr_assert_eq(c.spec.block_q + c.spec.mq + c.spec.nk + c.spec.nv, 0);
	cr_assert_eq(c.spec.algo + c.spec.exp + c.spec.threads, 0);
	cr_assert_eq(c.spec.unroll_max, 128);
	cr_assert_eq(c.spec.kv_split, 0);
	cr_assert_not_null(mhagen_target_find(t, n, best), "best target '%s'",
	                   best);
	cr_assert(mha_cpu_has(mhagen_target_find(t, n, best)->cpu),
	          "this CPU runs %s", best);
	for (size_t i = 0; i < n; ++i)
		cr_assert(!mha_cpu_has(t[i].cpu) ||
		          t[i].rank <= mhagen_target_find(t, n, best)->rank,
		          "%s runs here and ranks above %s", t[i].name, best);
	cr_assert_str_eq(c.spec.target, best, "no --target means native");
	cr_assert_null(c.out);
	cr_assert_null(c.header);
	cr_assert_null(c.template_dir);
	cr_assert_str_eq(c.emit, "kernel");
	cr_assert_eq(c.help + c.version, 0);
	parse_ok(&c, &(struct args){{"--h", "2", "--dk", "8", "--target", "native"}});
	cr_assert_str_eq(c.spec.target, best, "--target native is resolved");
	cr_assert_eq(c.spec.seq_q, 0, "no --seq: dynamic");
	cr_assert_eq(c.spec.seq_kv, 0);
}

Test(spec, every_flag)
{
	struct mhagen_cli c;

	parse_ok(&c, &(struct args){{"--h", "16", "--kv-heads", "4", "--dk", "80",
		"--dv", "96", "--seq", "7", "--seq-kv", "300", "--mask", "padding,causal",
		"--causal-align", "top-left", "--layout", "bhsd", "--scale", "0.25"}});
	cr_assert_eq(c.spec.kv_heads, 4);
	cr_assert_eq(c.spec.dv, 96);
	cr_assert_eq(c.spec.seq_q, 7);
	cr_assert_eq(c.spec.seq_kv, 300);
	cr_assert_eq(c.spec.mask, (unsigned)(MHA_MASK_CAUSAL | MHA_MASK_PADDING));
	cr_assert_eq(c.spec.align, MHA_ALIGN_TOP_LEFT);
	cr_assert_eq(c.spec.layout, MHA_LAYOUT_BHSD);
	cr_assert_eq(c.spec.scale, 0.25);
	parse_ok(&c, &(struct args){{"--h", "1", "--dk", "1", "--target", "neon",
		"--name", "my_kernel2", "--block-kv", "32", "--unroll-max", "0",
		"-o", "k.c", "--header", "k.h", "--template-dir", "tpl", "--emit", "exp",
		"--mask", "padding"}});
	cr_assert_str_eq(c.spec.target, "neon");
	cr_assert_str_eq(c.spec.name, "my_kernel2");
	cr_assert_eq(c.spec.block_kv, 32);
	cr_assert_eq(c.spec.unroll_max, 0, "an explicit 0 is kept");
	cr_assert_eq(c.spec.mask, (unsigned)MHA_MASK_PADDING);
	cr_assert_str_eq(c.out, "k.c");
	cr_assert_str_eq(c.header, "k.h");
	cr_assert_str_eq(c.template_dir, "tpl");
	cr_assert_str_eq(c.emit, "exp");
	parse_ok(&c, &(struct args){{"--version"}});
	cr_assert_eq(c.version, 1, "--version needs no spec");
	parse_ok(&c, &(struct args){{"-h"}});
	cr_assert_eq(c.help, 1);
}

/* One canonical-name case: flags and the name they must give. */
struct named {
	struct args a;
	const char *name;
};

static const struct named named_cases[] = {
	{{{"--h", "8", "--dk", "64", "--seq", "128", "--mask", "causal",
	   "--target", "avx2"}}, "mha_f32_h8_dk64_s128_causal__avx2"},
	{{{"--h", "8", "--dk", "64", "--target", "scalar"}},
	 "mha_f32_h8_dk64__scalar"},
	{{{"--h", "8", "--dk", "64", "--seq", "1", "--seq-kv", "100",
	   "--mask", "padding", "--target", "neon"}},
	 "mha_f32_h8_dk64_q1_kv_s100_padding__neon"},
	{{{"--h", "4", "--dk", "32", "--seq-kv", "77", "--target", "avx2"}},
	 "mha_f32_h4_dk32_kv_s77__avx2"},
	{{{"--h", "4", "--dk", "32", "--seq", "9", "--seq-kv", "9",
	   "--target", "avx2"}}, "mha_f32_h4_dk32_s9__avx2"},
	{{{"--h", "32", "--kv-heads", "8", "--dk", "128", "--dv", "64",
	   "--target", "avx2"}}, "mha_f32_h32_kv8_dk128_dv64__avx2"},
	{{{"--h", "2", "--dk", "16", "--mask", "padding,causal",
	   "--causal-align", "top-left", "--layout", "bhsd", "--target",
	   "scalar"}}, "mha_f32_h2_dk16_causal_tl_padding_bhsd__scalar"},
	{{{"--h", "2", "--dk", "16", "--scale", "0.125", "--block-kv", "128",
	   "--unroll-max", "32", "--target", "neon"}},
	 "mha_f32_h2_dk16_sc3e000000_bk128_um32__neon"},
	{{{"--h", "2", "--dk", "16", "--mask", "none", "--causal-align",
	   "bottom-right", "--target", "scalar"}}, "mha_f32_h2_dk16__scalar"},
	{{{"--h", "2", "--dk", "16", "--threads", "openmp", "--exp", "fast",
	   "--nv", "4", "--mq", "16", "--block-q", "32", "--algo", "rows",
	   "--target", "avx2"}},
	 "mha_f32_h2_dk16_rows_bq32_mq16_nv4_fast_openmp__avx2"},
	{{{"--h", "2", "--dk", "16", "--name", "mine", "--target", "scalar"}},
	 "mine"},
	{{{"--h", "2", "--dk", "16", "--window", "4", "--layout", "bhsd",
	   "--scale", "0.125", "--weights", "--algo", "rows", "--target",
	   "neon"}}, "mha_f32_h2_dk16_w4_bhsd_sc3e000000_weights_rows__neon"},
	{{{"--h", "2", "--dk", "16", "--weights", "false", "--target",
	   "scalar"}}, "mha_f32_h2_dk16__scalar"},
	{{{"--h", "2", "--dk", "16", "--weights", "true", "--mask", "causal",
	   "--target", "scalar"}}, "mha_f32_h2_dk16_causal_weights__scalar"},
};

ParameterizedTestParameters(spec, canonical_name)
{
	return index_params(COUNT(named_cases));
}

ParameterizedTest(int *i, spec, canonical_name)
{
	const struct named *n = &named_cases[*i];
	struct mhagen_cli c;
	char buf[MHAGEN_NAME_MAX];

	parse_ok(&c, &n->a);
	cr_assert_str_eq(c.spec.name, n->name);
	mha_spec_canonical_name(&c.spec, buf, sizeof buf);
	if (strcmp(n->name, "mine") == 0)
		cr_assert_str_eq(buf, "mha_f32_h2_dk16__scalar",
		                 "--name leaves the canonical name alone");
	else
		cr_assert_str_eq(buf, n->name);
}

/* mha_spec_command's flags parse back to the same spec. */
Test(spec, command_round_trip)
{
	struct mhagen_cli c, back;
	char cmd[1024], err[MHAGEN_ERR];
	char *argv[64];
	int argc = 0;

	parse_ok(&c, &(struct args){{"--h", "12", "--kv-heads", "3", "--dk", "40",
		"--dv", "24", "--seq", "5", "--seq-kv", "50", "--mask", "causal,padding",
		"--causal-align", "top-left", "--layout", "bhsd", "--scale", "0.3",
		"--weights", "--block-kv", "16", "--target", "scalar"}});
	mha_spec_command(&c.spec, cmd, sizeof cmd);
	cr_assert(strncmp(cmd, "mhagen --h 12 --kv-heads 3 --dk 40", 34) == 0,
	          "command: %s", cmd);
	for (char *t = strtok(cmd, " "); t && argc < 63; t = strtok(NULL, " "))
		argv[argc++] = t;
	cr_assert_eq(mhagen_parse_args(&back, argc, argv, err), 0, "%s", err);
	cr_assert_str_eq(back.spec.name, c.spec.name);
	cr_assert_eq(back.spec.scale, (double)(float)0.3);
	cr_assert_eq(back.spec.weights, 1);
}

Test(spec, spec_text)
{
	struct mha_spec s;
	char err[MHAGEN_ERR];

	mha_spec_init(&s);
	cr_assert_eq(mha_spec_parse_text(&s, "# c\n\n\th=16 # x\r\n dk =  80\n"
		"mask = causal,padding\nname = a_b\n", "t.spec", err), 0, "%s", err);
	cr_assert_eq(mha_spec_finish(&s, err), 0, "%s", err);
	cr_assert_eq(s.h, 16);
	cr_assert_eq(s.dk, 80);
	cr_assert_eq(s.mask, (unsigned)(MHA_MASK_CAUSAL | MHA_MASK_PADDING));
	cr_assert_str_eq(s.name, "a_b");
	mha_spec_init(&s);
	cr_assert_eq(mha_spec_parse_text(&s, "h = 8\n\n# dk\nkv_heads = 2\n",
	                                 "t.spec", err), -1);
	cr_assert_str_eq(err, "t.spec:4: unknown setting 'kv_heads'");
	mha_spec_init(&s);
	cr_assert_eq(mha_spec_set(&s, "dk", "64", err), 0);
	cr_assert_eq(mha_spec_set(&s, "dk", "64", err), -1);
	cr_assert_str_eq(err, "--dk is given twice (again as '64')");
	/* weights is a switch on the command line, true or false in files */
	mha_spec_init(&s);
	cr_assert_eq(mha_spec_parse_text(&s, "h = 2\ndk = 8\nweights = true\n",
	                                 "t.spec", err), 0, "%s", err);
	cr_assert_eq(s.weights, 1);
	mha_spec_init(&s);
	cr_assert_eq(mha_spec_parse_text(&s, "weights = false\n", "t.spec", err),
	             0, "%s", err);
	cr_assert_eq(s.weights, 0);
	mha_spec_init(&s);
	cr_assert_eq(mha_spec_parse_text(&s, "h = 2\nweights = yes\n", "t.spec",
	                                 err), -1);
	cr_assert_str_eq(err, "t.spec:2: --weights: 'yes' is not true or false");
}

/* A bad command line and a piece its one-line message must contain: the
 * flag (or file) at fault and the value. */
struct bad {
	struct args a;
	const char *want;
};

#define HD "--h", "8", "--dk", "64"
#define BIG "99999999999999999999"

/* Every case names the flag or value at fault.  The parser rejects each;
 * cli.rejects runs each through the program as well. */
static const struct bad bad_cases[] = {
	/* not numbers */
	{{{"--h", "abc", "--dk", "64"}}, "--h: 'abc' is not a whole number"},
	{{{"--h", "8", "--dk", "12x"}}, "--dk: '12x'"},
	{{{"--h", "+8", "--dk", "64"}}, "--h: '+8'"},
	{{{"--h", "8 ", "--dk", "64"}}, "--h: '8 '"},
	{{{"--h", "", "--dk", "64"}}, "--h: '' is not a whole number"},
	{{{"--h", "0x10", "--dk", "64"}}, "--h: '0x10'"},
	{{{"--h", "8.0", "--dk", "64"}}, "--h: '8.0'"},
	{{{HD, "--seq", "1e3"}}, "--seq: '1e3'"},
	/* zero, negative */
	{{{"--h", "0", "--dk", "64"}}, "--h: 0 is out of range"},
	{{{"--h", "8", "--dk", "-64"}}, "--dk: -64 is out of range"},
	{{{HD, "--window", "0"}}, "--window: 0 is out of range"},
	{{{HD, "--seq-kv", "0"}}, "--seq-kv: 0 is out of range"},
	{{{HD, "--seq", "-1"}}, "--seq: -1 is out of range"},
	{{{HD, "--kv-heads", "0"}}, "--kv-heads: 0 is out of range"},
	{{{HD, "--unroll-max", "-1"}}, "--unroll-max: -1 is out of range"},
	{{{HD, "--block-q", "0"}}, "--block-q: 0 is out of range"},
	/* overflowing */
	{{{"--h", BIG, "--dk", "64"}}, "--h: " BIG " is out of range"},
	{{{"--h", "8", "--dk", "-" BIG}}, "--dk: -" BIG " is out of range"},
	{{{HD, "--seq", BIG}}, "--seq: " BIG " is out of range"},
	{{{HD, "--seq-kv", "18446744073709551617"}},
	 "--seq-kv: 18446744073709551617 is out of range"},
	{{{HD, "--block-kv", "9223372036854775808"}},
	 "--block-kv: 9223372036854775808 is out of range"},
	{{{HD, "--window", "4294967296"}}, "--window: 4294967296 is out of range"},
	/* past the documented limits */
	{{{"--h", "1025", "--dk", "64"}}, "--h: 1025 is out of range (1 to 1024)"},
	{{{"--h", "8", "--dk", "4097"}}, "--dk: 4097 is out of range (1 to 4096)"},
	{{{HD, "--dv", "4097"}}, "--dv: 4097 is out of range"},
	{{{HD, "--kv-heads", "1025"}}, "--kv-heads: 1025 is out of range"},
	{{{HD, "--seq", "16777217"}}, "--seq: 16777217 is out of range"},
	{{{HD, "--seq-kv", "16777217"}}, "--seq-kv: 16777217 is out of range"},
	{{{HD, "--block-q", "1025"}}, "--block-q: 1025 is out of range"},
	{{{HD, "--block-kv", "4"}}, "--block-kv: 4 is out of range"},
	{{{HD, "--mq", "65"}}, "--mq: 65 is out of range"},
	{{{HD, "--nk", "17"}}, "--nk: 17 is out of range"},
	{{{HD, "--nv", "17"}}, "--nv: 17 is out of range"},
	{{{HD, "--unroll-max", "4097"}}, "--unroll-max: 4097 is out of range"},
	{{{HD, "--name", "a23456789012345678901234567890123456789012345678901234567890"
	   "12345678901234567890123456789012345678901234567890123456789012345678"}},
	 "--name: 'a2345"},
	/* unknown words and flags */
	{{{HD, "--frobnicate", "1"}}, "unknown flag '--frobnicate'"},
	{{{HD, "--h=8"}}, "unknown flag '--h=8'"},
	{{{HD, "-x", "1"}}, "unexpected argument '-x'"},
	{{{HD, "kernel.c"}}, "unexpected argument 'kernel.c'"},
	{{{HD, "--target", ""}}, "--target: unknown target ''"},
	{{{HD, "--target", "AVX2"}}, "--target: unknown target 'AVX2'"},
	{{{HD, "--mask", "diagonal"}}, "--mask: unknown mask 'diagonal'"},
	{{{HD, "--mask", "causal,"}}, "--mask: unknown mask '' in 'causal,'"},
	{{{HD, "--mask", "none,causal"}}, "--mask: unknown mask 'none'"},
	{{{HD, "--mask", ""}}, "--mask: unknown mask '' in ''"},
	{{{HD, "--layout", "hbsd"}}, "--layout: unknown value 'hbsd'"},
	{{{HD, "--causal-align", "middle"}},
	 "--causal-align: unknown value 'middle'"},
	{{{HD, "--emit", "assembly"}}, "--emit: unknown value 'assembly'"},
	{{{HD, "--algo", "sideways"}}, "--algo: unknown value 'sideways'"},
	{{{HD, "--exp", "quick"}}, "--exp: unknown value 'quick'"},
	{{{HD, "--threads", "pthreads"}}, "--threads: unknown value 'pthreads'"},
	{{{HD, "--nv", "17"}}, "--nv: 17 is out of range"},
	{{{HD, "--weights", "--weights"}}, "--weights is given twice"},
	{{{HD, "--weights", "yes"}}, "unexpected argument 'yes'"},
	{{{HD, "--name", "9lives"}}, "--name: '9lives' is not a C identifier"},
	{{{HD, "--name", "my-kernel"}}, "--name: 'my-kernel'"},
	/* repeated and conflicting */
	{{{HD, "--h", "16"}}, "--h is given twice ('8', then '16')"},
	{{{HD, "--dk", "64"}}, "--dk is given twice ('64', then '64')"},
	{{{HD, "--mask", "causal", "--mask", "padding"}},
	 "--mask is given twice ('causal', then 'padding')"},
	{{{HD, "-o", "a.c", "-o", "b.c"}}, "-o is given twice ('a.c', then 'b.c')"},
	{{{HD, "--spec", "a.spec", "--spec", "b.spec"}},
	 "--spec is given twice ('a.spec', then 'b.spec')"},
	{{{HD, "--mask", "causal,padding,causal"}},
	 "--mask: 'causal,padding,causal' names causal twice"},
	{{{HD, "-o", ""}}, "-o needs a non-empty value"},
	{{{HD, "--kv-heads", "3"}}, "--kv-heads: 3 does not divide --h 8"},
	{{{"--h", "12", "--dk", "64", "--kv-heads", "8"}},
	 "--kv-heads: 8 does not divide --h 12"},
	{{{HD, "--causal-align", "top-left"}},
	 "--causal-align: needs a causal --mask"},
	{{{HD, "--mask", "padding", "--causal-align", "top-left"}},
	 "--causal-align: needs a causal --mask"},
	{{{HD, "--block-kv", "12"}}, "--block-kv: 12 is not a multiple of 8"},
	/* missing */
	{{{"--dk", "64"}}, "--h is required"},
	{{{"--h", "8"}}, "--dk is required"},
	{{{"--h", "8", "--dk"}}, "--dk needs a value"},
	{{{HD, "--spec"}}, "--spec needs a value"},
	/* scale */
	{{{HD, "--scale", "nan"}}, "--scale: nan must be a positive finite number"},
	{{{HD, "--scale", "-nan"}}, "--scale: -nan"},
	{{{HD, "--scale", "-1"}}, "--scale: -1 must be a positive"},
	{{{HD, "--scale", "-0.125"}}, "--scale: -0.125"},
	{{{HD, "--scale", "0"}}, "--scale: 0 must be a positive"},
	{{{HD, "--scale", "inf"}}, "--scale: inf"},
	{{{HD, "--scale", "-inf"}}, "--scale: -inf"},
	{{{HD, "--scale", "1e400"}}, "--scale: 1e400"},
	{{{HD, "--scale", "1e-400"}}, "--scale: 1e-400"},
	{{{HD, "--scale", "0.5x"}}, "--scale: '0.5x' is not a number"},
	{{{HD, "--scale", ""}}, "--scale: '' is not a number"},
	/* spec files */
	{{{"--spec", FIX "missing.spec"}},
	 "--spec: cannot open '" FIX "missing.spec'"},
	{{{"--spec", FIX}}, "--spec: cannot read '" FIX "'"},
	{{{"--spec", "/dev/zero"}}, "--spec: '/dev/zero' is too large"},
	{{{"--spec", FIX "binary.spec"}},
	 "--spec: '" FIX "binary.spec' is not a text file"},
	{{{"--spec", FIX "unknown_key.spec"}},
	 FIX "unknown_key.spec:3: unknown setting 'heads'"},
	{{{"--spec", FIX "no_equals.spec"}},
	 FIX "no_equals.spec:2: expected 'key = value', got 'dk 64'"},
	{{{"--spec", FIX "repeated.spec"}},
	 FIX "repeated.spec:3: --h is given twice (again as '16')"},
	{{{"--spec", FIX "overflow.spec"}},
	 FIX "overflow.spec:2: --dk: " BIG " is out of range"},
	{{{"--spec", FIX "nan_scale.spec"}},
	 FIX "nan_scale.spec:3: --scale: nan must be a positive finite number"},
	{{{"--spec", FIX "long_line.spec"}},
	 FIX "long_line.spec:2: line too long"},
	{{{"--spec", FIX "kv_heads.spec"}}, "--kv-heads: 5 does not divide --h 12"},
	{{{"--spec", FIX "good.spec", "--kv-heads", "3"}},
	 "--kv-heads: 3 does not divide --h 8"},
	/* --target native reads the target tables of the template dir */
	{{{HD, "--template-dir", "tests/fixtures/no-such-dir"}},
	 "cannot read template 'tests/fixtures/no-such-dir/main.lua'"},
	{{{HD, "--template-dir", "tests/fixtures/broken-runtime"}},
	 "cannot list targets in 'tests/fixtures/broken-runtime/targets/'"},
};

/* Bad input only the program finds: the spec parses, but generating or
 * writing fails.  "@DIR" stands for a fresh directory of the test. */
static const struct bad run_cases[] = {
	{{{HD, "-o", "/tmp/mhagen-no-such-dir/k.c"}},
	 "cannot write '/tmp/mhagen-no-such-dir/k.c': No such file or directory"},
	{{{HD, "-o", "@DIR"}}, "cannot write '/tmp/mhagen-test-"},
	{{{HD, "--header", "/tmp/mhagen-no-such-dir/k.h"}},
	 "cannot write '/tmp/mhagen-no-such-dir/k.h'"},
	/* (the fixtures hold no target tables: --target native would read them
	 * first) */
	{{{HD, "--target", "scalar", "--template-dir", "tests/fixtures/no-such-dir"}},
	 "cannot read template 'tests/fixtures/no-such-dir/main.lua'"},
	{{{HD, "--target", "scalar", "--template-dir", "tests/fixtures/broken-syntax"}},
	 "tests/fixtures/broken-syntax/main.lua:3: unexpected symbol near '='"},
	{{{HD, "--target", "scalar", "--template-dir", "tests/fixtures/broken-runtime"}},
	 "tests/fixtures/broken-runtime/main.lua:3: attempt to index a nil value"},
	{{{"--h", "1", "--dk", "64", "--target", "scalar", "--template-dir",
	   "tests/fixtures/limits"}},
	 "tests/fixtures/limits/main.lua:11: template runs too long"},
	{{{"--h", "3", "--dk", "64", "--target", "scalar", "--template-dir",
	   "tests/fixtures/limits"}},
	 "tests/fixtures/limits/main.lua:28: template needs too much memory"},
	/* a name of no target table: refused when its table is looked for */
	{{{HD, "--target", "sse9"}},
	 "--target: unknown target 'sse9' (avx2, avx512, neon, scalar, native)"},
	{{{HD, "--mq", "3", "--target", "avx2"}},
	 "--mq 3 is not a multiple of the avx2 vector width 8"},
	{{{"--h", "8", "--dk", "4096", "--block-q", "1024", "--target", "avx2"}},
	 "--block-q 1024: head dim 4096 x 1024 floats exceed the 256 KiB"},
	{{{"--h", "2", "--dk", "8", "--dv", "4096", "--block-kv", "1024"}},
	 "--block-kv 1024: blocks of 1024 keys x dv 4096 take "},
};

ParameterizedTestParameters(spec, rejects)
{
	return index_params(COUNT(bad_cases));
}

ParameterizedTest(int *i, spec, rejects)
{
	const struct bad *b = &bad_cases[*i];
	struct mhagen_cli c;
	char err[MHAGEN_ERR];

	cr_assert_eq(parse(&c, &b->a, err), -1, "accepted; wanted '%s'", b->want);
	cr_assert(strstr(err, b->want), "message '%s' lacks '%s'", err, b->want);
	cr_assert_null(strchr(err, '\n'), "one line: '%s'", err);
}

/* What one run of mhagen did. */
struct run {
	int status; /* exit status, or -1 when it did not exit normally */
	char *out, *err;
	size_t nout, nerr;
};


/* Write text to path. */
static void spit(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f, "cannot create %s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* A fresh temporary directory under /tmp, into buf. */
static void tmpdir(char *buf, size_t n)
{
	snprintf(buf, n, "/tmp/mhagen-test-XXXXXX");
	cr_assert_not_null(mkdtemp(buf));
}

/* The output directory of the running test, if it made one. */
static char outdir[64];

/* Test fini: empty and remove outdir, passed or failed. */
static void cleanup(void)
{
	struct dirent *e;
	DIR *d;

	if (!outdir[0] || !(d = opendir(outdir)))
		return;
	while ((e = readdir(d))) {
		char path[sizeof outdir + 258];
		snprintf(path, sizeof path, "%s/%s", outdir, e->d_name);
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlink(path);
	}
	closedir(d);
	rmdir(outdir);
	outdir[0] = '\0';
}

/* Run mhagen with args, stdout and stderr captured through files. */
static struct run run(const struct args *a)
{
	const char *bin = getenv("MHAGEN") ? getenv("MHAGEN") : "build/mhagen";
	char *argv[MAXARG + 2] = {(char *)bin};
	char dir[64], po[96], pe[96];
	posix_spawn_file_actions_t fa;
	struct run r = {.status = -1};
	pid_t pid;
	int st, rc;

	for (int i = 0; a->v[i]; ++i)
		argv[i + 1] = (char *)a->v[i];
	tmpdir(dir, sizeof dir);
	snprintf(po, sizeof po, "%s/stdout", dir);
	snprintf(pe, sizeof pe, "%s/stderr", dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, po, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, pe, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	rc = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc == 0 && waitpid(pid, &st, 0) == pid) {
		r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		r.out = slurp(po, &r.nout);
		r.err = slurp(pe, &r.nerr);
	}
	unlink(po);
	unlink(pe);
	rmdir(dir);
	cr_assert_eq(rc, 0, "cannot run %s: %s", bin, strerror(rc));
	return r;
}

/* Check a run failed the way every failure must: status 2, nothing on
 * stdout, one "mhagen: " line on stderr containing want. */
static void failed(const struct run *r, const char *want)
{
	cr_assert_eq(r->status, 2, "status %d, stderr: %s", r->status, r->err);
	cr_assert_eq(r->nout, 0, "stdout: %s", r->out);
	cr_assert(strncmp(r->err, "mhagen: ", 8) == 0, "stderr: %s", r->err);
	cr_assert(r->nerr > 0 && r->err[r->nerr - 1] == '\n' &&
	          strchr(r->err, '\n') == r->err + r->nerr - 1,
	          "stderr is not one line: %s", r->err);
	cr_assert(strstr(r->err, want), "stderr '%s' lacks '%s'", r->err, want);
}

/* The number of entries in a directory besides . and .. */
static int entries(const char *path);

/* Run bad command line b through the program twice: as it is, and with
 * -o naming a file that exists (unless b has an -o of its own).  Both runs
 * must fail cleanly and leave the file and its directory as they were. */
static void run_bad(const struct bad *b)
{
	const char *dir = outdir;
	char path[96];
	struct args a = {{NULL}};
	int n = 0, has_o = 0;
	struct run r;

	tmpdir(outdir, sizeof outdir);
	snprintf(path, sizeof path, "%s/k.c", dir);
	spit(path, "old\n");
	for (int i = 0; b->a.v[i]; ++i) {
		has_o |= strcmp(b->a.v[i], "-o") == 0;
		a.v[n++] = strcmp(b->a.v[i], "@DIR") == 0 ? dir : b->a.v[i];
	}
	cr_assert_lt(n + 2, MAXARG);
	r = run(&a);
	failed(&r, b->want);
	if (!has_o) {
		memmove(a.v + 2, a.v, (size_t)n * sizeof a.v[0]);
		a.v[0] = "-o";
		a.v[1] = path;
		r = run(&a);
		failed(&r, b->want);
	}
	cr_assert_str_eq(slurp(path, NULL), "old\n", "the old -o file changed");
	cr_assert_eq(entries(dir), 1, "stray files in %s", dir);
}

/* Every bad command line of the tables, through the program. */
ParameterizedTestParameters(cli, rejects)
{
	return index_params(COUNT(bad_cases));
}

ParameterizedTest(int *i, cli, rejects, .fini = cleanup)
{
	run_bad(&bad_cases[*i]);
}

ParameterizedTestParameters(cli, rejects_at_run)
{
	return index_params(COUNT(run_cases));
}

ParameterizedTest(int *i, cli, rejects_at_run, .fini = cleanup)
{
	struct mhagen_cli c;

	parse_ok(&c, &run_cases[*i].a);
	run_bad(&run_cases[*i]);
}

/* A template stuck in C (a pattern that backtracks without end) is ended
 * by the CPU-time watchdog, here set to 1 s. */
static const struct bad slow_case = {
	{{"--h", "5", "--dk", "8", "--target", "scalar", "--template-dir",
	  "tests/fixtures/limits"}},
	"tests/fixtures/limits/main.lua:39: template runs too long (over 1 s of CPU time)",
};

Test(cli, rejects_stuck_template, .fini = cleanup, .timeout = 60)
{
	setenv("MHAGEN_CPU_SECONDS", "1", 1);
	run_bad(&slow_case);
}

/* The tables hold the cases the issue lists, well over 40 of them. */
Test(cli, enough_cases)
{
	cr_assert_geq(COUNT(bad_cases) + COUNT(run_cases) + 1, 40);
}

static int entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

Test(cli, failure_keeps_output, .fini = cleanup)
{
	const char *dir = outdir;
	char path[96];
	struct run r;

	tmpdir(outdir, sizeof outdir);
	snprintf(path, sizeof path, "%s/k.c", dir);
	spit(path, "old\n");
	r = run(&(struct args){{HD, "--mask", "sideways", "-o", path}});
	failed(&r, "sideways");
	r = run(&(struct args){{HD, "--target", "scalar", "--template-dir",
		"tests/fixtures/none",
		"-o", path, "--header", "h.h"}});
	failed(&r, "tests/fixtures/none/main.lua");
	cr_assert_str_eq(slurp(path, NULL), "old\n", "the old file is untouched");
	cr_assert_eq(entries(dir), 1, "no stray files in %s", dir);
	r = run(&(struct args){{HD, "-o", "/tmp/mhagen-no-such-dir/k.c"}});
	failed(&r, "cannot write '/tmp/mhagen-no-such-dir/k.c'");
}

Test(cli, output_files, .fini = cleanup)
{
	const char *dir = outdir;
	char path[96], hpath[96];
	struct run r, s;
	char *file, *h;
	size_t n;

	tmpdir(outdir, sizeof outdir);
	snprintf(path, sizeof path, "%s/k.c", dir);
	snprintf(hpath, sizeof hpath, "%s/k.h", dir);
	s = run(&(struct args){{HD, "--seq", "128", "--mask", "causal",
		"--target", "avx2"}});
	cr_assert_eq(s.status, 0, "%s", s.err);
	cr_assert_eq(s.nerr, 0);
	cr_assert(strstr(s.out, "void mha_f32_h8_dk64_s128_causal__avx2("));
	r = run(&(struct args){{HD, "--seq", "128", "--mask", "causal",
		"--target", "avx2", "-o", path, "--header", hpath}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(r.nout + r.nerr, 0, "quiet with -o");
	file = slurp(path, &n);
	cr_assert(n == s.nout && memcmp(file, s.out, n) == 0,
	          "-o writes what stdout gets");
	h = slurp(hpath, NULL);
	cr_assert(strstr(h, "#ifndef MHA_F32_H8_DK64_S128_CAUSAL__AVX2_H\n"), "%s", h);
	cr_assert(strstr(h, "void mha_f32_h8_dk64_s128_causal__avx2("), "%s", h);
	cr_assert_eq(entries(dir), 2, "no stray files in %s", dir);
}

Test(cli, deterministic)
{
	const struct args a = {{HD, "--kv-heads", "2", "--mask", "padding,causal",
		"--dv", "20", "--target", "neon"}};
	struct run r = run(&a), s = run(&a);

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(r.nout > 0 && r.nout == s.nout && memcmp(r.out, s.out, r.nout) == 0,
	          "two runs differ");
}

Test(cli, spec_file)
{
	struct run f = run(&(struct args){{"--spec", FIX "good.spec"}});
	struct run g = run(&(struct args){{HD, "--mask", "causal", "--target",
		"avx2"}});
	struct run o = run(&(struct args){{"--spec", FIX "good.spec", "--mask",
		"padding", "--target", "scalar", "--emit", "name"}});
	struct mhagen_cli c;

	cr_assert_eq(f.status, 0, "%s", f.err);
	cr_assert(f.nout > 0 && f.nout == g.nout && memcmp(f.out, g.out, f.nout) == 0,
	          "spec file and flags give different kernels");
	cr_assert_eq(o.status, 0, "%s", o.err);
	cr_assert_str_eq(o.out, "mha_f32_h8_dk64_padding__scalar\n",
	                 "flags override the spec file");
	parse_ok(&c, &(struct args){{"--dk", "32", "--spec", FIX "loose.spec",
		"--kv-heads", "8"}});
	cr_assert_eq(c.spec.h, 16);
	cr_assert_eq(c.spec.dk, 32);
	cr_assert_eq(c.spec.kv_heads, 8);
	cr_assert_eq(c.spec.seq_kv, 300);
	cr_assert_eq(c.spec.layout, MHA_LAYOUT_BHSD);
	cr_assert_str_eq(c.spec.name, "spec_kernel");
}

Test(cli, help_and_version)
{
	struct run h = run(&(struct args){{"--help"}});
	struct run v = run(&(struct args){{"--version"}});

	cr_assert_eq(h.status, 0);
	cr_assert(strncmp(h.out, "usage: mhagen ", 14) == 0, "%s", h.out);
	cr_assert(strstr(h.out, "--kv-heads") && strstr(h.out, "--emit"));
	cr_assert_eq(h.nerr, 0);
	cr_assert_eq(v.status, 0);
	cr_assert_str_eq(v.out, "mhagen 0.1.0\n");
	cr_assert_eq(v.nerr, 0);
}

/* --weights: the kernel and its header have NAME (unchanged) and
 * NAME_weights; the registry line says so; a flag overrides the file. */
Test(cli, weights, .fini = cleanup)
{
	const char *N = "mha_f32_h8_dk64_weights__scalar";
	const char *proto = "(const float *q, const float *k, const float *v, "
		"float *out,\n        size_t batch, size_t seq_q, size_t seq_kv,\n"
		"        const int32_t *kv_len, const float *bias";
	char path[96], hpath[96], want[512];
	struct run r, o, g, plain;
	char *file, *h;

	tmpdir(outdir, sizeof outdir);
	snprintf(path, sizeof path, "%s/k.c", outdir);
	snprintf(hpath, sizeof hpath, "%s/k.h", outdir);
	r = run(&(struct args){{"--spec", FIX "weights.spec", "-o", path,
		"--header", hpath}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	file = slurp(path, NULL);
	h = slurp(hpath, NULL);
	snprintf(want, sizeof want, "void %s%s);", N, proto);
	cr_assert(strstr(file, want) && strstr(h, want), "NAME keeps its ABI");
	snprintf(want, sizeof want, "void %s_weights%s, float *weights);", N, proto);
	cr_assert(strstr(file, want), "the kernel lacks %s", want);
	cr_assert(strstr(h, want), "the header lacks %s", want);
	o = run(&(struct args){{"--spec", FIX "weights.spec", "--emit",
		"registry"}});
	cr_assert_eq(o.status, 0, "%s", o.err);
	cr_assert(strncmp(o.out, "MHA_KERNEL(mha_f32_h8_dk64_weights__scalar, "
	                  "\"scalar\", \"\", ", 48) == 0 &&
	          strstr(o.out, ", 0, 1)\n"), "%s", o.out);
	g = run(&(struct args){{"--spec", FIX "weights.spec", "--weights", "false",
		"--emit", "registry"}});
	cr_assert_eq(g.status, 0, "%s", g.err);
	cr_assert(strncmp(g.out, "MHA_KERNEL(mha_f32_h8_dk64__scalar, ", 36) == 0 &&
	          strstr(g.out, ", 0, 0)\n"), "%s", g.out);
	/* without --weights the file is what it always was: no NAME_weights */
	plain = run(&(struct args){{HD, "--target", "scalar"}});
	cr_assert_eq(plain.status, 0, "%s", plain.err);
	cr_assert_null(strstr(plain.out, "_weights"));
}

/* Same bytes every way: two runs of the flags, the spec file holding the
 * same settings, the file -o writes and the header --header writes (twice,
 * and from the spec file), for a spec that sets every key. */
Test(cli, same_bytes_every_way, .fini = cleanup)
{
	const char *dir = outdir;
	char c1[96], c2[96], h1[96], h2[96];
	struct args flags = {{"--h", "12", "--kv-heads", "4", "--dk", "40",
		"--dv", "24", "--seq", "33", "--seq-kv", "65", "--mask",
		"causal,padding,bias", "--window", "17", "--causal-align", "top-left",
		"--layout", "bhsd", "--scale", "0.3", "--target", "avx2", "--name",
		"every_key", "--weights", "--algo", "tiled", "--block-q", "32",
		"--block-kv", "16", "--mq", "16", "--nk", "3", "--nv", "5",
		"--unroll-max", "8", "--kv-split", "3", "--exp", "fast", "--threads",
		"openmp"}};
	struct run a, b, f;
	char *t1, *t2, *u1, *u2;
	size_t n1, n2, m1, m2;

	tmpdir(outdir, sizeof outdir);
	snprintf(c1, sizeof c1, "%s/1.c", dir);
	snprintf(c2, sizeof c2, "%s/2.c", dir);
	snprintf(h1, sizeof h1, "%s/1.h", dir);
	snprintf(h2, sizeof h2, "%s/2.h", dir);
	a = run(&flags);
	b = run(&flags);
	f = run(&(struct args){{"--spec", FIX "every.spec"}});
	cr_assert_eq(a.status, 0, "%s", a.err);
	cr_assert(strstr(a.out, "void every_key("), "%.200s", a.out);
	cr_assert(a.nout == b.nout && memcmp(a.out, b.out, a.nout) == 0,
	          "two runs differ");
	cr_assert(a.nout == f.nout && memcmp(a.out, f.out, a.nout) == 0,
	          "flags and spec file differ");
	cr_assert_eq(run(&(struct args){{"--spec", FIX "every.spec", "-o", c1,
		"--header", h1}}).status, 0);
	flags.v[47] = "-o";
	flags.v[48] = c2;
	flags.v[49] = "--header";
	flags.v[50] = h2;
	cr_assert_null(flags.v[51]);
	cr_assert_eq(run(&flags).status, 0);
	t1 = slurp(c1, &n1);
	t2 = slurp(c2, &n2);
	cr_assert(n1 == a.nout && memcmp(t1, a.out, n1) == 0, "-o and stdout differ");
	cr_assert(n2 == a.nout && memcmp(t2, a.out, n2) == 0, "-o and stdout differ");
	u1 = slurp(h1, &m1);
	u2 = slurp(h2, &m2);
	cr_assert(m1 > 0 && m1 == m2 && memcmp(u1, u2, m1) == 0,
	          "headers from flags and spec file differ");
}
