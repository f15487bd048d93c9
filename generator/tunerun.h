/* Measuring kernel variants for the tuner: a private temporary directory
 * holding the embedded harness and runtime sources, compiled once; each
 * variant is compiled against them and run as a child process with a time
 * limit. */
#ifndef MHAGEN_TUNERUN_H
#define MHAGEN_TUNERUN_H

#include <signal.h>
#include <stddef.h>

#include "gen.h"
#include "spec.h"

extern const struct mhagen_file mhagen_harness[];
extern const size_t mhagen_nharness;

/* Set (by the SIGINT handler) to stop: the running child is killed. */
extern volatile sig_atomic_t mha_tune_stop;

struct mha_runner {
	char dir[512];         /* mkdtemp'd; removed by mha_runner_close */
	char cc[128], cflags[256];
	char cc_version[160];
	char wrapper[256];     /* run variants through this command; "" none */
	int threads;           /* > 1: -fopenmp, OMP_NUM_THREADS, no pinning */
	int ready;             /* harness objects built */
	char refs_for[600];    /* the spec whose reference outputs are kept */
};

/* One variant's outcome. */
struct mha_result {
	int ok;
	double median, min, max, flops; /* seconds; useful flops per call */
	int runs;
	char reason[256];      /* when not ok */
};

/* Make the directory, write the sources, find the compiler (its first
 * --version line) and build the harness; variants will run through
 * wrapper (a command, its words split on blanks) unless it is NULL or
 * empty.  0 or -1 with err. */
int mha_runner_open(struct mha_runner *r, const char *cc, const char *cflags,
                    int threads, const char *wrapper, char *err);

/* Remove the directory and everything in it. */
void mha_runner_close(struct mha_runner *r);

/* Compile kernel text (exporting mha_tune_kernel, generated for s) with
 * the harness and run it: check against the reference, then time it for
 * about seconds.  Fills res (ok or failed with a reason) and returns 0, or
 * returns -1 when mha_tune_stop interrupted it (res says nothing). */
int mha_runner_measure(struct mha_runner *r, const struct mha_spec *s,
                       const char *kernel, size_t len, double seconds,
                       struct mha_result *res);

#endif
