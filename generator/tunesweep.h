/* Sweeps of `mhagen tune --sweep "h=8,12 mask=none,causal"`: a grid of spec
 * keys and their values; every point of it is tuned as a spec. */
#ifndef MHAGEN_TUNESWEEP_H
#define MHAGEN_TUNESWEEP_H

#include "spec.h"
#include "tuneopts.h"

#define MHA_SWEEP_KEYS 8   /* keys of a sweep */
#define MHA_SWEEP_VALS 10  /* values of one key */

struct mha_sweep {
	char keys[MHA_SWEEP_KEYS][32];
	char vals[MHA_SWEEP_KEYS][MHA_SWEEP_VALS][64];
	int nvals[MHA_SWEEP_KEYS];
	int nkeys;
};

/* Parse "h=8,12 dk=64,128 mask=none,causal+padding" into sw, checking each
 * value as the spec parser would; 0, or -1 with err. */
int mha_sweep_parse(struct mha_sweep *sw, const char *text, char *err);

/* The spec of point idx of sw (mixed radix over its keys, the first
 * fastest): the spec flags of o plus the point's values; 0, or -1 with
 * err. */
int mha_sweep_spec(const struct mha_tune_opts *o, const struct mha_sweep *sw,
                   int idx, struct mha_spec *s, char *err);

#endif
