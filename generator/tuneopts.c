/* Options of `mhagen tune`: parsing its flags, and its --help text. */
#include "tuneopts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"

const char mha_tune_usage[] =
"usage: mhagen tune SPEC-FLAGS [options]     tune one spec\n"
"       mhagen tune --sweep \"h=8,12 seq=128,512 mask=none,causal\" [SPEC-FLAGS] [options]\n"
"       mhagen tune --report FILE.csv --plot FILE.svg [--db FILE]\n"
"\n"
"Measures kernel variants (knob settings) of a spec on this machine: each is\n"
"generated, compiled, checked against the reference and timed; results are\n"
"appended to the database, and variants already there are skipped.\n"
"\n"
"  --db FILE         tuning database, JSON Lines (default mhagen-tune.jsonl)\n"
"  --budget SECONDS  time for the whole run (default 120); a sweep shares it\n"
"  --search S        auto (default: exhaustive when it fits the budget, else\n"
"                    coordinate descent), exhaustive, descent\n"
"  --cc CC           compiler (default $CC, else clang)\n"
"  --cflags \"...\"    flags (default -O2 and the target's flags: mhagen\n"
"                      --help lists them)\n"
"  --threads N       run kernels on N threads (needs --threads openmp in the\n"
"                    spec; default 1, pinned to one core)\n"
"  --sweep GRID      tune every point of a grid of spec keys (values joined\n"
"                    by commas; '+' joins mask words: mask=causal+padding)\n"
"  --report FILE     write a CSV table of default and tuned GFLOP/s per spec\n"
"  --plot FILE       write an SVG bar chart of the same (needs gnuplot)\n"
"  --template-dir D  templates from D (as for generation)\n"
"  --run-wrapper CMD run each variant as CMD ./variant ARGS... in its\n"
"                    directory (qemu-aarch64 -L /usr/aarch64-linux-gnu, or a\n"
"                    script that runs it over ssh); needs --tuning-cpu\n"
"  --tuning-cpu NAME the CPU the records name (default: this machine's\n"
"                    model); reports and resumption use its records\n"
"Then: mhagen --tuning-db FILE SPEC-FLAGS generates the best variant.\n";

/* 1 when s is a decimal count (digits only, at least one). */
static int is_count(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; ++s)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* The defaults, then each argument: a tune flag, a refused generation flag,
 * or a spec flag (with its value) kept for the spec parser. */
int mha_tune_opts_parse(struct mha_tune_opts *o, int argc, char **argv,
                        char *err)
{
	memset(o, 0, sizeof *o);
	o->budget = 120;
	o->threads = 1;
	o->db = "mhagen-tune.jsonl";
	o->search = "auto";
	o->spec_argv[o->spec_argc++] = "mhagen";
	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i], **dst = NULL;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			o->help = 1;
			return 0;
		}
		static const char *const refused[] = {"-o", "--header", "--emit",
		                                      "--tuning-db", "--name"};
		for (size_t r = 0; r < sizeof refused / sizeof refused[0]; ++r)
			if (strcmp(a, refused[r]) == 0)
				return mhagen_fail(err, "tune: %s is not a tune option", a);
		if (strcmp(a, "--db") == 0)
			dst = &o->db;
		else if (strcmp(a, "--cc") == 0)
			dst = &o->cc;
		else if (strcmp(a, "--cflags") == 0)
			dst = &o->cflags;
		else if (strcmp(a, "--sweep") == 0)
			dst = &o->sweep;
		else if (strcmp(a, "--report") == 0)
			dst = &o->report;
		else if (strcmp(a, "--plot") == 0)
			dst = &o->plot;
		else if (strcmp(a, "--search") == 0)
			dst = &o->search;
		else if (strcmp(a, "--run-wrapper") == 0)
			dst = &o->run_wrapper;
		else if (strcmp(a, "--tuning-cpu") == 0)
			dst = &o->tuning_cpu;
		if (i + 1 >= argc && strncmp(a, "--", 2) == 0 &&
		    strcmp(a, "--help") && strcmp(a, "--version"))
			return mhagen_fail(err, "%s needs a value", a);
		if (dst) {
			const char *v = argv[++i];
			if (!*v)
				return mhagen_fail(err, "%s needs a non-empty value", a);
			*dst = v;
			continue;
		}
		if (strcmp(a, "--budget") == 0) {
			char *end;
			const char *v = argv[++i];
			errno = 0;
			o->budget = strtod(v, &end);
			if (end == v || *end || errno || !(o->budget > 0) ||
			    o->budget > 1e7)
				return mhagen_fail(err, "--budget: '%s' is not a positive "
				                   "number of seconds", v);
			continue;
		}
		if (strcmp(a, "--threads") == 0 && is_count(argv[i + 1])) {
			const char *v = argv[++i];
			o->threads = atoi(v);
			if (o->threads < 1 || o->threads > 1024 || strlen(v) > 4)
				return mhagen_fail(err, "--threads: %s is out of range "
				                   "(1 to 1024)", v);
			continue;
		}
		if (o->spec_argc + 2 >= MHA_TUNE_MAXARGV)
			return mhagen_fail(err, "tune: too many arguments");
		o->spec_argv[o->spec_argc++] = a;
		if (strcmp(a, "--template-dir") != 0)
			o->any_spec = 1;
		if (i + 1 < argc && strncmp(a, "--", 2) == 0)
			o->spec_argv[o->spec_argc++] = argv[++i];
	}
	o->spec_argv[o->spec_argc] = NULL;
	if (o->run_wrapper && !o->tuning_cpu)
		return mhagen_fail(err, "--run-wrapper needs --tuning-cpu NAME: "
		                   "the records name the CPU the variants run on");
	if (strcmp(o->search, "auto") && strcmp(o->search, "exhaustive") &&
	    strcmp(o->search, "descent"))
		return mhagen_fail(err, "--search: unknown value '%s' (auto, "
		                   "exhaustive, descent)", o->search);
	return 0;
}
