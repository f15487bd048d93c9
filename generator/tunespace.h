/* The tuner's knob space for one spec: the values tried per knob, the
 * points (knob combinations) the generator accepts, and the distinct
 * variants (candidates) they make.  Candidate 0 is the default variant,
 * the spec as the user gave it. */
#ifndef MHAGEN_TUNESPACE_H
#define MHAGEN_TUNESPACE_H

#include <stddef.h>

#include "knobs.h"
#include "spec.h"
#include "tunedb.h"

#define MHA_SPACE_POINTS 4096  /* knob combinations of one spec */
#define MHA_SPACE_VALS (MHA_KNOB_TRIES + 1) /* values of one knob: those
                                   tried, and the default's own */
#define MHA_SPACE_DIMS MHA_KNOB_N /* knobs of one algorithm, at most */
#define MHA_CAND_TIMES 16      /* measurements kept per candidate */
#define MHA_TUNE_KERNEL "mha_tune_kernel" /* the measured kernel's name */

/* One knob dimension of a subspace: a spec key and the values tried. */
struct mha_dim {
	const char *key;
	char vals[MHA_SPACE_VALS][24];
	int n;
	int fixed;                      /* the user set it: not varied */
};

/* A point of the knob space: algo 0 tiled, 1 rows (enum mha_algo less
 * MHA_ALGO_TILED); a value per dim. */
struct mha_point {
	int algo;
	int idx[MHA_SPACE_DIMS];
	int cand;                       /* index of its distinct variant */
};

/* A distinct variant (points with the same plan are one variant). */
struct mha_cand {
	char plan[96];
	int point;                      /* first point with this plan */
	int state;                      /* 0 untried, 1 ok, 2 failed, 3 refused */
	double t;                       /* median seconds when ok: the median
	                                   of its measurements' medians */
	double ts[MHA_CAND_TIMES];      /* those medians */
	int nts;
	double flops;                   /* useful flops per call */
	double gflops;
};

/* The knob space of one spec. */
struct mha_space {
	struct mha_spec spec;           /* the user's, finished */
	long width;                     /* its target's floats per vector */
	struct mha_knob fixed[MHA_KNOBS_MAX]; /* the tuned knobs it sets */
	int nfixed;
	const char *template_dir;       /* for the generator; NULL: built in */
	struct mha_plan plan;           /* the default's */
	/* per algorithm (as mha_point's algo), the tuned knobs of
	 * generator/knobs.c that apply to it, in the table's order */
	struct mha_dim dims[2][MHA_SPACE_DIMS];
	int ndims[2];
	struct mha_point *pts;          /* MHA_SPACE_POINTS of them */
	int npts;
	struct mha_cand *cands;         /* one more: the default may plan
	                                   like no point */
	int ncands;
};

/* Make the space of the finished spec s, whose target has vectors of width
 * floats: candidate 0 the default, the knob values for s's target around
 * its own, then every point the generator accepts, merged into candidates
 * by plan.  0, or -1 with err; mha_space_free it either way. */
int mha_space_make(struct mha_space *sp, const struct mha_spec *s,
                   long width, const char *template_dir, char *err);
void mha_space_free(struct mha_space *sp);

/* The tuned knobs of point p (the user's own first) into k, or only the
 * user's own for the default (p NULL); returns how many. */
int mha_space_knobs(const struct mha_space *sp, const struct mha_point *p,
                    struct mha_knob *k);

/* The spec of a variant: the user's plus the n knobs k (those the user
 * set win); 0, or -1 with err when the spec refuses them. */
int mha_space_spec(const struct mha_space *sp, const struct mha_knob *k,
                   int n, struct mha_spec *s, char *err);

/* Generate what ("kernel") for the variant spec s, its kernel named
 * MHA_TUNE_KERNEL; 0, or -1 with err. */
int mha_space_render(const struct mha_space *sp, const struct mha_spec *s,
                     const char *what, char **text, size_t *len, char *err);

#endif
