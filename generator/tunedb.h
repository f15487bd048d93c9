/* The tuning database: JSON Lines, one record per measured kernel variant.
 * Written by `mhagen tune`, read back by it (to resume and report) and by
 * `mhagen --tuning-db` (to generate the best measured variant). */
#ifndef MHAGEN_TUNEDB_H
#define MHAGEN_TUNEDB_H

#include <stddef.h>

#include "knobs.h"

#define MHA_KNOBS_MAX MHA_KNOB_N /* knobs of a record, at most */

/* One knob setting: a spec key ("block-q") and its value as on the
 * command line ("64", "tiled"). */
struct mha_knob {
	char key[16];
	char val[24];
};

/* Where a measurement was made; records are only comparable within one. */
struct mha_tune_env {
	char cpu[128];        /* CPU model */
	int threads;          /* threads the kernel ran on */
	char cc[128];         /* compiler command */
	char cc_version[160]; /* first line of its --version */
	char cflags[256];
	char templates[32];   /* hash of the templates, "fnv1a64:..." */
};

struct mha_tune_rec {
	char spec[512];       /* mha_spec_tuning_key */
	char target[16];
	struct mha_knob knobs[MHA_KNOBS_MAX];
	int nknobs;
	int is_default;       /* the spec without tuned knobs */
	char plan[96];        /* the knobs in effect (mha_tunedb_plan) */
	struct mha_tune_env env;
	char version[32];     /* mhagen version */
	double median, min, max; /* seconds per call, batch 1 */
	int runs;
	double gflops;        /* useful GFLOP/s at the median */
	int ok;               /* status "ok", else "failed" */
	char reason[256];     /* why it failed */
};

/* Records of a file.  A missing file holds none. */
struct mha_tunedb {
	struct mha_tune_rec *recs;
	size_t n;
	size_t malformed;     /* lines that were not records, skipped */
};

/* Read path into db; 0, or -1 with err filled (MHAGEN_ERR bytes). */
int mha_tunedb_load(struct mha_tunedb *db, const char *path, char *err);
void mha_tunedb_free(struct mha_tunedb *db);

/* One record as a JSON line, newline included (into buf of size n). */
void mha_tunedb_format(const struct mha_tune_rec *r, char *buf, size_t n);

/* Append one record to the open file descriptor and fsync it; 0 or -1. */
int mha_tunedb_append(int fd, const struct mha_tune_rec *r);

/* 1 when two environments are the same (CPU, threads, compiler, flags,
 * templates). */
int mha_tune_env_equal(const struct mha_tune_env *a,
                       const struct mha_tune_env *b);

/* The knobs as flags ("--algo tiled --block-q 64"), "" for none. */
void mha_knobs_flags(const struct mha_knob *k, int n, char *buf, size_t len);

/* 1 when both knob lists hold the same settings in the same order. */
int mha_knobs_equal(const struct mha_knob *a, int na,
                    const struct mha_knob *b, int nb);

/* The tuned knobs (mha_knob_tuned) a spec sets explicitly, in the knob
 * table's order; returns how many. */
struct mha_spec;
int mha_knobs_of_spec(const struct mha_spec *s, struct mha_knob *k);

/* The plan p as records file it, one line ("tiled bq192 bk128 mq16 nk4
 * nv4", "rows bk128 uk1 uv1 ks1"): records with the same plan measure the
 * same kernel.  Into buf of size n. */
void mha_tunedb_plan(const struct mha_plan *p, char *buf, size_t n);

/* A variant may be measured more than once (the tuner measures its best
 * candidates again): its time is the median of the medians of its records
 * (same spec, target, environment and plan, default or not), and it counts
 * as failed when any of them failed.  Returns that time for the variant of
 * record r, or 0 when it failed. */
double mha_tunedb_variant_time(const struct mha_tunedb *db,
                               const struct mha_tune_rec *r);

/* The least and greatest median among the records of the variant of r
 * (as mha_tunedb_variant_time groups them) into *lo and *hi; returns how
 * many records there are. */
int mha_tunedb_variant_range(const struct mha_tunedb *db,
                             const struct mha_tune_rec *r, double *lo,
                             double *hi);

/* The knobs of k (n of them, of a variant with plan) whose effect differs
 * from the plan of the default variant, def_plan: every one when the
 * plans' algorithms differ (the default's plan says nothing of the
 * other's); else a number the plan reports when its value in effect
 * differs, unroll-max when what it decides differs, any knob the plan
 * does not report.  Into out, in k's
 * order; returns how many.  Summaries and reports list these. */
int mha_knobs_differing(const struct mha_knob *k, int n, const char *plan,
                        const char *def_plan, struct mha_knob *out);

/* The fastest variant (by mha_tunedb_variant_time) for spec and target
 * measured on cpu with templates, whose knobs include every one of want
 * (the knobs a user fixed): its first record, its time in *time; NULL when
 * none.  *other counts the records of this spec and target left out for
 * another CPU or template hash. */
const struct mha_tune_rec *mha_tunedb_best(const struct mha_tunedb *db,
	const char *spec, const char *target, const char *cpu,
	const char *templates, const struct mha_knob *want, int nwant,
	size_t *other, double *time);

/* The CPUs other than except that have ok records for spec and target
 * with templates, each quoted once ("'A', 'B'"), into buf of size n ("" for
 * none): what --tuning-cpu could choose. */
void mha_tunedb_cpus(const struct mha_tunedb *db, const char *spec,
                     const char *target, const char *templates,
                     const char *except, char *buf, size_t n);

#endif
