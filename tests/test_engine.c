/* The template engine and the Lua sandbox, through mhagen_generate: text
 * and Lua lines, ${expr} interpolation, errors that name the template file
 * and line, what templates cannot reach, and the real templates. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <dirent.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../generator/gen.h"
#include "files.h"
#include "params.h"
#include "../generator/spec.h"

#define ENGINE "tests/fixtures/engine"
#define SANDBOX "tests/fixtures/sandbox"
#define LIMITS "tests/fixtures/limits"
#define COUNT(a) (sizeof (a) / sizeof (a)[0])

/* A finished spec for target: h=8, dk=64, or with variant a shape with
 * tails, every mask, the other layout and no unrolling. */
static struct mha_spec spec_for(const char *target, int variant)
{
	static const char *const plain[] = {"dk", "64", NULL};
	static const char *const odd[] = {"dk", "20", "dv", "7", "kv-heads", "2",
		"seq", "1", "seq-kv", "9", "mask", "causal,padding",
		"layout", "bhsd", "unroll-max", "0", NULL};
	const char *const *kv = variant ? odd : plain;
	struct mha_spec s;
	char err[MHAGEN_ERR];

	mha_spec_init(&s);
	cr_assert_eq(mha_spec_set(&s, "h", "8", err), 0, "%s", err);
	cr_assert_eq(mha_spec_set(&s, "target", target, err), 0, "%s", err);
	for (; *kv; kv += 2)
		cr_assert_eq(mha_spec_set(&s, kv[0], kv[1], err), 0, "%s", err);
	cr_assert_eq(mha_spec_finish(&s, err), 0, "%s", err);
	return s;
}

/* Render what from dir (NULL: embedded) for target; the text, or NULL
 * with err filled. */
static char *render(const char *dir, const char *what, const char *target,
                    char *err)
{
	struct mha_spec s = spec_for(target, 0);
	char *out = (char *)"unset";
	size_t len = 99;

	err[0] = '\0';
	if (mhagen_generate(&s, what, dir, &out, &len, err)) {
		cr_assert_null(out, "no text on failure");
		cr_assert_eq(len, 0);
		cr_assert_neq(err[0], '\0', "a failure says why");
		cr_assert_null(strchr(err, '\n'), "one line: %s", err);
		return NULL;
	}
	cr_assert_not_null(out);
	cr_assert_eq(strlen(out), len, "no NUL inside the text");
	return out;
}

/* Render what, which must succeed. */
static char *render_ok(const char *dir, const char *what, const char *target)
{
	char err[MHAGEN_ERR];
	char *out = render(dir, what, target, err);

	cr_assert_not_null(out, "%s from %s: %s", what, dir ? dir : "embedded", err);
	return out;
}


/* The temporary directory of the running test, if it made one. */
static char made[64];

/* A fresh directory under /tmp holding a copy of the tree at src (or
 * nothing when src is NULL).  Short, so Lua's chunk names stay whole. */
static const char *tmp_copy(const char *src)
{
	files_tmpdir(made, sizeof made, "tpl");
	if (src)
		files_copy_tree(src, made);
	return made;
}

/* Test fini: remove the temporary directory, passed or failed. */
static void cleanup(void)
{
	if (made[0])
		files_remove_tree(made);
	made[0] = '\0';
}

Test(engine, text_passes_through)
{
	char *out = render_ok(ENGINE, "pass.c.in", "scalar");

	cr_assert_str_eq(out, files_slurp(ENGINE "/pass.c.in", NULL));
}

Test(engine, lua_lines)
{
	char *out = render_ok(ENGINE, "lua.c.in", "scalar");

	cr_assert_str_eq(out, "before\n\trow1\n\trow2\n\ttwo\n\trow3\ntotal 6\n");
}

Test(engine, interpolation)
{
	char *out = render_ok(ENGINE, "interp.c.in", "scalar");

	cr_assert_str_eq(out, "int len = 2;\n"
	                      "<a><b> <{}>\n"
	                      "mha_f32_h8_dk64__scalar_row(8, 64);\n"
	                      "7-row 6 3\n");
}

/* A template that must fail: where, and what its one-line message says. */
struct broken {
	const char *what;
	int line;
	const char *msg;
};

static const struct broken broken_cases[] = {
	{"bad_lua.c.in", 3, "unexpected symbol near '='"},
	{"bad_call.c.in", 2, "attempt to call a nil value (global 'undefined_fn')"},
	{"unbalanced.c.in", 2, "'${' without a matching '}'"},
	{"nil.c.in", 4, "interpolated a nil value"},
	{"float.c.in", 2, "interpolated a float; format it with hexf()"},
	{"multiline.c.in", 2, "boom"},
};

ParameterizedTestParameters(engine, errors)
{
	return params_index(COUNT(broken_cases));
}

/* The message is "DIR/FILE:LINE: MSG", the file named where it lies. */
ParameterizedTest(int *i, engine, errors)
{
	const struct broken *b = &broken_cases[*i];
	char err[MHAGEN_ERR], want[256];

	cr_assert_null(render(ENGINE, b->what, "scalar", err), "%s rendered", b->what);
	snprintf(want, sizeof want, "%s/%s:%d: %s", ENGINE, b->what, b->line, b->msg);
	cr_assert_str_eq(err, want);
}

/* Lines in a text (its newline characters). */
static int lines(const char *text)
{
	int n = 0;

	for (; *text; ++text)
		n += *text == '\n';
	return n;
}

Test(engine, missing_op_names_template_line, .fini = cleanup)
{
	static const char *const targets[] = {"scalar", "avx2", "avx512", "neon"};
	static const char line[] = "\n${T.no_such_op(\"x\")}\n";
	const char *dir = tmp_copy("templates");
	char path[96], want[256], err[MHAGEN_ERR];
	char *text;
	int skip;

	snprintf(path, sizeof path, "%s/kernel.c.in", dir);
	text = files_slurp(path, NULL);
	skip = text[0] && text[strlen(text) - 1] == '\n'; /* complete last line */
	files_write(path, "ab", line + skip, strlen(line + skip));
	free(text);
	text = files_slurp(path, NULL);
	for (size_t i = 0; i < COUNT(targets); ++i) {
		snprintf(want, sizeof want, "%s:%d: target '%s' has no op 'no_such_op'",
		         path, lines(text), targets[i]);
		cr_assert_null(render(dir, "kernel", targets[i], err));
		cr_assert_str_eq(err, want);
	}
}

Test(engine, dir_matches_embedded)
{
	static const char *const what[] = {"kernel", "header", "exp"};

	for (size_t i = 0; i < COUNT(what); ++i)
		cr_assert_str_eq(render_ok("templates", what[i], "avx2"),
		                 render_ok(NULL, what[i], "avx2"),
		                 "templates/ and the embedded copy differ: rebuild");
}

Test(sandbox, nothing_forbidden_reachable)
{
	cr_assert_str_eq(render_ok(SANDBOX, "probe", "scalar"),
	                 "reachable:;missing:");
}

/* Bytes written by lua_dump. */
struct dump {
	char buf[4096];
	size_t n;
};

/* lua_Writer: append to a struct dump; nonzero when it is full. */
static int collect(lua_State *L, const void *p, size_t n, void *ud)
{
	struct dump *d = ud;

	(void)L;
	if (n > sizeof d->buf - d->n)
		return 1;
	memcpy(d->buf + d->n, p, n);
	d->n += n;
	return 0;
}

Test(sandbox, refuses_bytecode, .fini = cleanup)
{
	lua_State *L = luaL_newstate();
	const char *dir;
	char path[96], err[MHAGEN_ERR];
	struct dump d = {.n = 0};
	char *out;

	cr_assert_eq(luaL_loadstring(L, "return 42"), LUA_OK);
	cr_assert_eq(lua_dump(L, collect, &d, 0), 0);
	cr_assert(d.n > 4 && memcmp(d.buf, LUA_SIGNATURE, 4) == 0);
	cr_assert_eq(luaL_loadbufferx(L, d.buf, d.n, "=chunk", "b"), LUA_OK,
	             "the chunk is real bytecode");
	lua_close(L);
	dir = tmp_copy(SANDBOX);
	snprintf(path, sizeof path, "%s/chunk.luac", dir);
	files_write(path, "wb", d.buf, d.n);
	out = render(dir, "bytecode", "scalar", err);
	cr_assert_not_null(out, "%s", err);
	cr_assert(strncmp(out, "refused: ", 9) == 0 && strstr(out, "binary chunk"),
	          "%s", out);
}

Test(templates, render_every_target)
{
	static const char *const targets[] = {"scalar", "avx2", "avx512", "neon"};
	static const char *const what[] = {"kernel", "header", "exp"};
	static const char spdx[] = "/* SPDX-License-Identifier: MIT-0 */";
	char want[MHAGEN_NAME_MAX + 8], err[MHAGEN_ERR];
	const char *head;

	for (size_t t = 0; t < COUNT(targets); ++t)
		for (int v = 0; v < 2; ++v)
			for (size_t w = 0; w < COUNT(what); ++w) {
				struct mha_spec s = spec_for(targets[t], v);
				char *out;
				size_t len;
				cr_assert_eq(mhagen_generate(&s, what[w], NULL, &out, &len,
				             err), 0, "%s %s: %s", s.name, what[w], err);
				snprintf(want, sizeof want, "void %s(", s.name);
				/* kernels and headers open with their SPDX line */
				head = out;
				if (strcmp(what[w], "exp") != 0) {
					cr_assert(strncmp(out, spdx, strlen(spdx)) == 0,
					          "%s %s: %.60s", s.name, what[w], out);
					head = strchr(out, '\n') + 1;
				}
				cr_assert(strncmp(head, "/* Generated by mhagen ", 23) == 0,
				          "%s %s: %.60s", s.name, what[w], out);
				cr_assert_not_null(strstr(out, want), "%s %s", s.name, what[w]);
				cr_assert_null(strstr(out, "${"), "%s %s", s.name, what[w]);
				cr_assert_null(strstr(out, "\n$"), "%s %s", s.name, what[w]);
				free(out);
			}
}

Test(templates, clean_errors, .fini = cleanup)
{
	const char *dir;
	char path[96], err[MHAGEN_ERR];

	cr_assert_null(render(NULL, "bogus", "avx2", err));
	cr_assert_str_eq(err, "unknown output 'bogus'");
	cr_assert_null(render(ENGINE, "missing.c.in", "avx2", err));
	cr_assert(strstr(err, "cannot read template '" ENGINE "/missing.c.in'"),
	          "%s", err);
	cr_assert_null(render("tests/fixtures/no-such-dir", "kernel", "avx2", err));
	cr_assert(strstr(err, "cannot read template "
	                 "'tests/fixtures/no-such-dir/main.lua'"), "%s", err);
	dir = tmp_copy(NULL);
	snprintf(path, sizeof path, "%s/main.lua", dir);
	files_write(path, "wb", "return 42\n", 10);
	cr_assert_null(render(dir, "kernel", "avx2", err));
	cr_assert(strstr(err, "main.lua: must return a function"), "%s", err);
}

/* Intrinsic spellings: hits outside templates/targets/ are failures,
 * hits inside count, to show the scan sees them at all. */
struct scan {
	int in_targets;
	char bad[1024];
};

/* Scan one file of the tree, line by line, for every spelling. */
static void scan_one(const char *path, enum files_visit v, void *ctx)
{
	static const char *const words[] = {
		"_mm", "__m256", "vld1", "vst1", "float32x4", "vfmaq", "vdupq",
	};
	struct scan *sc = ctx;
	int target = strncmp(path, "templates/targets/", 18) == 0;
	char *text, *line, *end, c;
	int lineno = 0;

	if (v != FILES_FILE)
		return;
	text = files_slurp(path, NULL);
	for (line = text; *line; line = end + (c == '\n')) {
		end = line + strcspn(line, "\n");
		c = *end;
		*end = '\0';
		++lineno;
		for (size_t i = 0; i < COUNT(words); ++i) {
			if (!strstr(line, words[i]))
				continue;
			if (target)
				sc->in_targets++;
			else if (!sc->bad[0])
				snprintf(sc->bad, sizeof sc->bad, "%s:%d: %s in '%s'",
				         path, lineno, words[i], line);
		}
	}
	free(text);
}

Test(templates, intrinsics_only_in_targets)
{
	struct scan sc = {0};

	files_walk("templates", scan_one, &sc);
	cr_assert_eq(sc.bad[0], '\0', "%s", sc.bad);
	cr_assert_gt(sc.in_targets, 0, "the scan finds the targets' intrinsics");
}

/* A template that never ends, or asks for memory without end, stops with
 * one line naming the template line: instruction and memory limits. */
struct runaway {
	const char *h; /* case number in tests/fixtures/limits/main.lua */
	const char *want;
};

static const struct runaway runaway_cases[] = {
	{"1", LIMITS "/main.lua:11: template runs too long (over 200 million Lua instructions)"},
	{"2", LIMITS "/main.lua:20: template runs too long (over 200 million Lua instructions)"},
	{"3", LIMITS "/main.lua:28: template needs too much memory (limit 256 MiB)"},
	{"4", LIMITS "/main.lua:34: template needs too much memory (limit 256 MiB)"},
};

ParameterizedTestParameters(sandbox, limits)
{
	return params_index(COUNT(runaway_cases));
}

ParameterizedTest(int *i, sandbox, limits)
{
	const struct runaway *c = &runaway_cases[*i];
	struct mha_spec s;
	char err[MHAGEN_ERR];
	char *out = NULL;
	size_t len;

	mha_spec_init(&s);
	cr_assert_eq(mha_spec_set(&s, "h", c->h, err), 0, "%s", err);
	cr_assert_eq(mha_spec_set(&s, "dk", "8", err), 0, "%s", err);
	cr_assert_eq(mha_spec_finish(&s, err), 0, "%s", err);
	cr_assert_eq(mhagen_generate(&s, "kernel", LIMITS, &out, &len, err), -1);
	cr_assert_null(out);
	cr_assert_str_eq(err, c->want);
}

/* A pattern that backtracks without end runs in C, out of the count hook's
 * reach: the CPU-time watchdog ends the process with status 2 (and one
 * line naming the template line, checked through the program in
 * test_spec). */
Test(sandbox, cpu_limit, .exit_code = 2, .timeout = 30)
{
	struct mha_spec s;
	char err[MHAGEN_ERR];
	char *out = NULL;
	size_t len;

	setenv("MHAGEN_CPU_SECONDS", "1", 1);
	cr_assert_not_null(freopen("/dev/null", "w", stderr), "its line is checked in test_spec");
	mha_spec_init(&s);
	cr_assert_eq(mha_spec_set(&s, "h", "5", err), 0, "%s", err);
	cr_assert_eq(mha_spec_set(&s, "dk", "8", err), 0, "%s", err);
	cr_assert_eq(mha_spec_finish(&s, err), 0, "%s", err);
	mhagen_generate(&s, "kernel", LIMITS, &out, &len, err);
	cr_assert_fail("generation returned: %s", err);
}

/* Every table of templates/targets/ is a target: it passes the check
 * against templates/ops.lua and says where its kernels build, the same from
 * the directory as from the embedded copy. */
Test(targets, every_table_described)
{
	struct mhagen_target t[MHAGEN_TARGETS_MAX], u[MHAGEN_TARGETS_MAX];
	char err[MHAGEN_ERR];
	size_t n, nd, files = 0;
	struct dirent *e;
	DIR *d = opendir("templates/targets");

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		files += strlen(e->d_name) > 4 &&
		         strcmp(e->d_name + strlen(e->d_name) - 4, ".lua") == 0;
	closedir(d);
	cr_assert_eq(mhagen_targets(NULL, t, MHAGEN_TARGETS_MAX, &n, err), 0,
	             "%s", err);
	cr_assert_eq(mhagen_targets("templates", u, MHAGEN_TARGETS_MAX, &nd, err),
	             0, "%s", err);
	cr_assert_eq(n, files, "%zu targets, %zu tables", n, files);
	cr_assert_eq(nd, n);
	cr_assert_eq(memcmp(t, u, n * sizeof *t), 0, "templates/ and the "
	             "embedded copy differ: rebuild");
	for (size_t i = 0; i < n; ++i) {
		cr_assert_gt(t[i].width, 0, "%s", t[i].name);
		cr_assert_eq(!t[i].arch[0], !t[i].guard[0],
		             "%s: an architecture and its guard go together",
		             t[i].name);
		cr_assert(i == 0 || strcmp(t[i - 1].name, t[i].name) < 0,
		          "sorted by name");
	}
}

/* A copy of a table under another name is a target with no C change: it
 * is listed with the same facts, generates the same kernel but for its
 * name, and that kernel compiles with its flags. */
Test(targets, copy_is_a_target, .fini = cleanup)
{
	struct mhagen_target t[MHAGEN_TARGETS_MAX];
	const struct mhagen_target *twin, *orig;
	const char *dir = tmp_copy("templates");
	const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
	char src[128], dst[128], cmd[1024], err[MHAGEN_ERR];
	char *text, *want, *got;
	size_t n, len;

	snprintf(src, sizeof src, "%s/targets/avx2.lua", dir);
	snprintf(dst, sizeof dst, "%s/targets/twin.lua", dir);
	text = files_slurp(src, &len);
	files_write(dst, "wb", text, len);
	free(text);
	files_patch(dst, "name = \"avx2\"", "name = \"twin\"");
	cr_assert_eq(mhagen_targets(dir, t, MHAGEN_TARGETS_MAX, &n, err), 0,
	             "%s", err);
	twin = mhagen_target_find(t, n, "twin");
	orig = mhagen_target_find(t, n, "avx2");
	cr_assert(twin && orig);
	cr_assert_eq(twin->width, orig->width);
	cr_assert_str_eq(twin->cpu, orig->cpu);
	cr_assert_str_eq(twin->cflags, orig->cflags);
	for (int v = 0; v < 2; ++v) {
		struct mha_spec a = spec_for("avx2", v), b = spec_for("twin", v);
		cr_assert_eq(mhagen_generate(&a, "kernel", dir, &want, &len, err), 0,
		             "%s", err);
		cr_assert_eq(mhagen_generate(&b, "kernel", dir, &got, &len, err), 0,
		             "%s", err);
		/* the same text once its name and --target say avx2 */
		for (char *p; (p = strstr(got, "twin"));)
			memcpy(p, "avx2", 4);
		cr_assert_str_eq(got, want, "twin and avx2 kernels differ");
		free(want);
		mhagen_generate(&b, "kernel", dir, &got, &len, err);
		snprintf(src, sizeof src, "%s/k%d.c", dir, v);
		files_write(src, "wb", got, len);
		free(got);
		snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -Wall -Wextra -Werror %s "
		         "-c %s -o %s/k%d.o", cc, twin->cflags, src, dir, v);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
	}
}

/* A table is checked against templates/ops.lua when loaded: a missing
 * required op, an op the list does not know, a field of the wrong type, an
 * op without those that go with it and a default without those it needs
 * are refused, naming the table and what is wrong. */
Test(targets, checked_against_ops, .fini = cleanup)
{
	static const struct {
		const char *from, *to, *msg;
	} cases[] = {
		{"function T.fma(", "function T.fused(",
		 "lacks op 'fma' (templates/ops.lua: fma(a, b, c), a * b + c"},
		{"function T.max(a, b)", "function T.bogus() end\nfunction T.max(a, b)",
		 "'bogus' is neither a field nor an op of templates/ops.lua"},
		{"width = 8,", "width = \"8\",", "field 'width' must be a number"},
		{"cpu = {\"avx2\", \"fma\", \"f16c\"},", "",
		 "field 'cpu' must be a table (the CPU features it needs"},
		{"function T.max(a, b)", "function T.frac(x) return x end\nfunction T.max(a, b)",
		 "has op 'frac' but lacks op 'frac_if', which goes with it"},
		{"block_kv_narrow = 64, block_kv_narrow_dims = 128,", "block_kv_narrow = 64,",
		 "defaults has 'block_kv_narrow' but lacks 'block_kv_narrow_dims', which goes with it"},
		{"block_kv_narrow = 64, block_kv_narrow_dims = 128,",
		 "block_kv_narrow = 64, block_kv_narrow_dims = 128, block_kv_long_dims = 256,",
		 "defaults has 'block_kv_long_dims' but lacks 'block_kv_long_keys', which goes with it"},
	};
	const char *dir = tmp_copy("templates");
	char path[128], orig[128], err[MHAGEN_ERR], want[512];
	size_t len;
	char *text;

	snprintf(path, sizeof path, "%s/targets/avx2.lua", dir);
	snprintf(orig, sizeof orig, "%s/avx2.lua", dir);
	text = files_slurp(path, &len);
	files_write(orig, "wb", text, len);
	for (size_t i = 0; i < COUNT(cases); ++i) {
		files_write(path, "wb", text, len);
		files_patch(path, cases[i].from, cases[i].to);
		cr_assert_null(render(dir, "kernel", "avx2", err), "%s", cases[i].to);
		snprintf(want, sizeof want, "%s: %s", path, cases[i].msg);
		cr_assert(strncmp(err, want, strlen(want)) == 0, "%s\nwanted %s",
		          err, want);
		cr_assert_not_null(render(dir, "kernel", "scalar", err),
		                   "other targets are not affected: %s", err);
	}
	free(text);
}
