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

#include "../generator/spec.h"
#include "files.h"
#include "../runtime/mha_cpu.h"
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

#define MAXARG 32
#define FIX "tests/fixtures/spec/"
#define COUNT(a) (sizeof (a) / sizeof (a)[0])

/* Criterion copies parameters into each test process, where pointers in
 * them would dangle; tables are static and tests get an index into one. */
static int indices[64];

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
	const char *best = mha_cpu_best_target();

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
	cr_assert(strcmp(best, "avx512") == 0 || strcmp(best, "avx2") == 0 ||
	          strcmp(best, "neon") == 0 || strcmp(best, "scalar") == 0,
	          "best target '%s'", best);
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
	cr_assert_str_eq(err, "--dk is given twice");
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

/* A bad command line and a piece its one-line message must contain. */
struct bad {
	struct args a;
	const char *want;
};

#define HD "--h", "8", "--dk", "64"

/* Every case names the flag or value at fault. */
static const struct bad bad_cases[] = {
	{{{"--h", "8", "--dk", "64", "--window", "0"}}, "--window: 0 is out of range"},
	{{{"--h", "abc", "--dk", "64"}}, "--h: 'abc'"},
	{{{"--h", "8", "--dk", "12x"}}, "--dk: '12x'"},
	{{{"--h", "+8", "--dk", "64"}}, "--h: '+8'"},
	{{{"--h", "8 ", "--dk", "64"}}, "--h: '8 '"},
	{{{"--h", "0", "--dk", "64"}}, "--h: 0 is out of range"},
	{{{"--h", "8", "--dk", "-64"}}, "--dk: -64 is out of range"},
	{{{"--h", "99999999999999999999", "--dk", "64"}},
	 "--h: 99999999999999999999 is out of range"},
	{{{"--h", "1025", "--dk", "64"}}, "--h: 1025 is out of range"},
	{{{"--h", "8", "--dk", "4097"}}, "--dk: 4097 is out of range"},
	{{{HD, "--dv", "4097"}}, "--dv: 4097"},
	{{{HD, "--seq", "16777217"}}, "--seq: 16777217 is out of range"},
	{{{HD, "--seq-kv", "0"}}, "--seq-kv: 0"},
	{{{HD, "--kv-heads", "0"}}, "--kv-heads: 0"},
	{{{HD, "--unroll-max", "-1"}}, "--unroll-max: -1"},
	{{{HD, "--frobnicate", "1"}}, "unknown flag '--frobnicate'"},
	{{{HD, "--h=8"}}, "unknown flag '--h=8'"},
	{{{HD, "kernel.c"}}, "unexpected argument 'kernel.c'"},
	{{{HD, "--target", "sse9"}}, "--target: unknown target 'sse9'"},
	{{{HD, "--target", ""}}, "--target: unknown target ''"},
	{{{HD, "--mask", "diagonal"}}, "--mask: unknown mask 'diagonal'"},
	{{{HD, "--mask", "causal,"}}, "--mask: unknown mask ''"},
	{{{HD, "--mask", "none,causal"}}, "--mask: unknown mask 'none'"},
	{{{HD, "--mask", "causal,padding,causal"}}, "names causal twice"},
	{{{HD, "--layout", "hbsd"}}, "--layout: unknown value 'hbsd'"},
	{{{HD, "--causal-align", "middle"}},
	 "--causal-align: unknown value 'middle'"},
	{{{HD, "--h", "8"}}, "--h is given twice"},
	{{{HD, "-o", "a.c", "-o", "b.c"}}, "-o is given twice"},
	{{{HD, "-o", ""}}, "-o needs a non-empty value"},
	{{{HD, "--kv-heads", "3"}}, "--kv-heads: 3 does not divide --h 8"},
	{{{HD, "--causal-align", "top-left"}}, "--causal-align: needs a causal"},
	{{{"--dk", "64"}}, "--h is required"},
	{{{"--h", "8"}}, "--dk is required"},
	{{{"--h", "8", "--dk"}}, "--dk needs a value"},
	{{{HD, "--spec"}}, "--spec needs a value"},
	{{{HD, "--name", "9lives"}}, "--name: '9lives' is not a C identifier"},
	{{{HD, "--name", "my-kernel"}}, "--name: 'my-kernel'"},
	{{{HD, "--scale", "nan"}}, "--scale: nan"},
	{{{HD, "--scale", "-1"}}, "--scale: -1"},
	{{{HD, "--scale", "0"}}, "--scale: 0"},
	{{{HD, "--scale", "inf"}}, "--scale: inf"},
	{{{HD, "--scale", "0.5x"}}, "--scale: '0.5x' is not a number"},
	{{{HD, "--block-kv", "12"}}, "--block-kv: 12 is not a multiple of 8"},
	{{{HD, "--block-kv", "4"}}, "--block-kv: 4 is out of range"},
	{{{HD, "--emit", "assembly"}}, "--emit: unknown value 'assembly'"},
	{{{HD, "--algo", "sideways"}}, "--algo: unknown value 'sideways'"},
	{{{HD, "--exp", "quick"}}, "--exp: unknown value 'quick'"},
	{{{HD, "--threads", "pthreads"}}, "--threads: unknown value 'pthreads'"},
	{{{HD, "--nv", "17"}}, "--nv: 17 is out of range"},
	{{{HD, "--weights", "--weights"}}, "--weights is given twice"},
	{{{HD, "--weights", "yes"}}, "unexpected argument 'yes'"},
	{{{"--spec", FIX "missing.spec"}},
	 "--spec: cannot open '" FIX "missing.spec'"},
	{{{"--spec", FIX}}, "--spec: cannot read '" FIX "'"},
	{{{"--spec", FIX "unknown_key.spec"}},
	 FIX "unknown_key.spec:3: unknown setting 'heads'"},
	{{{"--spec", FIX "no_equals.spec"}},
	 FIX "no_equals.spec:2: expected 'key = value', got 'dk 64'"},
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

/* Every bad command line of the table, through the program. */
ParameterizedTestParameters(cli, rejects)
{
	return index_params(COUNT(bad_cases));
}

ParameterizedTest(int *i, cli, rejects)
{
	struct run r = run(&bad_cases[*i].a);

	failed(&r, bad_cases[*i].want);
}

/* The number of entries in a directory besides . and .. */
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
	r = run(&(struct args){{HD, "--template-dir", "tests/fixtures/none",
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
	cr_assert(strncmp(o.out, "MHA_KERNEL_SCALAR(mha_f32_h8_dk64_weights__scalar, ",
	                  51) == 0 && strstr(o.out, ", 0, 1)\n"), "%s", o.out);
	g = run(&(struct args){{"--spec", FIX "weights.spec", "--weights", "false",
		"--emit", "registry"}});
	cr_assert_eq(g.status, 0, "%s", g.err);
	cr_assert(strncmp(g.out, "MHA_KERNEL_SCALAR(mha_f32_h8_dk64__scalar, ",
	                  43) == 0 && strstr(g.out, ", 0, 0)\n"), "%s", g.out);
	/* without --weights the file is what it always was: no NAME_weights */
	plain = run(&(struct args){{HD, "--target", "scalar"}});
	cr_assert_eq(plain.status, 0, "%s", plain.err);
	cr_assert_null(strstr(plain.out, "_weights"));
}
