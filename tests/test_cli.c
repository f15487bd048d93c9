/* The mhagen program: exit codes, streams and output files, one clear
 * line per bad command line, the same bytes every way. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../generator/cli.h"
#include "../generator/gen.h"
#include "../generator/knobs.h"
#include "../generator/spec.h"
#include "../runtime/mha_abi.h"
#include "cases.h"
#include "files.h"


extern char **environ;

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
	/* a layer has no exp of its own, nor a dispatch file */
	{{{"--embed", "64", "--h", "8", "--target", "avx2", "--emit", "exp"}},
	 "--emit exp: not for a layer (--embed)"},
	/* --target lists: targets of one architecture, each named once */
	{{{HD, "--target", "avx2,neon"}},
	 "--target avx2,neon: avx2 is for x86_64, neon for aarch64; a list takes "
	 "one architecture's targets"},
	{{{HD, "--target", "avx2,scalar,avx2"}},
	 "--target avx2,scalar,avx2: names avx2 twice"},
	{{{HD, "--target", "avx2,"}},
	 "--target avx2,: a list names targets (an empty name is not one)"},
	{{{HD, "--target", "native,scalar"}},
	 "--target native,scalar: a list names targets (native is not one)"},
	{{{HD, "--target", "avx2,sse9"}}, "--target: unknown target 'sse9'"},
	{{{HD, "--target", "avx2,scalar", "--threads", "openmp"}},
	 "--threads openmp: not with the list --target avx2,scalar"},
	{{{HD, "--target", "avx2,scalar", "--emit", "exp"}},
	 "--emit exp: takes one target, not the list avx2,scalar"},
	{{{HD, "--target", "avx512,avx2", "--mq", "8"}},
	 "--mq 8 is not a multiple of the avx512 vector width 16"},
};

/* What one run of mhagen did. */
struct run {
	int status; /* exit status, or -1 when it did not exit normally */
	char *out, *err;
	size_t nout, nerr;
};


/* The output directory of the running test, if it made one. */
static char outdir[64];

/* Test fini: remove outdir, passed or failed. */
static void cleanup(void)
{
	if (outdir[0])
		files_remove_tree(outdir);
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
	files_tmpdir(dir, sizeof dir, "test");
	snprintf(po, sizeof po, "%s/stdout", dir);
	snprintf(pe, sizeof pe, "%s/stderr", dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, po, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, pe, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	rc = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc == 0 && waitpid(pid, &st, 0) == pid) {
		r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		r.out = files_slurp(po, &r.nout);
		r.err = files_slurp(pe, &r.nerr);
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

	files_tmpdir(outdir, sizeof outdir, "test");
	snprintf(path, sizeof path, "%s/k.c", dir);
	files_write(path, "wb", "old\n", 4);
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
	cr_assert_str_eq(files_slurp(path, NULL), "old\n", "the old -o file changed");
	cr_assert_eq(entries(dir), 1, "stray files in %s", dir);
}

/* Every bad command line of the tables, through the program. */
ParameterizedTestParameters(cli, rejects)
{
	return params_index(nbad_cases);
}

ParameterizedTest(int *i, cli, rejects, .fini = cleanup)
{
	run_bad(&bad_cases[*i]);
}

ParameterizedTestParameters(cli, rejects_at_run)
{
	return params_index(COUNT(run_cases));
}

ParameterizedTest(int *i, cli, rejects_at_run, .fini = cleanup)
{
	struct mhagen_cli c;

	cases_parse_ok(&c, &run_cases[*i].a);
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
	cr_assert_geq(nbad_cases + COUNT(run_cases) + 1, 40);
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

	files_tmpdir(outdir, sizeof outdir, "test");
	snprintf(path, sizeof path, "%s/k.c", dir);
	files_write(path, "wb", "old\n", 4);
	r = run(&(struct args){{HD, "--mask", "sideways", "-o", path}});
	failed(&r, "sideways");
	r = run(&(struct args){{HD, "--target", "scalar", "--template-dir",
		"tests/fixtures/none",
		"-o", path, "--header", "h.h"}});
	failed(&r, "tests/fixtures/none/main.lua");
	cr_assert_str_eq(files_slurp(path, NULL), "old\n", "the old file is untouched");
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

	files_tmpdir(outdir, sizeof outdir, "test");
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
	file = files_slurp(path, &n);
	cr_assert(n == s.nout && memcmp(file, s.out, n) == 0,
	          "-o writes what stdout gets");
	h = files_slurp(hpath, NULL);
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

/* A layer: the same bytes every run, its functions, its header. */
Test(cli, layer, .fini = cleanup)
{
	const struct args a = {{"--embed", "36", "--h", "6", "--cross", "--kdim",
		"13", "--mask", "causal,keys", "--layout", "sbhd", "--target",
		"neon"}};
	struct run r = run(&a), s = run(&a);
	char hpath[96];
	char *h;

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(r.nout > 0 && r.nout == s.nout && memcmp(r.out, s.out, r.nout) == 0,
	          "two runs differ");
	cr_assert(strstr(r.out, "void mha_layer_f32_e36_h6_kdim13_cross_causal_keys_sbhd__neon_forward("),
	          "no forward");
	cr_assert(strstr(r.out, "mhagen --embed 36 --h 6 --kdim 13 --cross --mask causal,keys --layout sbhd --target neon"),
	          "no command");
	files_tmpdir(outdir, sizeof outdir, "test");
	snprintf(hpath, sizeof hpath, "%s/l.h", outdir);
	r = run(&(struct args){{"--embed", "36", "--h", "6", "--proj-bias",
		"false", "--target", "scalar", "--name", "attn_layer", "--header",
		hpath}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	h = files_slurp(hpath, NULL);
	cr_assert(strstr(h, "void attn_layer_pack(float *packed, const struct mha_layer_params *p);"), "%s", h);
	cr_assert(strstr(h, "bias=False, batch_first=True"), "%s", h);
}

/* A decoder step: its name carries the cache's type and size, and the
 * command its header comment states (causal made explicit) writes the same
 * bytes. */
Test(cli, layer_step)
{
	struct run r = run(&(struct args){{"--embed", "48", "--h", "6",
		"--kv-heads", "2", "--kv-cache", "33", "--kv-dtype", "bf16",
		"--target", "scalar"}});
	struct run s = run(&(struct args){{"--embed", "48", "--h", "6",
		"--kv-heads", "2", "--kv-cache", "33", "--mask", "causal",
		"--kv-dtype", "bf16", "--target", "scalar"}});

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "void mha_layer_f32_bf16kv_e48_h6_kv2_cache33_causal__scalar_forward("),
	          "no forward");
	cr_assert(strstr(r.out, "mhagen --embed 48 --h 6 --kv-heads 2 --kv-cache 33 --mask causal --kv-dtype bf16 --target scalar\n"),
	          "no command");
	cr_assert(strstr(r.out, "_store(float f)"), "no bf16 store");
	cr_assert(r.nout == s.nout && memcmp(r.out, s.out, r.nout) == 0,
	          "the stated command writes other bytes");
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
	cases_parse_ok(&c, &(struct args){{"--dk", "32", "--spec", FIX "loose.spec",
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

/* mhagen's output for a's arguments has `has` and not `lacks` (if set) */
struct has_lacks {
	struct args a;
	const char *has, *lacks;
};

static void outputs_have(const struct has_lacks *c, size_t n)
{
	for (size_t i = 0; i < n; ++i) {
		struct run r = run(&c[i].a);

		cr_assert_eq(r.status, 0, "%s: %s", c[i].a.v[1], r.err);
		cr_assert(strstr(r.out, c[i].has), "case %zu lacks '%s'", i, c[i].has);
		cr_assert(!c[i].lacks || !strstr(r.out, c[i].lacks), "case %zu has '%s'", i, c[i].lacks);
		free(r.out);
		free(r.err);
	}
}

/* Rows counted at run time: a block's last tile takes as many of its
 * first vectors as its rows fill (NEON's tile of 16 rows: 1, 2 or 3 of 4
 * vectors for up to 4, 8 or 12 rows), AVX-512's and AVX2's of 2 vectors
 * the first alone; a fixed length's last tile its one count. */
Test(cli, run_time_last_tile_takes_the_vectors_its_rows_fill)
{
	static const struct has_lacks c[] = {
		{{{"--h", "8", "--dk", "64", "--target", "neon"}},
		 "} else if (mt <= 12) {", NULL},
		{{{"--h", "8", "--dk", "64", "--target", "neon"}},
		 "neon_pv5_part2(st, vb0, ob, al, kn);", NULL},
		{{{"--h", "8", "--dk", "64", "--target", "neon"}},
		 "\t\t\tif (mt > 8) {", NULL},
		{{{"--h", "2", "--dk", "16", "--mask", "causal", "--target", "neon"}},
		 "neon_qk5_2_part3(qt + r0 * 16,", NULL},
		{{{"--h", "8", "--dk", "64", "--target", "avx512"}},
		 "if (mt <= 16) {", "else if (mt <="},
		{{{"--h", "8", "--dk", "64", "--seq", "200", "--target", "neon"}},
		 "if (mt <= 8) {", "else if (mt <="},
	};

	outputs_have(c, sizeof c / sizeof c[0]);
}

/* A tiled kernel prefetches what comes next from a call size of the
 * target's (AVX-512 and AVX2 2 MiB, others 4), a build's MHA_PREFETCH_MIN
 * overriding it. */
Test(cli, prefetch_gate_is_the_targets)
{
	static const struct has_lacks c[] = {
		{{{"--h", "12", "--dk", "64", "--seq", "197", "--target", "avx512"}},
		 "#ifdef MHA_PREFETCH_MIN\n\tconst size_t pfmin = MHA_PREFETCH_MIN;\n#else\n"
		 "\tconst size_t pfmin = (size_t)2 << 20;\n#endif", NULL},
		{{{"--h", "12", "--dk", "64", "--seq", "197", "--target", "avx2"}},
		 "\tconst size_t pfmin = (size_t)2 << 20;\n", "(size_t)4 << 20"},
		{{{"--h", "12", "--dk", "64", "--target", "neon"}},
		 "\tconst size_t pfmin = (size_t)4 << 20;\n", "(size_t)2 << 20"},
	};

	outputs_have(c, sizeof c / sizeof c[0]);
}

/* Keys counted at run time: a last block of under a quarter of the
 * block's keys joins the one before (tiled.c.in), the file's opening
 * comment naming the largest block; with a fixed length (its thin-block
 * rule chooses the blocks) and with the rows algorithm, blocks are whole. */
Test(cli, run_time_keys_take_a_thin_last_block_in)
{
	static const struct has_lacks c[] = {
		{{{"--h", "12", "--dk", "64", "--target", "avx2"}},
		 "x 64 keys (up to 79 in a last block)", NULL},
		{{{"--h", "2", "--dk", "8", "--target", "scalar", "--block-kv", "32"}},
		 "x 32 keys (up to 39 in a last block)", NULL},
		{{{"--h", "2", "--dk", "8", "--seq", "9", "--seq-kv", "130", "--mask",
		   "padding", "--target", "scalar", "--block-kv", "16"}},
		 "x 16 keys (up to 19 in a last block)", NULL},
		{{{"--h", "12", "--dk", "64", "--seq", "197", "--target", "avx2"}},
		 " keys, micro-tiles", "in a last block"},
		{{{"--h", "8", "--dk", "64", "--seq", "2", "--target", "avx2"}},
		 "rows, blocks of", "in a last block"},
	};

	outputs_have(c, sizeof c / sizeof c[0]);
}

/* Query rows counted at run time (no --seq, or --varlen past a block)
 * with the default --block-q: a last block of up to 3/2 of it takes every
 * row left (as a fixed length's one block does), within the 256 KiB query
 * block (dk 256: blocks of 256, no more; dk 160: 384, up to 400); a fixed
 * length or a --block-q given keeps whole blocks. */
Test(cli, run_time_rows_take_a_thin_last_block_in)
{
	static const struct has_lacks c[] = {
		{{{"--h", "8", "--dk", "64", "--target", "avx512"}},
		 "tiled, 512 query rows (up to 768 in a last block) x", NULL},
		{{{"--h", "8", "--dk", "64", "--target", "avx512"}},
		 "const size_t nqb = seq_q <= 768 ? 1 : (seq_q - 769) / 512 + 2;", NULL},
		{{{"--h", "8", "--dk", "64", "--target", "avx2"}},
		 "const size_t nqb = seq_q <= 576 ? 1 : (seq_q - 577) / 384 + 2;", NULL},
		{{{"--h", "2", "--dk", "128", "--varlen", "padded", "--target", "avx2"}},
		 "tiled, 384 query rows (up to 512 in a last block) x", NULL},
		{{{"--h", "2", "--dk", "8", "--target", "scalar"}},
		 "tiled, 64 query rows (up to 96 in a last block) x", NULL},
		{{{"--h", "2", "--dk", "256", "--target", "avx2"}},
		 "tiled, 256 query rows x", "in a last block) x"},
		{{{"--h", "2", "--dk", "160", "--target", "avx2"}},
		 "tiled, 384 query rows (up to 400 in a last block) x", NULL},
		{{{"--h", "8", "--dk", "64", "--target", "avx512", "--block-q", "384"}},
		 "tiled, 384 query rows x", "in a last block) x"},
		{{{"--h", "8", "--dk", "64", "--seq", "1000", "--target", "avx512"}},
		 "tiled, 512 query rows x", "in a last block) x"},
		/* --varlen of up to a --seq: past a block, or one block */
		{{{"--h", "2", "--dk", "16", "--seq", "900", "--varlen", "padded", "--target", "avx2"}},
		 "tiled, 384 query rows (up to 576 in a last block) x", NULL},
		{{{"--h", "2", "--dk", "16", "--seq", "31", "--varlen", "padded", "--target", "avx2"}},
		 "tiled, 31 query rows x", "in a last block) x"},
	};

	outputs_have(c, sizeof c / sizeof c[0]);
}

/* A block's rows past its last whole vector are taken a row at a time
 * where that costs less than the vector they would take: up to 3/4 of its
 * work where they would make a tile of their own, 2/5 where a tile's
 * second vector (AVX-512 at dk 64: 8 and 4 rows of 16).  Fixed lengths
 * decide it once; run-time rows per block, by the rows past the last
 * whole tile. */
Test(cli, few_rows_past_a_vector_are_a_tail_where_cheaper)
{
	static const struct has_lacks c[] = {
		{{{"--h", "8", "--dk", "64", "--target", "avx512"}},
		 "last 1-8 rows past whole vectors one at a time (1-4 past a tile's first)", NULL},
		{{{"--h", "8", "--dk", "64", "--target", "avx512"}},
		 "const size_t tr = rem % 16 <= (rem < 16 ? 8 : 4) ? rem % 16 : 0;", NULL},
		{{{"--h", "8", "--dk", "64", "--target", "avx2"}},
		 "const size_t tr = rem % 8 <= (rem < 8 ? 5 : 2) ? rem % 8 : 0;", NULL},
		/* 197 = 6 x 32 + 5: a tile of its own */
		{{{"--h", "12", "--dk", "64", "--seq", "197", "--target", "avx512"}},
		 "a block's last 5 rows one at a time", NULL},
		/* 116 = 3 x 32 + 16 + 4, 120 = 3 x 32 + 16 + 8: a tile's second vector */
		{{{"--h", "8", "--dk", "64", "--seq", "116", "--target", "avx512"}},
		 "a block's last 4 rows one at a time", NULL},
		{{{"--h", "8", "--dk", "64", "--seq", "120", "--target", "avx512"}},
		 " (P.V, rows broadcast); exp", "one at a time"},
		{{{"--h", "8", "--dk", "64", "--target", "scalar"}},
		 " (P.V); exp", "one at a time"},
	};

	outputs_have(c, sizeof c / sizeof c[0]);
}

/* mhagen alone prints the usage; --help states the kernel's signature and
 * every environment variable the program reads. */
Test(cli, usage_alone_signature_environment)
{
	static const char *const env[] = {"MHAGEN_TRACE", "MHAGEN_CPU_SECONDS",
	                                  "CC", "TMPDIR", "MHAGEN_VARIANT"};
	struct run h = run(&(struct args){{"--help"}});
	struct run a = run(&(struct args){{NULL}});

	cr_assert_eq(a.status, 0, "%s", a.err);
	cr_assert(a.nout == h.nout && memcmp(a.out, h.out, a.nout) == 0,
	          "mhagen alone does not print the usage: %s", a.out);
	cr_assert_eq(a.nerr, 0);
	cr_assert(strstr(h.out, "  void NAME_args(const struct mha_args *a);\n"),
	          "%s", h.out);
	cr_assert(strstr(h.out, "void NAME(const float *q, const float *k, "
	                 "const float *v, float *out,\n"), "%s", h.out);
	cr_assert(strstr(h.out, "const int32_t *kv_len, const float *bias);\n"),
	          "%s", h.out);
	for (size_t i = 0; i < sizeof env / sizeof *env; ++i) {
		char line[64];
		snprintf(line, sizeof line, "\n  %s ", env[i]);
		cr_assert(strstr(h.out, line), "--help does not list %s", env[i]);
	}
}

/* The modification time of path, in seconds. */
static long long mtime_of(const char *path)
{
	struct stat sb;

	cr_assert_eq(stat(path, &sb), 0, "%s: %s", path, strerror(errno));
	return (long long)sb.st_mtime;
}

/* Set the modification time of path to t seconds. */
static void set_mtime(const char *path, long long t)
{
	struct timespec ts[2] = {{(time_t)t, 0}, {(time_t)t, 0}};

	cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0, "%s", path);
}

/* --depfile: one Make rule, the -o and --header files its targets, the
 * spec file (its blank escaped) and the template files read under
 * --template-dir its prerequisites, each also with an empty rule; outputs
 * whose bytes would not change keep their time, others are rewritten. */
Test(cli, depfile_and_untouched_outputs, .fini = cleanup)
{
	char spec[96], tpl[96], c[96], h[96], d[96], want[512];
	struct run r;
	char *dep;

	files_tmpdir(outdir, sizeof outdir, "test");
	snprintf(spec, sizeof spec, "%s/my spec", outdir);
	snprintf(tpl, sizeof tpl, "%s/tpl", outdir);
	snprintf(c, sizeof c, "%s/k.c", outdir);
	snprintf(h, sizeof h, "%s/k.h", outdir);
	snprintf(d, sizeof d, "%s/k.d", outdir);
	files_write(spec, "wb", "h = 2\ndk = 16\n", 14);
	cr_assert_eq(mkdir(tpl, 0700), 0);
	files_copy_tree("templates", tpl);
	r = run(&(struct args){{"--spec", spec, "--target", "scalar",
		"--template-dir", tpl, "-o", c, "--header", h, "--depfile", d}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	dep = files_slurp(d, NULL);
	snprintf(want, sizeof want, "%s %s: \\\n %s/my\\ spec \\\n", c, h,
	         outdir);
	cr_assert(strncmp(dep, want, strlen(want)) == 0, "%s", dep);
	snprintf(want, sizeof want, "\n %s/kernel.c.in", tpl);
	cr_assert(strstr(dep, want), "%s", dep);
	snprintf(want, sizeof want, "\n %s/targets/scalar.lua", tpl);
	cr_assert(strstr(dep, want), "%s", dep);
	snprintf(want, sizeof want, "\n%s/main.lua:\n", tpl);
	cr_assert(strstr(dep, want), "no empty rule: %s", dep);
	cr_assert_null(strstr(dep, "avx2.lua"), "a table not read: %s", dep);

	set_mtime(c, 1000000000);
	set_mtime(h, 1000000000);
	r = run(&(struct args){{"--spec", spec, "--target", "scalar",
		"--template-dir", tpl, "-o", c, "--header", h, "--depfile", d}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(mtime_of(c), 1000000000, "the same kernel was written again");
	cr_assert_eq(mtime_of(h), 1000000000, "the same header was written again");
	r = run(&(struct args){{"--spec", spec, "--target", "scalar", "--dk", "32",
		"-o", c, "--header", h}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_neq(mtime_of(c), 1000000000, "a changed kernel was not written");
	cr_assert_neq(mtime_of(h), 1000000000, "a changed header was not written");
	cr_assert(strstr(files_slurp(c, NULL), "dk=32"));
	r = run(&(struct args){{HD, "--depfile", d}});
	failed(&r, "--depfile needs -o FILE");
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

	files_tmpdir(outdir, sizeof outdir, "test");
	snprintf(path, sizeof path, "%s/k.c", outdir);
	snprintf(hpath, sizeof hpath, "%s/k.h", outdir);
	r = run(&(struct args){{"--spec", FIX "weights.spec", "-o", path,
		"--header", hpath}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	file = files_slurp(path, NULL);
	h = files_slurp(hpath, NULL);
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
	          strstr(o.out, "\"\", 0, 0, 1, 1, ") &&
	          strstr(o.out, " .h = 8, "), "%s", o.out);
	g = run(&(struct args){{"--spec", FIX "weights.spec", "--weights", "false",
		"--emit", "registry"}});
	cr_assert_eq(g.status, 0, "%s", g.err);
	cr_assert(strncmp(g.out, "MHA_KERNEL(mha_f32_h8_dk64__scalar, ", 36) == 0 &&
	          strstr(g.out, "\"\", 0, 0, 1, 0, ") &&
	          strstr(g.out, " .h = 8, "), "%s", g.out);
	/* without --weights the file is what it always was: no NAME_weights */
	plain = run(&(struct args){{HD, "--target", "scalar"}});
	cr_assert_eq(plain.status, 0, "%s", plain.err);
	cr_assert_null(strstr(plain.out, "_weights"));
}

/* --lse: the kernel and its header declare NAME_merge, the kernel has no
 * 9-argument NAME (it reads struct mha_args' lse), the registry line's lse
 * column is 1; without --lse there is no NAME_merge. */
Test(cli, lse, .fini = cleanup)
{
	const char *N = "mha_f32_h8_dk64_lse__scalar";
	char path[96], hpath[96], want[256];
	struct run r;
	char *file, *h;

	files_tmpdir(outdir, sizeof outdir, "test");
	snprintf(path, sizeof path, "%s/k.c", outdir);
	snprintf(hpath, sizeof hpath, "%s/k.h", outdir);
	r = run(&(struct args){{HD, "--lse", "--target", "scalar", "-o", path,
		"--header", hpath}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	file = files_slurp(path, NULL);
	h = files_slurp(hpath, NULL);
	snprintf(want, sizeof want, "void %s_merge(void *out, float *lse, "
	         "const void *out2, const float *lse2,\n        size_t batch, "
	         "size_t seq_q);", N);
	cr_assert(strstr(file, want) && strstr(h, want), "NAME_merge declared");
	snprintf(want, sizeof want, "void %s(", N);
	cr_assert_null(strstr(file, want), "no 9-argument NAME");
	r = run(&(struct args){{HD, "--lse", "--target", "scalar", "--emit",
		"registry"}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(want, sizeof want, "MHA_KERNEL(%s, \"scalar\", \"\", 0, 0, 0, 0, 1, ", N);
	cr_assert(strncmp(r.out, want, strlen(want)) == 0, "%s", r.out);
	r = run(&(struct args){{HD, "--target", "scalar"}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.out, "_merge"));
}

/* A --target list: one name joining the targets, no flags, a registry
 * line behind the architecture's guard needing what its last variant
 * needs, a header declaring NAME_variant, and a file that compiles with no
 * ISA flags; a file of one target needs its flags and says so in one
 * #error when compiled without them. */
Test(cli, target_list, .fini = cleanup)
{
	const char *N = "mha_f32_h8_dk64_causal__avx512_avx2_scalar";
	const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
	char path[96], hpath[96], cmd[512], want[256];
	struct run r;
	char *h, *log;

	files_tmpdir(outdir, sizeof outdir, "test");
	snprintf(path, sizeof path, "%s/k.c", outdir);
	snprintf(hpath, sizeof hpath, "%s/k.h", outdir);
	r = run(&(struct args){{HD, "--mask", "causal", "--target",
	                        "avx512,avx2,scalar", "--emit", "name"}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(want, sizeof want, "%s\n", N);
	cr_assert_str_eq(r.out, want);
	r = run(&(struct args){{HD, "--mask", "causal", "--target",
	                        "avx512,avx2,scalar", "--emit", "cflags"}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "\n");
	r = run(&(struct args){{HD, "--mask", "causal", "--target",
	                        "avx512,avx2,scalar", "--emit", "registry"}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(want, sizeof want, "#if defined(__x86_64__)\nMHA_KERNEL(%s, "
	         "\"avx512,avx2,scalar\", \"\", 0, 0, 1, 0, ", N);
	cr_assert(strncmp(r.out, want, strlen(want)) == 0, "%s", r.out);
	r = run(&(struct args){{HD, "--mask", "causal", "--target",
	                        "avx512,avx2,scalar", "-o", path, "--header",
	                        hpath}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	h = files_slurp(hpath, NULL);
	snprintf(want, sizeof want, "const char *%s_variant(void);", N);
	cr_assert(strstr(h, want), "the header lacks %s: %s", want, h);
	free(h);
	snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -Wall -Wextra -Werror -c %s "
	         "-o %s/k.o", cc, path, outdir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	/* one target: its flags, or one #error naming them */
	r = run(&(struct args){{HD, "--target", "avx2", "-o", path}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -c %s -o %s/k.o 2> %s/log",
	         cc, path, outdir, outdir);
	cr_assert_neq(system(cmd), 0, "%s compiled without -mavx2 -mfma", path);
	snprintf(path, sizeof path, "%s/log", outdir);
	log = files_slurp(path, NULL);
	cr_assert(strstr(log, "mha_f32_h8_dk64__avx2: compile with -mavx2 -mfma "
	                 "-mf16c (mhagen --emit cflags)"), "%s", log);
	cr_assert_null(strstr(log, "always_inline"), "more than the #error: %s",
	               log);
	free(log);
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

	files_tmpdir(outdir, sizeof outdir, "test");
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
	t1 = files_slurp(c1, &n1);
	t2 = files_slurp(c2, &n2);
	cr_assert(n1 == a.nout && memcmp(t1, a.out, n1) == 0, "-o and stdout differ");
	cr_assert(n2 == a.nout && memcmp(t2, a.out, n2) == 0, "-o and stdout differ");
	u1 = files_slurp(h1, &m1);
	u2 = files_slurp(h2, &m2);
	cr_assert(m1 > 0 && m1 == m2 && memcmp(u1, u2, m1) == 0,
	          "headers from flags and spec file differ");
}

/* The target tables reach builds through the program: --emit targets as
 * make variables, --emit cflags for one spec, --help's list. */
Test(cli, targets_for_builds)
{
	struct mhagen_target t[MHAGEN_TARGETS_MAX];
	struct mha_spec native;
	char err[MHAGEN_ERR], want[512];
	struct run r, h;
	size_t n;

	cr_assert_eq(mhagen_targets(NULL, t, MHAGEN_TARGETS_MAX, &n, err), 0,
	             "%s", err);
	mha_spec_init(&native);
	cr_assert_eq(mhagen_resolve_target(&native, NULL, err), 0, "%s", err);
	r = run(&(struct args){{"--emit", "targets"}});
	cr_assert_eq(r.status, 0, "%s", r.err);
	h = run(&(struct args){{"--help"}});
	cr_assert_eq(h.status, 0, "%s", h.err);
	snprintf(want, sizeof want, "\nMHA_NATIVE := %s\n", native.target);
	cr_assert(strstr(r.out, want), "%s lacks %s", r.out, want);
	for (size_t i = 0; i < n; ++i) {
		struct run c = run(&(struct args){{HD, "--target", t[i].name,
		                                   "--emit", "cflags"}});
		snprintf(want, sizeof want, "\nMHA_CFLAGS_%s := %s\n", t[i].name,
		         t[i].cflags);
		cr_assert(strstr(r.out, want), "%s lacks %s", r.out, want);
		snprintf(want, sizeof want, "\nMHA_CPU_%s := %s\n", t[i].name,
		         t[i].cpu);
		cr_assert(strstr(r.out, want), "%s lacks %s", r.out, want);
		snprintf(want, sizeof want, "\nMHA_RANK_%s := %ld\n", t[i].name,
		         t[i].rank);
		cr_assert(strstr(r.out, want), "%s lacks %s", r.out, want);
		snprintf(want, sizeof want, "\n  %-10s %ld floats", t[i].name,
		         t[i].width);
		cr_assert(strstr(h.out, want), "--help lacks '%s'", want);
		cr_assert_eq(c.status, 0, "%s", c.err);
		snprintf(want, sizeof want, "%s\n", t[i].cflags);
		cr_assert_str_eq(c.out, want);
	}
}

/* --help describes every knob of the table, by its flag. */
Test(cli, help_lists_knobs)
{
	struct run h = run(&(struct args){{"--help"}});
	char want[64];

	cr_assert_eq(h.status, 0, "%s", h.err);
	for (int k = 0; k < MHA_KNOB_N; ++k) {
		snprintf(want, sizeof want, "\n  --%s %s ", mha_knob_table[k].key,
		         mha_knob_table[k].arg);
		cr_assert(strstr(h.out, want), "--help lacks '%s'", want);
	}
}
