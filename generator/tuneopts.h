/* Options of `mhagen tune`: its own flags, and the spec flags it passes on
 * to the spec parser. */
#ifndef MHAGEN_TUNEOPTS_H
#define MHAGEN_TUNEOPTS_H

#define MHA_TUNE_MAXARGV 256

/* Options of the tune command (besides the spec flags). */
struct mha_tune_opts {
	const char *db, *cc, *cflags, *sweep, *report, *plot, *search;
	const char *run_wrapper;        /* --run-wrapper CMD: variants run as
	                                   CMD ./variant ARGS */
	const char *tuning_cpu;         /* --tuning-cpu NAME: the CPU records
	                                   name; NULL: this machine's */
	double budget;
	int threads;
	/* the spec flags, as argv for mhagen_parse_args: argv[0] a
	 * placeholder, NULL after the last */
	const char *spec_argv[MHA_TUNE_MAXARGV];
	int spec_argc;
	int any_spec;                   /* a spec flag was given */
	int help;
};

/* The tune command's --help text. */
extern const char mha_tune_usage[];

/* Parse the arguments of the tune command (argv[0] is "tune") into o: the
 * defaults, then its own flags; the rest are kept as spec flags.  0, or -1
 * with err.  With --help, o->help is set and the rest is not parsed. */
int mha_tune_opts_parse(struct mha_tune_opts *o, int argc, char **argv,
                        char *err);

#endif
