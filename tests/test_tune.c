/* The tuner, run as users run it (build/mhagen tune) on a small spec with a
 * temporary database: the records' format, resumption, a planted wrong
 * variant recorded failed and never chosen, the kernel --tuning-db picks
 * checked against the reference, Ctrl-C keeping finished records, sweeps
 * and reports, and the errors. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "files.h"

extern char **environ;

#define MAXARG 48
#define COUNT(a) (sizeof (a) / sizeof (a)[0])

/* The small spec every test tunes, with every knob but nv fixed: the space
 * is the default and nv 2, 6 and 8 (nv 4 plans like the default). */
#define SPEC "--h", "2", "--dk", "8", "--seq", "16", "--target", "scalar"
#define FIXED "--algo", "tiled", "--block-q", "16", "--block-kv", "64", \
              "--mq", "4", "--nk", "4"

static char dir[64]; /* this test's scratch directory */

struct run {
	int status; /* exit status, 128 + signal when killed */
	char *out, *err;
	size_t nout, nerr;
};

static void path(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

/* Start mhagen with args (NULL-terminated), output to files in dir. */
static pid_t start(const char *const *args)
{
	const char *bin = getenv("MHAGEN") ? getenv("MHAGEN") : "build/mhagen";
	char *argv[MAXARG + 2] = {(char *)bin};
	char po[128], pe[128];
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int rc, n = 1;

	for (int i = 0; args[i]; ++i)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	path(po, sizeof po, "stdout");
	path(pe, sizeof pe, "stderr");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, po, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, pe, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	rc = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	cr_assert_eq(rc, 0, "cannot run %s: %s", bin, strerror(rc));
	return pid;
}

static struct run finish(pid_t pid)
{
	struct run r = {-1, NULL, NULL, 0, 0};
	char po[128], pe[128];
	int st;

	cr_assert_eq(waitpid(pid, &st, 0), pid);
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	path(po, sizeof po, "stdout");
	path(pe, sizeof pe, "stderr");
	r.out = files_read(po, &r.nout);
	r.err = files_read(pe, &r.nerr);
	cr_assert(r.out && r.err);
	return r;
}

static struct run run(const char *const *args)
{
	return finish(start(args));
}

static void release(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* Copy templates/ into dir/templates, replacing in main.lua the text
 * `from` by `to` (when from is not NULL). */
static void copy_templates(const char *from, const char *to)
{
	char p[256];

	path(p, sizeof p, "templates");
	cr_assert_eq(mkdir(p, 0700), 0, "cannot make %s", p);
	files_copy_tree("templates", p);
	if (from) {
		path(p, sizeof p, "templates/main.lua");
		files_patch(p, from, to);
	}
}

static void setup(void)
{
	files_tmpdir(dir, sizeof dir, "tune");
}

/* Remove dir and what the tests put there (two levels). */
static void teardown(void)
{
	if (dir[0])
		files_remove_tree(dir);
}

TestSuite(tune, .init = setup, .fini = teardown, .timeout = 240);

/* The lines of a file (NULL-terminated array into lines, at most max). */
static int lines_of(char *text, char **lines, int max)
{
	int n = 0;

	for (char *p = text; *p && n < max;) {
		char *e = strchr(p, '\n');
		cr_assert_not_null(e, "a line without its newline: %s", p);
		*e = '\0';
		lines[n++] = p;
		p = e + 1;
	}
	return n;
}

/* Check one record line has every field, each of its JSON type. */
static void check_record(const char *line)
{
	static const struct { const char *key; char type; } fields[] = {
		{"spec", 's'}, {"target", 's'}, {"knobs", 'o'}, {"default", 'b'},
		{"plan", 's'}, {"cpu", 's'}, {"threads", 'n'}, {"cc", 's'},
		{"cc_version", 's'}, {"cflags", 's'}, {"mhagen", 's'},
		{"templates", 's'}, {"median_s", 'n'}, {"min_s", 'n'},
		{"max_s", 'n'}, {"runs", 'n'}, {"gflops", 'n'}, {"status", 's'},
		{"reason", 's'},
	};

	cr_assert(line[0] == '{' && line[strlen(line) - 1] == '}', "%s", line);
	for (size_t i = 0; i < COUNT(fields); ++i) {
		char key[32];
		const char *at;
		char c;
		snprintf(key, sizeof key, "\"%s\":", fields[i].key);
		at = strstr(line, key);
		cr_assert_not_null(at, "no field %s in %s", fields[i].key, line);
		c = at[strlen(key)];
		switch (fields[i].type) {
		case 's': cr_assert_eq(c, '"', "%s is not a string", key); break;
		case 'o': cr_assert_eq(c, '{', "%s is not an object", key); break;
		case 'b': cr_assert(c == 't' || c == 'f', "%s is not a boolean", key); break;
		default:
			cr_assert((c >= '0' && c <= '9') || c == '-',
			          "%s is not a number", key);
		}
	}
	cr_assert(strstr(line, "\"status\":\"ok\"") ||
	          strstr(line, "\"status\":\"failed\""), "%s", line);
	cr_assert(strstr(line, "\"templates\":\"fnv1a64:"), "%s", line);
}

/* The progress lines of a run's stderr (not a terminal: one line per
 * visit), "mhagen: tune PHASE D/T...": phases named, in order, each once;
 * per phase T fixed and D counting 1, 2, ... up to at most T. */
static void check_progress(const char *err)
{
	static const char *const phases[] = {"default", "measure", "re-measure"};
	int phase = -1, done = 0, total = 0, lines = 0;

	for (const char *p = err; (p = strstr(p, "mhagen: tune ")); ++p) {
		char name[16];
		int ph, d, t;
		cr_assert_eq(sscanf(p, "mhagen: tune %15s %d/%d", name, &d, &t), 3,
		             "a progress line without phase and count: %.200s", p);
		for (ph = 0; ph < (int)COUNT(phases); ++ph)
			if (strcmp(name, phases[ph]) == 0)
				break;
		cr_assert_lt(ph, (int)COUNT(phases), "phase '%s'", name);
		if (ph != phase) {
			cr_assert_gt(ph, phase, "phase %s again: %.200s", name, p);
			cr_assert_eq(d, 1, "%.200s", p);
			phase = ph;
		} else {
			cr_assert_eq(t, total, "the total moved: %.200s", p);
			cr_assert_eq(d, done + 1, "%.200s", p);
		}
		cr_assert_leq(d, t, "%.200s", p);
		done = d;
		total = t;
		++lines;
	}
	cr_assert_gt(lines, 0, "no progress lines: %s", err);
}

/* The summary line names only knobs that differ from the default's (never
 * the fixed ones, which the default has too), with the spread beside the
 * speedup; stdout keeps every flag of the best variant. */
static void check_summary(const char *err, const char *out)
{
	const char *sum = strstr(err, "mhagen: tuned ");
	const char *with;

	cr_assert_not_null(sum, "no summary: %s", err);
	cr_assert_null(strstr(sum, "--block-q"), "%s", sum);
	cr_assert_null(strstr(sum, "--algo"), "%s", sum);
	with = strstr(sum, ", best ");
	cr_assert_not_null(with, "%s", sum);
	if (strstr(with, " with "))
		cr_assert(strstr(with, "x (") && strstr(with, " measurements)"),
		          "no spread beside the speedup: %s", sum);
	else
		cr_assert(strstr(with, "(the default)"), "%s", sum);
	cr_assert(strstr(out, "--algo tiled --block-q 16 --block-kv 64 --mq 4 "
	                      "--nk 4"), "stdout: %s", out);
}

/* The tuner measures every variant once (nv 6 planted wrong: recorded
 * failed), a second run measures nothing, and --tuning-db generates the
 * fastest good variant, which passes the reference. */
Test(tune, records_resume_reject_and_pick)
{
	char db[128], tdir[128], kc[128], so[128], *text, *lines[64];
	char knobs[256] = "";
	const char *at = NULL;
	size_t n;
	struct run r;
	int nl, failed = 0, ok = 0, defaults = 0, plans = 0;

	path(db, sizeof db, "tune.jsonl");
	path(tdir, sizeof tdir, "templates");
	/* nv 6 doubles the scale: a kernel that differs from the reference */
	copy_templates("\tlocal vars = kernel_vars(spec, T)\n",
	               "\tif spec.nv == 6 then spec.scale = spec.scale * 2 end\n"
	               "\tlocal vars = kernel_vars(spec, T)\n");
	{
		const char *args[] = {"tune", SPEC, FIXED, "--db", db, "--budget",
		                      "120", "--template-dir", tdir, NULL};
		r = run(args);
	}
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert(strstr(r.err, "search exhaustive"), "stderr: %s", r.err);
	check_progress(r.err);
	check_summary(r.err, r.out);
	release(&r);

	/* four variants, each measured once; the fastest few and the default
	 * measured again: records of the same plan are one variant */
	text = files_read(db, &n);
	cr_assert_not_null(text);
	nl = lines_of(text, lines, COUNT(lines));
	cr_assert(nl >= 4, "records: %d", nl);
	for (int i = 0; i < nl; ++i) {
		const char *plan = strstr(lines[i], "\"plan\":\"");
		int seen = 0;
		check_record(lines[i]);
		cr_assert(strstr(lines[i], "\"spec\":\"--h 2 --dk 8 --seq 16 --target scalar\""),
		          "%s", lines[i]);
		cr_assert_not_null(plan);
		for (int j = 0; j < i; ++j)
			seen |= strncmp(strstr(lines[j], "\"plan\":\""), plan,
			                strcspn(plan + 8, "\"") + 9) == 0;
		plans += !seen;
		if (strstr(lines[i], "\"default\":true")) {
			cr_assert(strstr(lines[i], "\"knobs\":{\"algo\":\"tiled\",\"block-q\":16,"),
			          "the default keeps the fixed knobs: %s", lines[i]);
			++defaults;
		}
		if (strstr(lines[i], "\"nv\":6")) {
			cr_assert(strstr(lines[i], "\"status\":\"failed\""), "%s", lines[i]);
			cr_assert(strstr(lines[i], "differs from the reference"), "%s",
			          lines[i]);
			++failed;
		} else {
			cr_assert(strstr(lines[i], "\"status\":\"ok\""), "%s", lines[i]);
			cr_assert(strtod(strstr(lines[i], "\"median_s\":") + 11, NULL) > 0);
			++ok;
		}
	}
	cr_assert_eq(plans, 4, "variants: default, nv 2, 6, 8");
	cr_assert_eq(failed, 1, "the wrong variant is measured once, never again");
	cr_assert(ok >= 3);
	cr_assert(defaults >= 1);
	free(text);

	/* resumption: nothing new is measured, the file is unchanged */
	{
		char *before = files_read(db, &n), *after;
		size_t n2;
		const char *args[] = {"tune", SPEC, FIXED, "--db", db, "--budget",
		                      "120", "--template-dir", tdir, NULL};
		r = run(args);
		cr_assert_eq(r.status, 0, "stderr: %s", r.err);
		cr_assert(strstr(r.err, "(0 measured now, 4 from the database, 1 failed, 0 refused; 0 measurements again)"),
		          "stderr: %s", r.err);
		after = files_read(db, &n2);
		cr_assert(n == n2 && memcmp(before, after, n) == 0);
		free(before);
		free(after);
		release(&r);
	}

	/* --tuning-db: the fastest ok record, named on stderr */
	path(kc, sizeof kc, "tuned.c");
	{
		const char *args[] = {"--tuning-db", db, "--template-dir", tdir,
		                      SPEC, "--name", "mha_tuned", "-o", kc, NULL};
		r = run(args);
	}
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert(strstr(r.err, "mhagen: tuning db ") &&
	          (at = strstr(r.err, "using ")), "stderr: %s", r.err);
	cr_assert_null(strstr(r.err, "--nv 6"), "picked the failed variant");
	/* the knobs it names belong to an ok record of the database */
	if (strncmp(at + 6, "the default knobs", 17) != 0) {
		char want[300], *rec;
		size_t len = strcspn(at + 6, "(");
		cr_assert(len > 1 && len < sizeof knobs);
		memcpy(knobs, at + 6, len - 1);
		knobs[len - 1] = '\0';
		cr_assert(strstr(knobs, "--algo tiled --block-q 16 --block-kv 64 --mq 4 --nk 4 --nv "),
		          "%s", knobs);
		snprintf(want, sizeof want, "\"nk\":4,\"nv\":%s},\"default\":false",
		         knobs + strlen(knobs) - 1);
		rec = files_read(db, &n);
		cr_assert(strstr(rec, want), "no record with %s", want);
		free(rec);
	}
	release(&r);
	text = files_read(kc, &n);
	cr_assert_not_null(text);
	cr_assert(knobs[0] == '\0' || strstr(text, knobs), "kernel:\n%.400s", text);
	free(text);

	/* the picked kernel, compiled, against the reference */
	path(so, sizeof so, "tuned.so");
	{
		const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "clang";
		char cmd[512];
		void *h;
		struct mha_kernel k = {.name = "mha_tuned", .target = "scalar",
		                       .cpu = "", .seq_q = 16, .seq_kv = 16,
		                       .a = {.h = 2, .kv_heads = 2, .dk = 8,
		                             .dv = 8, .scale = 0.35355339f}};
		char msg[512];
		snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -shared -fPIC -o '%s' '%s'",
		         cc, so, kc);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
		h = dlopen(so, RTLD_NOW);
		cr_assert_not_null(h, "%s", dlerror());
		*(void **)&k.fn = dlsym(h, "mha_tuned");
		*(void **)&k.args = dlsym(h, "mha_tuned_args");
		cr_assert_not_null(k.fn);
		cr_assert_not_null(k.args);
		cr_assert_eq(check_kernel(&k, 3, msg, sizeof msg), 0, "%s", msg);
		dlclose(h);
	}
}

/* Tunes the spec flags of args (NULL-ended) into database db, scalar rows
 * kernels, every variant, with block-kv 32 planted wrong in a copy of the
 * templates; checks the planted variant was recorded failed for differing
 * from the reference and another ok, and returns the database's text. */
static char *tune_planted(const char *const *spec, const char *db)
{
	const char *args[64] = {"tune"};
	char tdir[128], *text;
	size_t n = 1, len;
	struct run r;
	static const char *const tail[] = {"--target", "scalar", "--algo",
		"rows", "--kv-split", "1", "--search", "exhaustive", "--budget",
		"120"};

	path(tdir, sizeof tdir, "templates");
	copy_templates("\tlocal vars = kernel_vars(spec, T)\n",
	               "\tif spec.block_kv == 32 then spec.scale = spec.scale * 2 end\n"
	               "\tlocal vars = kernel_vars(spec, T)\n");
	for (; *spec; ++spec)
		args[n++] = *spec;
	for (size_t i = 0; i < sizeof tail / sizeof tail[0]; ++i)
		args[n++] = tail[i];
	args[n++] = "--db";
	args[n++] = db;
	args[n++] = "--template-dir";
	args[n++] = tdir;
	args[n] = NULL;
	r = run(args);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	release(&r);
	text = files_read(db, &len);
	cr_assert_not_null(text);
	cr_assert(strstr(text, "\"block-kv\":32") &&
	          strstr(text, "\"status\":\"failed\"") &&
	          strstr(text, "differs from the reference"),
	          "the planted block-kv 32 was not recorded failed: %s", text);
	cr_assert(strstr(text, "\"status\":\"ok\""), "%s", text);
	return text;
}

/* A q8 KV cache in packed kv rows (--kv-dtype q8 --packed kv): the
 * harness stores the packed rows as q8_0 blocks, one buffer, and checks
 * each variant against the reference on the same stored values. */
Test(tune, kv_dtype_packed)
{
	static const char *const spec[] = {"--h", "4", "--kv-heads", "2", "--dk",
		"32", "--seq", "1", "--seq-kv", "40", "--kv-dtype", "q8", "--packed",
		"kv", "--unroll-max", "32", NULL};
	char db[128], *text;

	path(db, sizeof db, "kvp.jsonl");
	text = tune_planted(spec, db);
	cr_assert(strstr(text, "\"spec\":\"--h 4 --kv-heads 2 --dk 32 --seq 1 "
	                       "--seq-kv 40") && strstr(text, "--packed kv") &&
	          strstr(text, "--kv-dtype q8"), "%s", text);
	free(text);
}

/* f16 q, k, v and out (--dtype f16), packed qkv rows: the harness stores
 * the packed buffer as f16 and reads the f16 outputs back, each variant
 * checked against the reference on the stored values (block-kv 32
 * planted wrong: recorded failed, the others ok). */
Test(tune, dtype_packed)
{
	static const char *const spec[] = {"--h", "2", "--dk", "16", "--seq",
		"40", "--dtype", "f16", "--packed", "qkv", "--mask", "causal",
		"--unroll-max", "16", NULL};
	char db[128], *text;

	path(db, sizeof db, "dt.jsonl");
	text = tune_planted(spec, db);
	cr_assert(strstr(text, "\"spec\":\"--h 2 --dk 16 --seq 40") &&
	          strstr(text, "--packed qkv") && strstr(text, "--dtype f16") &&
	          strstr(text, "\"status\":\"ok\""), "%s", text);
	free(text);
}

/* A bf16 KV cache (--kv-dtype): the harness stores keys and values as
 * bf16 and checks each variant against the reference on the same stored
 * values (block-kv 32 planted wrong: recorded failed); the picked kernel,
 * generated from the database, passes the reference too. */
Test(tune, kv_dtype)
{
	static const char *const spec[] = {"--h", "4", "--kv-heads", "2", "--dk",
		"16", "--seq", "1", "--seq-kv", "40", "--kv-dtype", "bf16",
		"--unroll-max", "16", NULL};
	char db[128], kc[128], so[128], *text;
	struct run r;

	path(db, sizeof db, "kv.jsonl");
	path(kc, sizeof kc, "kv.c");
	text = tune_planted(spec, db);
	cr_assert(strstr(text, "\"spec\":\"--h 4 --kv-heads 2 --dk 16 --seq 1 "
	                       "--seq-kv 40 --kv-dtype bf16"), "%s", text);
	free(text);
	{
		const char *args[] = {"--h", "4", "--kv-heads", "2", "--dk", "16",
		                      "--seq", "1", "--seq-kv", "40", "--kv-dtype",
		                      "bf16", "--target", "scalar", "--algo", "rows",
		                      "--unroll-max", "16", "--kv-split", "1",
		                      "--tuning-db", db, "--name", "mha_tuned16",
		                      "-o", kc, NULL};
		r = run(args);
	}
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	release(&r);
	path(so, sizeof so, "tuned16.so");
	{
		const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "clang";
		char cmd[512], msg[512];
		void *h;
		struct mha_kernel k = {.name = "mha_tuned16", .target = "scalar",
		                       .cpu = "", .seq_q = 1, .seq_kv = 40,
		                       .a = {.h = 4, .kv_heads = 2, .dk = 16, .dv = 16,
		                             .scale = 0.25f,
		                             .kv_dtype = MHA_DTYPE_BF16}};
		snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -shared -fPIC -o '%s' '%s'",
		         cc, so, kc);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
		h = dlopen(so, RTLD_NOW);
		cr_assert_not_null(h, "%s", dlerror());
		*(void **)&k.args = dlsym(h, "mha_tuned16_args");
		cr_assert_not_null(k.args);
		cr_assert_eq(check_kernel(&k, 3, msg, sizeof msg), 0, "%s", msg);
		dlclose(h);
	}
}

/* Ctrl-C: the tuner stops, every record written is whole, status 130. */
Test(tune, interrupt_keeps_records)
{
	char db[128], *text = NULL, *lines[64];
	const char *args[] = {"tune", SPEC, "--db", NULL, "--budget", "300", NULL};
	size_t n = 0;
	struct run r;
	pid_t pid;
	int nl;

	path(db, sizeof db, "int.jsonl");
	args[10] = db;
	pid = start(args);
	/* wait for two records, then interrupt */
	for (int i = 0; i < 6000; ++i) {
		struct timespec nap = {0, 20000000};
		free(text);
		text = files_read(db, &n);
		if (text && lines_of(text, lines, 64) >= 2)
			break;
		nanosleep(&nap, NULL);
	}
	free(text);
	kill(pid, SIGINT);
	r = finish(pid);
	cr_assert_eq(r.status, 130, "status %d, stderr: %s", r.status, r.err);
	cr_assert(strstr(r.err, "(interrupted)"), "stderr: %s", r.err);
	release(&r);
	text = files_read(db, &n);
	cr_assert(text && n > 0 && text[n - 1] == '\n');
	nl = lines_of(text, lines, 64);
	cr_assert(nl >= 2);
	for (int i = 0; i < nl; ++i)
		check_record(lines[i]);
	free(text);
}

/* A sweep of two points within a tiny budget (the defaults are always
 * measured), then the CSV and the picture. */
Test(tune, sweep_and_report)
{
	char db[128], csv[128], svg[128], *text, *lines[8];
	size_t n;
	struct run r;

	path(db, sizeof db, "sweep.jsonl");
	path(csv, sizeof csv, "out.csv");
	path(svg, sizeof svg, "out.svg");
	{
		const char *args[] = {"tune", "--sweep", "h=1,2 mask=none,causal",
		                      "--dk", "8", "--seq", "16", "--target", "scalar",
		                      "--db", db, "--budget", "1", "--report", csv,
		                      NULL};
		r = run(args);
	}
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert(strstr(r.err, "sweep of 4 points"), "stderr: %s", r.err);
	release(&r);
	text = files_read(csv, &n);
	cr_assert_not_null(text);
	cr_assert_eq(lines_of(text, lines, 8), 5, "header and 4 rows");
	cr_assert(strncmp(lines[0], "spec,target,", 12) == 0);
	cr_assert(strstr(lines[0], ",speedup,speedup_min,speedup_max,tuned_knobs,"),
	          "%s", lines[0]);
	for (int i = 1; i < 5; ++i) {
		/* the spec and cflags hold no comma: fields 10 to 12 */
		const char *p = lines[i];
		double sp, lo, hi;
		for (int f = 0; f < 9; ++f)
			p = strchr(p, ',') + 1;
		cr_assert_eq(sscanf(p, "%lf,%lf,%lf,", &sp, &lo, &hi), 3, "%s",
		             lines[i]);
		cr_assert(lo <= sp && sp <= hi, "spread %g to %g, speedup %g", lo,
		          hi, sp);
	}
	cr_assert(strstr(lines[4], "--h 2 --dk 8 --seq 16 --mask causal --target scalar,scalar,"),
	          "%s", lines[4]);
	free(text);
	if (system("gnuplot --version > /dev/null 2>&1") != 0) {
		cr_log_warn("gnuplot is not installed: the picture is not tested");
		return;
	}
	{
		const char *args[] = {"tune", "--db", db, "--plot", svg, NULL};
		r = run(args);
	}
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	release(&r);
	text = files_read(svg, &n);
	cr_assert(text && strstr(text, "<svg") && strstr(text, "h2 dk8 s16 causal"));
	free(text);
}

/* Every error: one "mhagen: " line, status 2; a spec the tuner refuses
 * leaves no database file behind. */
Test(tune, errors)
{
	static const struct { const char *args[16]; const char *want; } cases[] = {
		{{"tune", SPEC, "--budget", "-1", NULL}, "--budget: '-1'"},
		{{"tune", SPEC, "--budget", "soon", NULL}, "--budget: 'soon'"},
		{{"tune", "--sweep", "heads=1,2", "--dk", "8", NULL},
		 "--sweep: unknown spec key 'heads'"},
		{{"tune", "--sweep", "h=1,x", "--dk", "8", NULL}, "--h: 'x'"},
		{{"tune", SPEC, "--db", "/nonexistent-dir/db.jsonl", NULL},
		 "cannot write '/nonexistent-dir/db.jsonl'"},
		{{"tune", SPEC, "--cc", "no-such-compiler-mhagen", "--db", "DB", NULL},
		 "compiler 'no-such-compiler-mhagen' not found"},
		{{"tune", SPEC, "--search", "magic", NULL}, "--search: unknown value"},
		{{"tune", NULL}, "give spec flags"},
		{{"tune", "--h", "2", "--dk", "8", "--mask", "keys", "--db", "DB", NULL},
		 "boolean and key masks and --mask-dims cannot be tuned yet"},
		{{"tune", "--h", "2", "--dk", "8", "--varlen", "padded", "--db", "DB",
		  NULL}, "--varlen kernels cannot be tuned yet"},
		{{"tune", "--sweep", "h=1,2", "--dk", "8", "--mask", "bool", "--db",
		  "DB", NULL}, "boolean and key masks and --mask-dims cannot be tuned yet"},
		{{"tune", "--h", "2", "--dk", "8", "--mask", "softcap", "--db", "DB", NULL},
		 "--mask: unknown mask 'softcap'"},
		{{"tune", "--h", "2", "--dk", "8", "--softcap", "30", "--db", "DB", NULL},
		 "--sinks kernels cannot be tuned yet"},
		{{"tune", SPEC, "--run-wrapper", "qemu-aarch64", NULL},
		 "--run-wrapper needs --tuning-cpu NAME"},
		{{"--h", "2", "--dk", "8", "--tuning-cpu", "x", NULL},
		 "--tuning-cpu needs --tuning-db FILE"},
		{{"--h", "2", "--dk", "8", "--tuning-strict", NULL},
		 "--tuning-strict needs --tuning-db FILE"},
	};
	char db[128];

	path(db, sizeof db, "err.jsonl");
	for (size_t i = 0; i < COUNT(cases); ++i) {
		const char *args[20];
		struct run r;
		int k = 0;
		for (; cases[i].args[k]; ++k)
			args[k] = strcmp(cases[i].args[k], "DB") ? cases[i].args[k] : db;
		args[k] = NULL;
		unlink(db);
		r = run(args);
		cr_assert_eq(r.status, 2, "case %zu: status %d, stderr %s", i,
		             r.status, r.err);
		if (strstr(cases[i].want, "cannot be tuned yet"))
			cr_assert(access(db, F_OK) != 0, "case %zu: %s was created", i, db);
		cr_assert(strncmp(r.err, "mhagen: ", 8) == 0 &&
		          strchr(r.err, '\n') == r.err + r.nerr - 1,
		          "case %zu: stderr %s", i, r.err);
		cr_assert(strstr(r.err, cases[i].want), "case %zu: stderr %s, want %s",
		          i, r.err, cases[i].want);
		release(&r);
	}
}

/* Records tuned for another CPU (tune --tuning-cpu labels them): generation
 * here falls back to the defaults and names that CPU; --tuning-cpu picks
 * its records; --tuning-strict turns no record into an error (one line,
 * status 2, no output written). */
Test(tune, tuning_cpu_and_strict)
{
	char db[128], kc[128], *text, *lines[32];
	size_t n;
	struct run r;
	int nl;

	path(db, sizeof db, "box.jsonl");
	path(kc, sizeof kc, "k.c");
	{
		const char *args[] = {"tune", SPEC, FIXED, "--db", db, "--budget", "1",
		                      "--tuning-cpu", "Deploy Box 9", NULL};
		r = run(args);
	}
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	release(&r);
	text = files_slurp(db, &n);
	nl = lines_of(text, lines, COUNT(lines));
	cr_assert_gt(nl, 0);
	for (int i = 0; i < nl; ++i)
		cr_assert(strstr(lines[i], "\"cpu\":\"Deploy Box 9\""), "%s", lines[i]);
	free(text);

	/* this machine: no record, the defaults, and where records are */
	{
		const char *args[] = {"--tuning-db", db, SPEC, "-o", kc, NULL};
		r = run(args);
	}
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert(strstr(r.err, "no record for --h 2 --dk 8 --seq 16 --target scalar") &&
	          strstr(r.err, "records exist for CPU 'Deploy Box 9'") &&
	          strstr(r.err, "; default knobs\n"), "stderr: %s", r.err);
	release(&r);
	cr_assert_eq(unlink(kc), 0, "the kernel was written");
	{
		const char *args[] = {"--tuning-db", db, SPEC, "--tuning-strict", "-o",
		                      kc, NULL};
		r = run(args);
	}
	cr_assert_eq(r.status, 2, "stderr: %s", r.err);
	cr_assert(strncmp(r.err, "mhagen: --tuning-strict: tuning db ", 35) == 0 &&
	          strchr(r.err, '\n') == r.err + r.nerr - 1 &&
	          strstr(r.err, "'Deploy Box 9'"), "stderr: %s", r.err);
	cr_assert_eq(access(kc, F_OK), -1, "an output written on an error");
	release(&r);

	/* the deployment box's records, chosen by name */
	{
		const char *args[] = {"--tuning-db", db, SPEC, "--tuning-cpu",
		                      "Deploy Box 9", "--tuning-strict", "-o", kc, NULL};
		r = run(args);
	}
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert(strstr(r.err, "mhagen: tuning db ") && strstr(r.err, ": using "),
	          "stderr: %s", r.err);
	release(&r);
	cr_assert_eq(access(kc, F_OK), 0);

	/* a CPU with no records: strict fails, naming the one that has */
	{
		const char *args[] = {"--tuning-db", db, SPEC, "--tuning-cpu",
		                      "Nowhere", "--tuning-strict", NULL};
		r = run(args);
	}
	cr_assert_eq(r.status, 2, "stderr: %s", r.err);
	cr_assert(strstr(r.err, "on CPU 'Nowhere'") &&
	          strstr(r.err, "records exist for CPU 'Deploy Box 9'"),
	          "stderr: %s", r.err);
	release(&r);
}

/* --run-wrapper: NEON variants cross-compiled and run under qemu through
 * a wrapper script (which logs each command), checked against the
 * reference there: nv 2, planted wrong, is recorded failed, the others
 * ok, every record names the CPU given and the cross compiler. */
Test(tune, run_wrapper_neon_under_qemu)
{
	char db[128], tdir[128], wrap[128], log[128], script[512], *text;
	char *lines[64];
	size_t n;
	struct run r;
	int nl, failed = 0, ok = 0;

	if (system("qemu-aarch64 --version > /dev/null 2>&1") != 0 ||
	    system("aarch64-linux-gnu-gcc --version > /dev/null 2>&1") != 0) {
		cr_skip_test("qemu-aarch64 or aarch64-linux-gnu-gcc is missing");
		return;
	}
	path(db, sizeof db, "neon.jsonl");
	path(tdir, sizeof tdir, "templates");
	path(wrap, sizeof wrap, "wrap.sh");
	path(log, sizeof log, "wrap.log");
	copy_templates("\tlocal vars = kernel_vars(spec, T)\n",
	               "\tif spec.nv == 2 then spec.scale = spec.scale * 2 end\n"
	               "\tlocal vars = kernel_vars(spec, T)\n");
	snprintf(script, sizeof script, "#!/bin/sh\necho \"$@\" >> '%s'\n"
	         "exec qemu-aarch64 -L /usr/aarch64-linux-gnu \"$@\"\n", log);
	files_write(wrap, "wb", script, strlen(script));
	cr_assert_eq(chmod(wrap, 0700), 0);
	{
		const char *args[] = {"tune", "--h", "2", "--dk", "8", "--seq", "16",
		                      "--target", "neon", FIXED, "--db", db,
		                      "--budget", "120", "--search", "exhaustive",
		                      "--template-dir", tdir,
		                      "--cc", "aarch64-linux-gnu-gcc",
		                      "--run-wrapper", wrap,
		                      "--tuning-cpu", "qemu-aarch64", NULL};
		r = run(args);
	}
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	release(&r);
	text = files_slurp(db, &n);
	nl = lines_of(text, lines, COUNT(lines));
	cr_assert_geq(nl, 4, "records: %d", nl);
	for (int i = 0; i < nl; ++i) {
		check_record(lines[i]);
		cr_assert(strstr(lines[i], "\"target\":\"neon\"") &&
		          strstr(lines[i], "\"cpu\":\"qemu-aarch64\"") &&
		          strstr(lines[i], "\"cc\":\"aarch64-linux-gnu-gcc\""),
		          "%s", lines[i]);
		if (strstr(lines[i], "\"nv\":2")) {
			cr_assert(strstr(lines[i], "differs from the reference"), "%s",
			          lines[i]);
			++failed;
		} else {
			cr_assert(strstr(lines[i], "\"status\":\"ok\""), "%s", lines[i]);
			++ok;
		}
	}
	cr_assert_eq(failed, 1);
	cr_assert_geq(ok, 3);
	free(text);
	/* every run went through the wrapper */
	text = files_slurp(log, &n);
	nl = lines_of(text, lines, COUNT(lines));
	cr_assert_geq(nl, 4, "wrapped runs: %d", nl);
	for (int i = 0; i < nl; ++i)
		cr_assert(strncmp(lines[i], "./variant 2 2 8 8 16 16 ", 24) == 0,
		          "%s", lines[i]);
	free(text);
}
