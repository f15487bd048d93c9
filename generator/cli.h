/* The command line: flags and --spec files into a finished spec and the
 * output options. */
#ifndef MHAGEN_CLI_H
#define MHAGEN_CLI_H

#include "spec.h"

/* What the command line asks for besides the spec itself. */
struct mhagen_cli {
	struct mha_spec spec;
	const char *out;          /* -o FILE, or NULL for stdout */
	const char *header;       /* --header FILE, or NULL */
	const char *template_dir; /* --template-dir DIR, or NULL: embedded */
	const char *emit;         /* kernel (default), exp, registry, name,
	                             cflags, targets */
	const char *tuning_db;    /* --tuning-db FILE, or NULL */
	const char *spec_file;    /* --spec FILE, or NULL */
	const char *depfile;      /* --depfile FILE, or NULL */
	const char *tuning_cpu;   /* --tuning-cpu NAME: whose records; NULL:
	                             this machine's CPU model */
	int tuning_strict;        /* --tuning-strict: no record is an error */
	int help, version;
};

/* Parse argv into cli (reading --spec files; flags override the file's
 * settings), resolve the target and finish the spec; 0, or -1 with err
 * filled. */
int mhagen_parse_args(struct mhagen_cli *cli, int argc, char **argv,
                      char *err);

#endif
