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

/* Dimension d is knob key; add the n values v. */
static void add_vals(struct mha_dim *d, const char *key, const long *v, int n)
{
	d->key = key;
	for (int i = 0; i < n; ++i) {
		char b[24];
		snprintf(b, sizeof b, "%ld", v[i]);
		add_val(d, b);
	}
}

/* The knob values tried for s's target: block sizes around the defaults,
 * micro-tiles in multiples of the vector width that fit the registers.
 * The default's own values (from plan, "tiled bq192 bk128 ...") join. */
static void make_dims(struct mha_space *sp, const char *plan)
{
	static const long bq[] = {32, 64, 128, 192, 256, 384};
	static const long bk[] = {32, 64, 128, 256};
	static const long tile[] = {2, 4, 6, 8};
	static const long um[] = {0, MHAGEN_MAX_D};
	static const long ks[] = {1, 2, 4, 8};
	long w = sp->width;
	long mq[4];
	int nmq = 0;
	long pbq, pbk, pmq, pnk, pnv, pks;

	memset(sp->dims, 0, sizeof sp->dims);
	if (w == 1) {
		mq[nmq++] = 1, mq[nmq++] = 2, mq[nmq++] = 4, mq[nmq++] = 8;
	} else {
		for (long m = 1; m <= 3; ++m)
			mq[nmq++] = m * w;
	}
	add_vals(&sp->dims[0][0], "block-q", bq, 6);
	add_vals(&sp->dims[0][1], "block-kv", bk, 4);
	add_vals(&sp->dims[0][2], "mq", mq, nmq);
	add_vals(&sp->dims[0][3], "nk", tile, 4);
	add_vals(&sp->dims[0][4], "nv", tile, 4);
	add_vals(&sp->dims[1][0], "block-kv", bk, 4);
	add_vals(&sp->dims[1][1], "unroll-max", um, 2);
	sp->ndims[0] = 5;
	sp->ndims[1] = 2;
	/* key ranges per row only pay with threads to spread them over */
	if (sp->spec.threads) {
		add_vals(&sp->dims[1][2], "kv-split", ks, 4);
		sp->ndims[1] = 3;
	}
	if (sscanf(plan, "tiled bq%ld bk%ld mq%ld nk%ld nv%ld", &pbq, &pbk, &pmq,
	           &pnk, &pnv) == 5) {
		long v[5] = {pbq, pbk, pmq, pnk, pnv};
		for (int i = 0; i < 5; ++i)
			add_vals(&sp->dims[0][i], sp->dims[0][i].key, &v[i], 1);
	} else if (sscanf(plan, "rows bk%ld uk%*d uv%*d ks%ld", &pbk, &pks) == 2) {
		add_vals(&sp->dims[1][0], "block-kv", &pbk, 1);
		if (sp->ndims[1] == 3)
			add_vals(&sp->dims[1][2], "kv-split", &pks, 1);
	}
	/* knobs the user set are not varied */
	for (int a = 0; a < 2; ++a)
		for (int i = 0; i < sp->ndims[a]; ++i)
			if (mha_spec_is_set(&sp->spec, sp->dims[a][i].key)) {
				sp->dims[a][i].fixed = 1;
				sp->dims[a][i].n = 1;
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
	if (!mha_spec_is_set(&sp->spec, "algo")) {
		snprintf(k[n].key, sizeof k[n].key, "algo");
		snprintf(k[n].val, sizeof k[n].val, "%s", p->algo ? "rows" : "tiled");
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
 * the same; points it refuses are left out. */
static void enumerate(struct mha_space *sp)
{
	int algos[2], na = 0;

	if (mha_spec_is_set(&sp->spec, "algo")) {
		algos[na++] = sp->spec.algo == 2 ? 1 :
		              sp->spec.algo == 1 ? 0 :
		              strncmp(sp->cands[0].plan, "rows", 4) == 0;
	} else {
		algos[na++] = 0;
		algos[na++] = 1;
	}
	for (int ai = 0; ai < na; ++ai) {
		int a = algos[ai], nd = sp->ndims[a], idx[MHA_SPACE_DIMS] = {0};
		for (;;) {
			struct mha_point p = {a, {0}, -1};
			struct mha_knob k[MHA_KNOBS_MAX];
			struct mha_spec s;
			char *plan, sub[MHAGEN_ERR];
			size_t len;
			int nk, c;
			memcpy(p.idx, idx, sizeof idx);
			nk = mha_space_knobs(sp, &p, k);
			if (sp->npts < MHA_SPACE_POINTS &&
			    mha_space_spec(sp, k, nk, &s, sub) == 0 &&
			    mha_space_render(sp, &s, "plan", &plan, &len, sub) == 0) {
				for (c = 0; c < sp->ncands; ++c)
					if (strcmp(sp->cands[c].plan, plan) == 0)
						break;
				if (c == sp->ncands) {
					snprintf(sp->cands[c].plan, sizeof sp->cands[c].plan,
					         "%s", plan);
					sp->cands[c].point = -1;
					++sp->ncands;
				}
				if (sp->cands[c].point < 0)
					sp->cands[c].point = sp->npts;
				free(plan);
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
	char *plan = NULL;
	size_t len;

	memset(sp, 0, sizeof *sp);
	sp->spec = *s;
	sp->width = width;
	sp->template_dir = template_dir;
	sp->nfixed = mha_knobs_of_spec(s, sp->fixed);
	sp->pts = calloc(MHA_SPACE_POINTS, sizeof *sp->pts);
	sp->cands = calloc(MHA_SPACE_POINTS + 1, sizeof *sp->cands);
	if (!sp->pts || !sp->cands)
		return mhagen_fail(err, "out of memory");
	if (mha_space_render(sp, s, "plan", &plan, &len, err))
		return -1;
	snprintf(sp->cands[0].plan, sizeof sp->cands[0].plan, "%s", plan);
	sp->cands[0].point = -1;
	sp->ncands = 1;
	make_dims(sp, plan);
	free(plan);
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
