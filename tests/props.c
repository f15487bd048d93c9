/* Properties of kernels beyond matching the reference: bias shift, causal
 * future, NaN rows. */
#include "props.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/mha_buf.h"
#include "../runtime/mha_ref.h"

/* Inputs of one property run, filled with a fixed pseudo-random pattern. */
struct inputs {
	size_t batch, seq_q, seq_kv, nq, nk, nv, no;
	float *q, *k, *v, *bias, *out1, *out2;
	float *slopes, *sinks; /* [h] each, for --alibi and --sinks */
	int32_t *kv_len;
};

/* Lengths for kernel k: its fixed ones, else 37 queries and keys. */
static int inputs_init(struct inputs *in, const struct mha_kernel *k)
{
	uint64_t s = 12345;

	memset(in, 0, sizeof *in);
	in->batch = 2;
	in->seq_q = k->seq_q ? k->seq_q : 37;
	in->seq_kv = k->seq_kv ? k->seq_kv : 37;
	in->nq = in->batch * in->seq_q * k->a.h * k->a.dk;
	in->nk = in->batch * in->seq_kv * k->a.kv_heads * k->a.dk;
	in->nv = in->batch * in->seq_kv * k->a.kv_heads * k->a.dv;
	in->no = in->batch * in->seq_q * k->a.h * k->a.dv;
	in->q = check_alloc(in->nq);
	in->k = check_alloc(in->nk);
	in->v = check_alloc(in->nv);
	in->bias = check_alloc(in->seq_q * in->seq_kv);
	in->out1 = check_alloc(in->no);
	in->out2 = check_alloc(in->no);
	in->kv_len = malloc(in->batch * sizeof *in->kv_len);
	in->slopes = malloc(k->a.h * sizeof *in->slopes);
	in->sinks = malloc(k->a.h * sizeof *in->sinks);
	if (!in->q || !in->k || !in->v || !in->bias || !in->out1 ||
	    !in->out2 || !in->kv_len || !in->slopes || !in->sinks)
		return -1;
	for (size_t h = 0; h < k->a.h; ++h) {
		in->slopes[h] = 0.5f * check_rng_unit(&s);
		in->sinks[h] = check_rng_unit(&s);
	}
	for (size_t i = 0; i < in->nq; ++i)
		in->q[i] = 2.0f * check_rng_unit(&s);
	for (size_t i = 0; i < in->nk; ++i)
		in->k[i] = 2.0f * check_rng_unit(&s);
	for (size_t i = 0; i < in->nv; ++i)
		in->v[i] = check_rng_unit(&s);
	for (size_t i = 0; i < in->seq_q * in->seq_kv; ++i)
		in->bias[i] = check_rng_unit(&s);
	for (size_t b = 0; b < in->batch; ++b)
		in->kv_len[b] = (int32_t)in->seq_kv;
	return 0;
}

static void inputs_free(struct inputs *in)
{
	check_free(in->q, in->nq);
	check_free(in->k, in->nk);
	check_free(in->v, in->nv);
	check_free(in->bias, in->seq_q * in->seq_kv);
	check_free(in->out1, in->no);
	check_free(in->out2, in->no);
	free(in->kv_len);
	free(in->slopes);
	free(in->sinks);
}

static void run(const struct mha_kernel *k, const struct inputs *in, float *out)
{
	struct mha_args x = {
		.q = in->q, .k = in->k, .v = in->v, .out = out,
		.batch = in->batch, .seq_q = in->seq_q, .seq_kv = in->seq_kv,
		.kv_len = (k->a.mask & MHA_MASK_PADDING) ? in->kv_len : NULL,
		.bias = (k->a.mask & MHA_MASK_BIAS) ? in->bias : NULL,
		.alibi_slopes = in->slopes, .sinks = in->sinks,
	};

	k->args(&x);
}

int props_bias_shift(const struct mha_kernel *k, char *msg, size_t len)
{
	struct inputs in;
	double err = 0.0;
	int rc = -1;

	if (inputs_init(&in, k)) {
		snprintf(msg, len, "out of memory");
		goto done;
	}
	run(k, &in, in.out1);
	/* softmax(x + c) = softmax(x): a constant per query row, here up to
	 * +-8, changes no output beyond rounding */
	for (size_t i = 0; i < in.seq_q; ++i)
		for (size_t j = 0; j < in.seq_kv; ++j)
			in.bias[i * in.seq_kv + j] += (float)((int)(i % 17) - 8);
	run(k, &in, in.out2);
	for (size_t i = 0; i < in.no; ++i)
		err = fmax(err, fabs((double)in.out1[i] - (double)in.out2[i]));
	/* outputs are at most 1 in size; the shifted scores round differently
	 * by a few ulp of 8 */
	if (!(err <= 1e-5)) {
		snprintf(msg, len, "%s: shifting bias rows changed the output by %.3g",
		         k->name, err);
		goto done;
	}
	rc = 0;
done:
	inputs_free(&in);
	return rc;
}

int props_causal_future(const struct mha_kernel *k, char *msg, size_t len)
{
	const struct mha_attn a = k->a;
	struct inputs in;
	size_t cut;
	int rc = -1;

	if (inputs_init(&in, k)) {
		snprintf(msg, len, "out of memory");
		goto done;
	}
	run(k, &in, in.out1);
	/* keys and values from cut on change; rows that cannot see them must
	 * not change at all (their weights there are exactly 0) */
	cut = in.seq_kv / 2;
	for (size_t b = 0; b < in.batch; ++b)
		for (size_t j = cut; j < in.seq_kv; ++j)
			for (size_t hk = 0; hk < k->a.kv_heads; ++hk) {
				float *kr = in.k + mha_ref_offset(k->a.layout, b, j, hk,
				                                  in.seq_kv, k->a.kv_heads, k->a.dk);
				float *vr = in.v + mha_ref_offset(k->a.layout, b, j, hk,
				                                  in.seq_kv, k->a.kv_heads, k->a.dv);
				for (size_t d = 0; d < k->a.dk; ++d)
					kr[d] = 50.0f - kr[d];
				for (size_t d = 0; d < k->a.dv; ++d)
					vr[d] = 7.0f + vr[d];
			}
	run(k, &in, in.out2);
	for (size_t b = 0; b < in.batch; ++b)
		for (size_t i = 0; i < in.seq_q; ++i) {
			if (mha_ref_visible(&a, i, in.seq_q, in.seq_kv, NULL) > cut)
				continue;
			for (size_t hh = 0; hh < k->a.h; ++hh) {
				size_t o = mha_ref_offset(k->a.layout, b, i, hh, in.seq_q,
				                          k->a.h, k->a.dv);
				if (memcmp(in.out1 + o, in.out2 + o, k->a.dv * sizeof(float))) {
					snprintf(msg, len, "%s: row %zu of batch %zu, head %zu "
					         "changed when only keys from %zu did", k->name,
					         i, b, hh, cut);
					goto done;
				}
			}
		}
	rc = 0;
done:
	inputs_free(&in);
	return rc;
}

/* Which tensor a NaN goes into. */
enum nan_in { NAN_Q, NAN_K, NAN_V };

/* Does query row i of head hh (any batch item) depend on row j of key
 * head hk?  Only when hh reads hk and key j is visible to row i (inputs
 * have no padding and a finite bias). */
static int depends(const struct mha_kernel *k, const struct mha_attn *a,
                   const struct inputs *in, size_t i, size_t hh, size_t j,
                   size_t hk)
{
	size_t first = 0;
	size_t n = mha_ref_visible(a, i, in->seq_q, in->seq_kv, &first);

	return hh / (k->a.h / k->a.kv_heads) == hk && j >= first && j < n;
}

/* What an output must be after the NaN went in. */
enum want { SAME, ZERO, ANY, IS_NAN, SAME_OR_NAN };

/* One NaN in row (b, r, head) of tensor t, at column c.  The kernels' exp
 * gives 0 for a NaN argument, so a NaN in a query row makes every score of
 * that row weigh 0: the output row is zeros, like a fully masked row.  A
 * NaN in a key row changes the rows that see that key (they drop it, or
 * become NaN when the NaN reached their running maximum).  A NaN in a
 * value row makes column c NaN in the rows that see that key; rows of the
 * same batch item and head group that do not see it may get a NaN in
 * column c too, as tiled kernels multiply the values of keys masked for
 * some rows of a tile by an exact 0 weight (0 x NaN is NaN).  Every other
 * output keeps every bit. */
static int nan_row(const struct mha_kernel *k, enum nan_in t, char *msg,
                   size_t len)
{
	static const char *const names[] = {"q", "k", "v"};
	static const char *const wants[] = {"the same bits", "0", "anything",
	                                    "NaN", "the same bits or NaN"};
	const struct mha_attn a = k->a;
	struct inputs in;
	size_t b, r, head, c, o;
	float *x;
	int rc = -1;

	if (inputs_init(&in, k)) {
		snprintf(msg, len, "out of memory");
		goto done;
	}
	run(k, &in, in.out1);
	b = in.batch - 1;
	c = (t == NAN_V ? k->a.dv : k->a.dk) / 2;
	if (t == NAN_Q) {
		r = in.seq_q - 1 - in.seq_q / 3;
		head = k->a.h - 1;
		x = in.q + mha_ref_offset(k->a.layout, b, r, head, in.seq_q, k->a.h,
		                          k->a.dk);
	} else {
		r = in.seq_kv / 3;
		head = k->a.kv_heads - 1;
		x = (t == NAN_K ? in.k : in.v) +
		    mha_ref_offset(k->a.layout, b, r, head, in.seq_kv, k->a.kv_heads,
		                   t == NAN_K ? k->a.dk : k->a.dv);
	}
	x[c] = NAN;
	run(k, &in, in.out2);
	for (size_t bb = 0; bb < in.batch; ++bb)
		for (size_t i = 0; i < in.seq_q; ++i)
			for (size_t hh = 0; hh < k->a.h; ++hh) {
				int dep = bb == b && (t == NAN_Q ? i == r && hh == head
				          : depends(k, &a, &in, i, hh, r, head));
				int group = bb == b && t == NAN_V &&
				            hh / (k->a.h / k->a.kv_heads) == head;
				o = mha_ref_offset(k->a.layout, bb, i, hh, in.seq_q, k->a.h,
				                   k->a.dv);
				for (size_t d = 0; d < k->a.dv; ++d) {
					float y = in.out2[o + d];
					enum want w = dep ? (t == NAN_Q ? ZERO : t == NAN_K ? ANY
					                     : d == c ? IS_NAN : SAME)
					            : group && d == c ? SAME_OR_NAN : SAME;
					int same = memcmp(&y, &in.out1[o + d], sizeof y) == 0;
					int ok = w == SAME ? same : w == ZERO ? y == 0.0f
					       : w == ANY ? 1 : w == IS_NAN ? isnan(y)
					       : same || isnan(y);
					if (!ok) {
						snprintf(msg, len, "%s: NaN in %s row %zu of batch "
						         "%zu, head %zu: output row %zu head %zu "
						         "column %zu is %.9g (was %.9g), wanted %s",
						         k->name, names[t], r, b, head, i, hh, d,
						         (double)y, (double)in.out1[o + d], wants[w]);
						goto done;
					}
				}
			}
	rc = 0;
done:
	inputs_free(&in);
	return rc;
}

int props_nan_rows(const struct mha_kernel *k, char *msg, size_t len)
{
	for (int t = NAN_Q; t <= NAN_V; ++t)
		if (nan_row(k, (enum nan_in)t, msg, len))
			return -1;
	return 0;
}
