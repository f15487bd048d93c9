/* Checks of generated layers against the reference layer (runtime/
 * mha_layer_ref.c): cases, inputs that break them, tolerances. */
#include "layer_check.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/mha_layer_ref.h"
#include "../runtime/mha_ref.h"
#include "check.h"

/* One call's lengths and how its inputs are drawn. */
struct layer_case {
	size_t batch, seq_q, seq_kv;
	int hot;       /* inputs scaled so that scores spread over tens (the
	                * largest near 60): exp(score) overflows float without
	                * the max subtraction */
	uint64_t seed;
};

/* n floats uniform in [-amp, amp). */
static void fill(float *p, size_t n, float amp, uint64_t *s)
{
	for (size_t i = 0; i < n; ++i)
		p[i] = amp * check_rng_unit(s);
}

/* The inputs and buffers of one case. */
struct bufs {
	size_t nq, nk, nv, nout, nmask, nkeys;
	float *query, *key, *value, *out, *out2, *ref, *bias;
	float *w_in, *b_in, *wq, *wk, *wv, *wo, *bo, *packed, *bias_k, *bias_v;
	/* --weights: averaged and per head, the workspace call's average,
	 * the reference's */
	size_t nw, nhw;
	float *w, *hw, *w2, *wref, *hwref;
	uint8_t *bool_mask, *key_mask;
	int32_t *kv_len;
};

/* Layer k's forward on a with a workspace of exactly NAME_workspace(a)
 * bytes at an odd address (a->workspace left NULL after).  0, or -1 with
 * msg when it wrote past the workspace. */
static int forward_in_workspace(const struct mha_layer_kernel *k,
                                struct mha_layer_args *a, char *msg, size_t n)
{
	const size_t ws = k->workspace(a);
	unsigned char *mem = malloc(ws + 2);
	int bad;

	if (!mem)
		abort();
	mem[ws + 1] = 0xa5;
	a->workspace = mem + 1;
	a->workspace_size = ws;
	k->forward(a);
	bad = mem[ws + 1] != 0xa5;
	free(mem);
	a->workspace = NULL;
	a->workspace_size = 0;
	if (bad)
		snprintf(msg, n, "%s: wrote past its workspace of %zu bytes",
		         k->name, ws);
	return bad ? -1 : 0;
}

/* Layer k's forward on a with the host's parallel-for (3 workers): 0 when
 * out (n floats) has the bits of want and the pool ran its tasks properly,
 * else -1 with msg. */
static int forward_on_pool(const struct mha_layer_kernel *k,
                           struct mha_layer_args a, const float *want,
                           size_t nout, char *msg, size_t n)
{
	struct check_pool p = {.workers = 3};
	int rc = 0;

	a.parallel = check_pool_parallel;
	a.pool = &p;
	a.workers = p.workers;
	for (size_t i = 0; i < nout; ++i)
		a.out[i] = NAN;
	k->forward(&a);
	if (p.bad_worker || atomic_load(&p.calls) == 0) {
		snprintf(msg, n, "%s: the host's parallel-for was %s", k->name,
		         p.bad_worker ? "misused" : "not called");
		rc = -1;
	} else if (memcmp(a.out, want, nout * sizeof *want)) {
		snprintf(msg, n, "%s: batch %zu seq_q %zu: the host's parallel-for "
		         "changed the bits of out", k->name, a.batch, a.seq_q);
		rc = -1;
	}
	return rc;
}

/* Run case c on layer k; 0 or -1 with msg. */
static int run_case(const struct mha_layer_kernel *k, const struct layer_case *c,
                    char *msg, size_t n)
{
	const struct mha_layer *l = &k->l;
	const struct mha_attn *at = &l->attn;
	const size_t E = l->embed, B = c->batch, sq = c->seq_q;
	const size_t skv = l->cross ? c->seq_kv : sq;
	const size_t kd = l->cross ? l->kdim : E, vd = l->cross ? l->vdim : E;
	/* k and v widths: kv_heads heads (grouped-query projections) */
	const size_t KE = at->kv_heads * (E / at->h), NI = E + 2 * KE;
	const size_t planes = ((at->mask_dims & MHA_DIMS_BATCH) ? B : 1) *
	                      ((at->mask_dims & MHA_DIMS_HEAD) ? at->h : 1);
	const size_t np = k->packed_floats();
	/* the weights' columns: the keys, then add_bias_kv's and
	 * add_zero_attn's */
	const size_t wn = skv + (size_t)l->add_bias_kv + (size_t)l->add_zero_attn;
	uint64_t s = c->seed;
	struct bufs b = {0};
	/* the weights' scale: q and k elements of about 1, or with hot inputs
	 * 4, so that scaled scores have a spread of about 16 */
	const float in_amp = c->hot ? 3.0f : 1.0f;
	const float w_amp = (c->hot ? 4.0f : 1.0f) / sqrtf((float)E);
	int rc = -1;
	double worst = 0.0;
	size_t worst_at = 0;

	b.nq = B * sq * E;
	b.nk = B * skv * kd;
	b.nv = B * skv * vd;
	b.nout = B * sq * E;
	b.query = check_alloc(b.nq);
	b.key = check_alloc(b.nk ? b.nk : 1);
	b.value = check_alloc(b.nv ? b.nv : 1);
	b.out = check_alloc(b.nout);
	b.out2 = check_alloc(b.nout);
	b.ref = check_alloc(b.nout);
	b.w_in = check_alloc(NI * E);
	b.b_in = check_alloc(NI);
	b.wq = check_alloc(E * E);
	b.wk = check_alloc(KE * kd);
	b.wv = check_alloc(KE * vd);
	b.wo = check_alloc(E * E);
	b.bo = check_alloc(E);
	b.packed = check_alloc(np);
	b.nw = l->weights ? B * sq * wn + 1 : 1;
	b.nhw = l->weights ? B * at->h * sq * wn + 1 : 1;
	b.bias_k = check_alloc(KE);
	b.bias_v = check_alloc(KE);
	b.w = check_alloc(b.nw);
	b.w2 = check_alloc(b.nw);
	b.wref = check_alloc(b.nw);
	b.hw = check_alloc(b.nhw);
	b.hwref = check_alloc(b.nhw);
	b.nmask = planes * sq * (skv ? skv : 1);
	b.bias = check_alloc(b.nmask);
	b.bool_mask = malloc(b.nmask);
	b.key_mask = malloc(B * (skv ? skv : 1));
	b.kv_len = malloc(sizeof *b.kv_len * B);
	if (!b.bool_mask || !b.key_mask || !b.kv_len)
		abort();
	fill(b.query, b.nq, in_amp, &s);
	fill(b.key, b.nk, in_amp, &s);
	fill(b.value, b.nv, in_amp, &s);
	fill(b.w_in, NI * E, w_amp, &s);
	fill(b.b_in, NI, 0.5f, &s);
	fill(b.wq, E * E, w_amp, &s);
	fill(b.wk, KE * kd, w_amp * sqrtf((float)E / (float)kd), &s);
	fill(b.wv, KE * vd, w_amp * sqrtf((float)E / (float)vd), &s);
	fill(b.wo, E * E, 1.0f / sqrtf((float)E), &s);
	fill(b.bo, E, 0.5f, &s);
	/* bias_k: a key of the projections' size (scores of a few), bias_v */
	fill(b.bias_k, KE, 2.0f * in_amp, &s);
	fill(b.bias_v, KE, 1.0f, &s);
	fill(b.bias, b.nmask, 2.0f, &s);
	for (size_t i = 0; i < b.nmask; ++i) {
		/* one in eight hidden, by -inf bias and by byte */
		if (check_rng_next(&s) % 8 == 0)
			b.bias[i] = -INFINITY;
		b.bool_mask[i] = check_rng_next(&s) % 8 != 0;
	}
	for (size_t i = 0; i < B * skv; ++i)
		b.key_mask[i] = check_rng_next(&s) % 5 != 0;
	for (size_t i = 0; i < B; ++i)
		b.kv_len[i] = (int32_t)(check_rng_next(&s) % (skv + 1));
	if (B > 1) {
		/* item 1 sees no key at all: its rows attend to nothing */
		memset(b.key_mask + skv, 0, skv);
		b.kv_len[1] = 0;
	}
	{
		const struct mha_layer_params p = {
			.in_proj_weight = b.w_in, .in_proj_bias = b.b_in,
			.q_proj_weight = b.wq, .k_proj_weight = b.wk,
			.v_proj_weight = b.wv, .out_proj_weight = b.wo,
			.out_proj_bias = b.bo, .bias_k = b.bias_k,
			.bias_v = b.bias_v};
		struct mha_layer_args a = {
			.query = b.query, .key = l->cross ? b.key : NULL,
			.value = l->cross ? b.value : NULL, .out = b.out,
			.batch = B, .seq_q = sq, .seq_kv = skv,
			.packed = b.packed,
			.kv_len = (at->mask & MHA_MASK_PADDING) ? b.kv_len : NULL,
			.bias = (at->mask & MHA_MASK_BIAS) ? b.bias : NULL,
			.bool_mask = (at->mask & MHA_MASK_BOOL) ? b.bool_mask : NULL,
			.key_mask = (at->mask & MHA_MASK_KEYS) ? b.key_mask : NULL,
			.weights = l->weights ? b.w : NULL,
			.head_weights = l->weights ? b.hw : NULL};
		struct mha_layer_args r = a;
		double scale = 0.0;

		k->pack(b.packed, &p);
		for (size_t i = 0; i < b.nout; ++i)
			b.out[i] = b.out2[i] = NAN;
		k->forward(&a);
		r.out = b.ref;
		r.weights = a.weights ? b.wref : NULL;
		r.head_weights = a.head_weights ? b.hwref : NULL;
		mha_ref_layer(l, &p, &r);
		/* the weights: within float rounding of the softmax's */
		for (size_t i = 0; l->weights && i < b.nw - 1 + b.nhw - 1; ++i) {
			const int avg = i < b.nw - 1;
			const size_t x = avg ? i : i - (b.nw - 1);
			const float got = avg ? b.w[x] : b.hw[x];
			const float want = avg ? b.wref[x] : b.hwref[x];
			const double tol = 2e-3 * fabs(want) + 1e-5;
			if (!(fabs((double)got - want) <= tol)) {
				snprintf(msg, n, "%s: batch %zu seq_q %zu seq_kv %zu%s: %s[%zu] "
				         "= %g, reference %g (tolerance %g)", k->name, B, sq,
				         skv, c->hot ? " hot" : "",
				         avg ? "weights" : "head_weights", x, (double)got,
				         (double)want, tol);
				goto done;
			}
		}
		for (size_t i = 0; i < b.nout; ++i)
			scale = fmax(scale, fabs(b.ref[i]));
		for (size_t row = 0; row < B * sq; ++row) {
			/* float error grows with the row's size and the whole
			 * output's: the projections' sums of E products, the
			 * softmax's sensitivity to scores of +-80 */
			double rs = 0.0;
			for (size_t e = 0; e < E; ++e)
				rs = fmax(rs, fabs(b.ref[row * E + e]));
			for (size_t e = 0; e < E; ++e) {
				const size_t i = row * E + e;
				const double tol = 2e-3 * rs + 1e-4 * scale + 1e-6;
				const double err = fabs((double)b.out[i] - b.ref[i]);
				if (!(err <= tol)) {
					snprintf(msg, n, "%s: batch %zu seq_q %zu seq_kv %zu%s "
					         "seed %llu: out[%zu] (row %zu, col %zu) = %g, "
					         "reference %g (tolerance %g)", k->name, B, sq,
					         skv, c->hot ? " hot" : "",
					         (unsigned long long)c->seed, i, row, e,
					         (double)b.out[i], (double)b.ref[i], tol);
					goto done;
				}
				if (err / tol > worst) {
					worst = err / tol;
					worst_at = i;
				}
			}
		}
		(void)worst_at;
		/* a workspace of exactly NAME_workspace bytes at an odd address:
		 * the same bits, nothing past it written */
		a.out = b.out2;
		if (l->weights) {
			/* the average alone: per-head weights in the scratch */
			a.head_weights = NULL;
			a.weights = b.w2;
		}
		if (forward_in_workspace(k, &a, msg, n))
			goto done;
		if (memcmp(b.out, b.out2, b.nout * sizeof *b.out) != 0 ||
		    (l->weights && memcmp(b.w, b.w2, (b.nw - 1) * sizeof *b.w))) {
			snprintf(msg, n, "%s: batch %zu seq_q %zu: the workspace call "
			         "differs from the malloc one", k->name, B, sq);
			goto done;
		}
		/* the projections' rows and the attention's items on a host's
		 * pool: the same bits */
		if (forward_on_pool(k, a, b.out, b.nout, msg, n))
			goto done;
		if (!check_intact(b.out) || !check_intact(b.out2) ||
		    !check_intact(b.packed)) {
			snprintf(msg, n, "%s: wrote before a buffer", k->name);
			goto done;
		}
	}
	rc = 0;
done:
	check_free(b.query, b.nq);
	check_free(b.key, b.nk ? b.nk : 1);
	check_free(b.value, b.nv ? b.nv : 1);
	check_free(b.out, b.nout);
	check_free(b.out2, b.nout);
	check_free(b.ref, b.nout);
	check_free(b.w_in, NI * E);
	check_free(b.b_in, NI);
	check_free(b.wq, E * E);
	check_free(b.wk, KE * kd);
	check_free(b.wv, KE * vd);
	check_free(b.wo, E * E);
	check_free(b.bo, E);
	check_free(b.packed, np);
	check_free(b.bias_k, KE);
	check_free(b.bias_v, KE);
	check_free(b.bias, b.nmask);
	check_free(b.w, b.nw);
	check_free(b.w2, b.nw);
	check_free(b.wref, b.nw);
	check_free(b.hw, b.nhw);
	check_free(b.hwref, b.nhw);
	free(b.bool_mask);
	free(b.key_mask);
	free(b.kv_len);
	return rc;
}

/* Element i of a cache of kv_dtype as a float. */
static float cache_get(const struct mha_attn *at, const void *c, size_t i)
{
	return (float)mha_ref_kv(at, c, i);
}

/* Store the n floats f at element i on of a cache of kv_dtype, as the
 * step does (q8: i and n multiples of 32). */
static void cache_put(const struct mha_attn *at, void *c, size_t i,
                      const float *f, size_t n)
{
	mha_kv_store(at->kv_dtype, f, (void *)mha_kv_at(at->kv_dtype, c, i), n);
}

/* One decoder step (--kv-cache) of layer k on batch B, sq new tokens each,
 * over caches whose lengths are drawn (one item's cache full but for the
 * new tokens, one empty), their unfilled positions NaN: the step reads only
 * what it should.  Checks: the new k and v stored within the storage
 * type's rounding of the reference's projections, nothing else in the
 * caches changed, out within tolerance of the reference reading the caches
 * as stored, the same bits with an exact workspace, and a cache_len that
 * does not fit refused (out NaN, errno ERANGE, the caches untouched).  0 or
 * -1 with msg. */
static int run_step(const struct mha_layer_kernel *k, size_t B, size_t sq,
                    int hot, uint64_t seed, char *msg, size_t n)
{
	const struct mha_layer *l = &k->l;
	const struct mha_attn *at = &l->attn;
	const size_t E = l->embed, KE = at->kv_heads * (E / at->h);
	const size_t NI = E + 2 * KE, M = l->kv_cache, np = k->packed_floats();
	const int dt = at->kv_dtype;
	const size_t nc = B * M * KE, cb = mha_kv_bytes(dt, nc);
	const size_t rb = mha_kv_bytes(dt, KE); /* a position's row's bytes */
	/* half an ulp of the storage type, relative; q8: half a step of the
	 * block (its max / 254) and the f16 rounding of the step, below
	 * 1 / 200 of the row's largest */
	const double half = dt == MHA_DTYPE_F16 ? 0x1p-11 :
	                    dt == MHA_DTYPE_BF16 ? 0x1p-8 : 0.0;
	const double step = dt == MHA_DTYPE_Q8 ? 1.0 / 200 : 0.0;
	const float in_amp = hot ? 3.0f : 1.0f;
	const float w_amp = (hot ? 4.0f : 1.0f) / sqrtf((float)E);
	float *query = check_alloc(B * sq * E), *out = check_alloc(B * sq * E);
	float *out2 = check_alloc(B * sq * E), *ref = check_alloc(B * sq * E);
	float *w_in = check_alloc(NI * E), *b_in = check_alloc(NI);
	float *wo = check_alloc(E * E), *bo = check_alloc(E);
	float *packed = check_alloc(np);
	unsigned char *kc = malloc(cb + 1), *vc = malloc(cb + 1);
	unsigned char *kc0 = malloc(cb + 1), *vc0 = malloc(cb + 1);
	unsigned char *kc1 = malloc(cb + 1), *vc1 = malloc(cb + 1);
	float *fk = malloc(sizeof *fk * KE), *fv = malloc(sizeof *fv * KE);
	double *new_kv = malloc(sizeof *new_kv * B * sq * 2 * KE + 1);
	int32_t *len = malloc(sizeof *len * B);
	uint64_t s = seed;
	double scale = 0.0;
	int rc = -1;

	if (!kc || !vc || !kc0 || !vc0 || !kc1 || !vc1 || !fk || !fv ||
	    !new_kv || !len)
		abort();
	fill(query, B * sq * E, in_amp, &s);
	fill(w_in, NI * E, w_amp, &s);
	fill(b_in, NI, 0.5f, &s);
	fill(wo, E * E, 1.0f / sqrtf((float)E), &s);
	fill(bo, E, 0.5f, &s);
	for (size_t b = 0; b < B; ++b)
		len[b] = (int32_t)(b == 0 ? M - sq : b == 1 ? 0 :
		                   check_rng_next(&s) % (M - sq + 1));
	for (size_t b = 0; b < B; ++b)
		for (size_t pos = 0; pos < M; ++pos) {
			const int held = pos < (size_t)len[b];
			/* earlier tokens' k and v, of the projections' size */
			for (size_t c = 0; c < KE; ++c) {
				fk[c] = held ? 2.0f * in_amp * check_rng_unit(&s) : NAN;
				fv[c] = held ? 2.0f * in_amp * check_rng_unit(&s) : NAN;
			}
			cache_put(at, kc, (b * M + pos) * KE, fk, KE);
			cache_put(at, vc, (b * M + pos) * KE, fv, KE);
		}
	memcpy(kc0, kc, cb);
	memcpy(vc0, vc, cb);
	{
		const struct mha_layer_params p = {.in_proj_weight = w_in,
			.in_proj_bias = b_in, .out_proj_weight = wo,
			.out_proj_bias = bo};
		struct mha_layer_args a = {.query = query, .out = out, .batch = B,
			.seq_q = sq, .packed = packed, .k_cache = kc, .v_cache = vc,
			.cache_len = len};
		struct mha_layer_args r = a;

		k->pack(packed, &p);
		k->forward(&a);
		r.out = ref;
		mha_ref_layer_step(l, &p, &r, new_kv);
		for (size_t b = 0; b < B; ++b)
			for (size_t pos = 0; pos < M; ++pos) {
				const size_t t = pos - (size_t)len[b]; /* new token t */
				const size_t row = (b * M + pos) * KE;
				double rs = 0.0;

				if (pos < (size_t)len[b] || t >= sq) {
					const size_t at0 = mha_kv_bytes(dt, row);
					if (memcmp(kc + at0, kc0 + at0, rb) ||
					    memcmp(vc + at0, vc0 + at0, rb)) {
						snprintf(msg, n, "%s: batch %zu seq_q %zu: item %zu's "
						         "cache position %zu (cache_len %d) changed",
						         k->name, B, sq, b, pos, (int)len[b]);
						goto done;
					}
					continue;
				}
				for (size_t c = 0; c < 2 * KE; ++c)
					rs = fmax(rs, fabs(new_kv[(b * sq + t) * 2 * KE + c]));
				for (size_t c = 0; c < 2 * KE; ++c) {
					const double want = new_kv[(b * sq + t) * 2 * KE + c];
					const float got = cache_get(at, c < KE ? kc : vc,
					                            row + c % KE);
					const double tol = half * fabs(want) + (2e-5 + step) * rs +
					                   1e-6;
					if (!(fabs(got - want) <= tol)) {
						snprintf(msg, n, "%s: batch %zu seq_q %zu seed %llu: "
						         "item %zu's new token %zu stored %s[%zu] = %g, "
						         "reference %g (tolerance %g)", k->name, B, sq,
						         (unsigned long long)seed, b, t,
						         c < KE ? "k" : "v", c % KE, (double)got, want,
						         tol);
						goto done;
					}
				}
			}
		for (size_t i = 0; i < B * sq * E; ++i)
			scale = fmax(scale, fabs(ref[i]));
		for (size_t row = 0; row < B * sq; ++row) {
			double rs = 0.0;
			for (size_t e = 0; e < E; ++e)
				rs = fmax(rs, fabs(ref[row * E + e]));
			for (size_t e = 0; e < E; ++e) {
				const size_t i = row * E + e;
				const double tol = 2e-3 * rs + 1e-4 * scale + 1e-6;
				if (!(fabs((double)out[i] - ref[i]) <= tol)) {
					snprintf(msg, n, "%s: batch %zu seq_q %zu%s seed %llu: "
					         "out[%zu] (row %zu, col %zu) = %g, reference %g "
					         "(tolerance %g)", k->name, B, sq, hot ? " hot" : "",
					         (unsigned long long)seed, i, row, e,
					         (double)out[i], (double)ref[i], tol);
					goto done;
				}
			}
		}
		/* again with exactly NAME_workspace bytes at an odd address: the
		 * same bits in out and the caches */
		memcpy(kc1, kc, cb);
		memcpy(vc1, vc, cb);
		a.out = out2;
		if (forward_in_workspace(k, &a, msg, n))
			goto done;
		if (memcmp(out, out2, B * sq * E * sizeof *out) ||
		    memcmp(kc, kc1, cb) || memcmp(vc, vc1, cb)) {
			snprintf(msg, n, "%s: batch %zu seq_q %zu: the workspace call "
			         "differs from the malloc one", k->name, B, sq);
			goto done;
		}
		/* on a host's pool: the same bits (the same k and v stored again) */
		if (forward_on_pool(k, a, out, B * sq * E, msg, n))
			goto done;
		if (memcmp(kc, kc1, cb) || memcmp(vc, vc1, cb)) {
			snprintf(msg, n, "%s: the host's parallel-for changed the caches",
			         k->name);
			goto done;
		}
		/* an item whose new tokens do not fit: refused, nothing written */
		len[B - 1] = (int32_t)(M - sq + 1);
		errno = 0;
		k->forward(&a);
		{
			/* refused: errno ERANGE, the caches as they were (compared
			 * once), every element of out NaN */
			int bad = errno != ERANGE || memcmp(kc, kc1, cb) ||
			          memcmp(vc, vc1, cb);
			for (size_t i = 0; i < B * sq * E; ++i)
				bad |= !isnan(out2[i]);
			if (bad) {
				snprintf(msg, n, "%s: batch %zu seq_q %zu: cache_len %d past "
				         "the cache of %zu not refused (out NaN, errno "
				         "ERANGE, the caches as they were)", k->name, B, sq,
				         (int)len[B - 1], M);
				goto done;
			}
		}
		if (!check_intact(out) || !check_intact(out2) ||
		    !check_intact(packed)) {
			snprintf(msg, n, "%s: wrote before a buffer", k->name);
			goto done;
		}
	}
	rc = 0;
done:
	check_free(query, B * sq * E);
	check_free(out, B * sq * E);
	check_free(out2, B * sq * E);
	check_free(ref, B * sq * E);
	check_free(w_in, NI * E);
	check_free(b_in, NI);
	check_free(wo, E * E);
	check_free(bo, E);
	check_free(packed, np);
	free(kc);
	free(vc);
	free(kc0);
	free(vc0);
	free(kc1);
	free(vc1);
	free(fk);
	free(fv);
	free(new_kv);
	free(len);
	return rc;
}

int check_layer(const struct mha_layer_kernel *k, char *msg, size_t n)
{
	/* decoder steps: batch, new tokens (one: the decode; a few: a
	 * prompt's chunk or speculative tokens) */
	static const size_t steps[][2] = {{1, 1}, {2, 1}, {3, 4}, {4, 7}};

	if (k->l.kv_cache) {
		for (size_t i = 0; i < sizeof steps / sizeof steps[0]; ++i)
			for (int hot = 0; hot < 2; ++hot) {
				const size_t sq = k->seq_q ? k->seq_q : steps[i][1];
				if (sq > k->l.kv_cache)
					continue;
				if (run_step(k, steps[i][0], sq, hot,
				             0x9e3779b97f4a7c15ull * (i * 2 + (size_t)hot + 1),
				             msg, n))
					return -1;
			}
		return 0;
	}

	/* lengths: one row, below, at and past the micro-tiles (rows of the
	 * projections: batch x seq, 6 or 12 at a time), query and key lengths
	 * apart for cross-attention */
	static const size_t lens[][3] = {
		{1, 1, 1}, {2, 5, 7}, {3, 13, 4}, {2, 33, 19}, {1, 50, 64},
	};
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; ++i)
		for (int hot = 0; hot < 2; ++hot) {
			struct layer_case c = {lens[i][0],
				k->seq_q ? k->seq_q : lens[i][1],
				k->seq_kv ? k->seq_kv : lens[i][2], hot,
				0x9e3779b97f4a7c15ull * (i * 2 + (size_t)hot + 1)};
			if (run_case(k, &c, msg, n))
				return -1;
		}
	return 0;
}
