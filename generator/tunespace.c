/* The tuner's knob space: knob values per target, points, candidates. */
#include "tunespace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "gen.h"

/* Add value v to dimension d unless it is there or d is full. */
static void add_val(struct mha_dim *d, const char *v)
{
	for (int i = 0; i < d->n; ++i)
		if (strcmp(d->vals[i], v) == 0)
			return;
	if (d->n < MHA_SPACE_VALS)
		snprintf(d->vals[d->n++], sizeof d->vals[0], "%s", v);
}

/* Add the n values v, times m, to dimension d. */
static void add_vals(struct mha_dim *d, const long *v, int n, long m)
{
	for (int i = 0; i < n; ++i) {
		char b[24];
		snprintf(b, sizeof b, "%ld", v[i] * m);
		add_val(d, b);
	}
}

/* The dimensions of each algorithm: the tuned knobs of the table that
 * apply to it (algo itself picks the subspace), each with the values the
 * table says to try for s's target and then the default's own; a knob the
 * user set is not varied. */
static void make_dims(struct mha_space *sp)
{
	memset(sp->dims, 0, sizeof sp->dims);
	memset(sp->ndims, 0, sizeof sp->ndims);
	for (int a = 0; a < 2; ++a) {
		enum mha_algo algo = MHA_ALGO_TILED + a;
		for (int k = 0; k < MHA_KNOB_N; ++k) {
			const struct mha_knob_def *d = &mha_knob_table[k];
			struct mha_dim *dim;
			if (k == MHA_KNOB_ALGO || !mha_knob_tuned(k) ||
			    !(d->algos & MHA_ALGO_BIT(algo)) ||
			    (d->threaded && !sp->spec.threads))
				continue;
			dim = &sp->dims[a][sp->ndims[a]++];
			dim->key = d->key;
			if (d->nwide && sp->width > 1)
				add_vals(dim, d->wide, d->nwide, sp->width);
			else
				add_vals(dim, d->tries, d->ntries, 1);
			if (d->plan && sp->plan.algo == algo)
				add_vals(dim, &sp->plan.v[k], 1, 1);
			if (mha_spec_is_set(&sp->spec, d->key)) {
				dim->fixed = 1;
				dim->n = 1;
			}
		}
	}
}

/* The user's knobs, then algo unless the user set it, then the value of
 * each dimension of p's algorithm the user did not fix. */
int mha_space_knobs(const struct mha_space *sp, const struct mha_point *p,
                    struct mha_knob *k)
{
	int n = 0;

	for (int i = 0; i < sp->nfixed; ++i)
		k[n++] = sp->fixed[i];
	if (!p)
		return n;
	if (!mha_spec_is_set(&sp->spec, mha_knob_table[MHA_KNOB_ALGO].key)) {
		snprintf(k[n].key, sizeof k[n].key, "%s",
		         mha_knob_table[MHA_KNOB_ALGO].key);
		snprintf(k[n].val, sizeof k[n].val, "%s",
		         mha_algo_names[MHA_ALGO_TILED + p->algo]);
		++n;
	}
	for (int i = 0; i < sp->ndims[p->algo]; ++i) {
		const struct mha_dim *d = &sp->dims[p->algo][i];
		if (d->fixed || n == MHA_KNOBS_MAX)
			continue;
		snprintf(k[n].key, sizeof k[n].key, "%s", d->key);
		snprintf(k[n].val, sizeof k[n].val, "%s", d->vals[p->idx[i]]);
		++n;
	}
	return n;
}

/* The user's spec with each knob it does not set, finished again. */
int mha_space_spec(const struct mha_space *sp, const struct mha_knob *k,
                   int n, struct mha_spec *s, char *err)
{
	*s = sp->spec;
	for (int i = 0; i < n; ++i)
		if (!mha_spec_is_set(s, k[i].key) &&
		    mha_spec_set(s, k[i].key, k[i].val, err))
			return -1;
	return mha_spec_finish(s, err);
}

/* Generate for a copy of s renamed to the measured kernel's name. */
int mha_space_render(const struct mha_space *sp, const struct mha_spec *s,
                     const char *what, char **text, size_t *len, char *err)
{
	struct mha_spec c = *s;

	snprintf(c.name, sizeof c.name, "%s", MHA_TUNE_KERNEL);
	return mhagen_generate(&c, what, sp->template_dir, text, len, err);
}

/* Enumerate the points of the space and merge those the generator plans
 * the same; points it refuses are left out.  The algorithms are those the
 * table says to try, or the default's when the user set algo. */
static void enumerate(struct mha_space *sp)
{
	const struct mha_knob_def *ad = &mha_knob_table[MHA_KNOB_ALGO];
	int algos[MHA_KNOB_TRIES], na = 0;

	if (mha_spec_is_set(&sp->spec, ad->key))
		algos[na++] = sp->plan.algo - MHA_ALGO_TILED;
	else
		for (int i = 0; i < ad->ntries; ++i)
			algos[na++] = (int)ad->tries[i] - MHA_ALGO_TILED;
	for (int ai = 0; ai < na; ++ai) {
		int a = algos[ai], nd = sp->ndims[a], idx[MHA_SPACE_DIMS] = {0};
		for (;;) {
			struct mha_point p = {a, {0}, -1};
			struct mha_knob k[MHA_KNOBS_MAX];
			struct mha_spec s;
			struct mha_plan plan;
			char text[sizeof sp->cands[0].plan], sub[MHAGEN_ERR];
			int nk, c;
			memcpy(p.idx, idx, sizeof idx);
			nk = mha_space_knobs(sp, &p, k);
			if (sp->npts < MHA_SPACE_POINTS &&
			    mha_space_spec(sp, k, nk, &s, sub) == 0 &&
			    mhagen_plan(&s, sp->template_dir, &plan, sub) == 0) {
				mha_tunedb_plan(&plan, text, sizeof text);
				for (c = 0; c < sp->ncands; ++c)
					if (strcmp(sp->cands[c].plan, text) == 0)
						break;
				if (c == sp->ncands) {
					snprintf(sp->cands[c].plan, sizeof sp->cands[c].plan,
					         "%s", text);
					sp->cands[c].point = -1;
					++sp->ncands;
				}
				if (sp->cands[c].point < 0)
					sp->cands[c].point = sp->npts;
				p.cand = c;
				sp->pts[sp->npts++] = p;
			}
			/* next combination */
			int i = 0;
			while (i < nd && ++idx[i] >= sp->dims[a][i].n)
				idx[i++] = 0;
			if (i == nd)
				break;
		}
	}
}

/* The default's plan first (candidate 0), then the dimensions around it
 * and the points. */
int mha_space_make(struct mha_space *sp, const struct mha_spec *s,
                   long width, const char *template_dir, char *err)
{
	memset(sp, 0, sizeof *sp);
	sp->spec = *s;
	sp->width = width;
	sp->template_dir = template_dir;
	sp->nfixed = mha_knobs_of_spec(s, sp->fixed);
	sp->pts = calloc(MHA_SPACE_POINTS, sizeof *sp->pts);
	sp->cands = calloc(MHA_SPACE_POINTS + 1, sizeof *sp->cands);
	if (!sp->pts || !sp->cands)
		return mhagen_fail(err, "out of memory");
	if (mhagen_plan(s, template_dir, &sp->plan, err))
		return -1;
	mha_tunedb_plan(&sp->plan, sp->cands[0].plan, sizeof sp->cands[0].plan);
	sp->cands[0].point = -1;
	sp->ncands = 1;
	make_dims(sp);
	enumerate(sp);
	if (sp->cands[0].point < 0) {
		/* no point plans like the default: give it the first point of
		 * its algorithm (only its plan and the point's knobs matter) */
		sp->cands[0].point = 0;
	}
	return 0;
}

/* What mha_space_make allocated. */
void mha_space_free(struct mha_space *sp)
{
	free(sp->pts);
	free(sp->cands);
	sp->pts = NULL;
	sp->cands = NULL;
}
