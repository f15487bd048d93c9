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
	in->nq = in->batch * in->seq_q * k->h * k->dk;
	in->nk = in->batch * in->seq_kv * k->kv_heads * k->dk;
	in->nv = in->batch * in->seq_kv * k->kv_heads * k->dv;
	in->no = in->batch * in->seq_q * k->h * k->dv;
	in->q = mha_alloc(in->nq);
	in->k = mha_alloc(in->nk);
	in->v = mha_alloc(in->nv);
	in->bias = mha_alloc(in->seq_q * in->seq_kv);
	in->out1 = mha_alloc(in->no);
	in->out2 = mha_alloc(in->no);
	in->kv_len = malloc(in->batch * sizeof *in->kv_len);
	if (!in->q || !in->k || !in->v || !in->bias || !in->out1 ||
	    !in->out2 || !in->kv_len)
		return -1;
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
	mha_free(in->q);
	mha_free(in->k);
	mha_free(in->v);
	mha_free(in->bias);
	mha_free(in->out1);
	mha_free(in->out2);
	free(in->kv_len);
}

static void run(const struct mha_kernel *k, const struct inputs *in, float *out)
{
	k->fn(in->q, in->k, in->v, out, in->batch, in->seq_q, in->seq_kv,
	      (k->mask & MHA_MASK_PADDING) ? in->kv_len : NULL,
	      (k->mask & MHA_MASK_BIAS) ? in->bias : NULL);
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
	struct mha_attn a = {k->h, k->kv_heads, k->dk, k->dv, k->mask,
	                     k->align, k->layout, k->window, k->scale};
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
			for (size_t hk = 0; hk < k->kv_heads; ++hk) {
				float *kr = in.k + mha_ref_offset(k->layout, b, j, hk,
				                                  in.seq_kv, k->kv_heads, k->dk);
				float *vr = in.v + mha_ref_offset(k->layout, b, j, hk,
				                                  in.seq_kv, k->kv_heads, k->dv);
				for (size_t d = 0; d < k->dk; ++d)
					kr[d] = 50.0f - kr[d];
				for (size_t d = 0; d < k->dv; ++d)
					vr[d] = 7.0f + vr[d];
			}
	run(k, &in, in.out2);
	for (size_t b = 0; b < in.batch; ++b)
		for (size_t i = 0; i < in.seq_q; ++i) {
			if (mha_ref_visible(&a, i, in.seq_q, in.seq_kv, NULL) > cut)
				continue;
			for (size_t hh = 0; hh < k->h; ++hh) {
				size_t o = mha_ref_offset(k->layout, b, i, hh, in.seq_q,
				                          k->h, k->dv);
				if (memcmp(in.out1 + o, in.out2 + o, k->dv * sizeof(float))) {
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
