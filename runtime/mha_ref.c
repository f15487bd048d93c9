/* The reference attention: every mask, layout and head grouping, in double. */
#include "mha_ref.h"

#include <math.h>
#include <stdlib.h>

size_t mha_ref_offset(int layout, size_t b, size_t s, size_t head,
                      size_t seq, size_t heads, size_t d)
{
	if (layout == MHA_LAYOUT_BHSD)
		return ((b * heads + head) * seq + s) * d;
	return ((b * seq + s) * heads + head) * d;
}

size_t mha_ref_visible(const struct mha_attn *a, size_t i, size_t seq_q,
                       size_t seq_kv, size_t *first)
{
	size_t end = seq_kv; /* keys [lo, end) are visible */
	size_t lo = 0;

	if (a->mask & MHA_MASK_CAUSAL) {
		/* bottom-right: j <= i + seq_kv - seq_q; top-left: j <= i */
		size_t shift = a->align == MHA_ALIGN_TOP_LEFT ? 0 : seq_kv;
		size_t lim = i + 1 + shift; /* end + seq_q (bottom-right) */
		size_t sub = a->align == MHA_ALIGN_TOP_LEFT ? 0 : seq_q;
		end = lim > sub ? lim - sub : 0;
		if (end > seq_kv)
			end = seq_kv;
	}
	if (a->window && end > a->window)
		lo = end - a->window;
	if (first)
		*first = lo;
	return end;
}

/* One query row: scores in double, max-subtracted softmax, weighted sum;
 * with w (a row of seq_kv floats) also the weights, 0 where masked. */
static void ref_row(const struct mha_attn *a, const float *qr, const float *k,
                    const float *v, float *o, float *w, size_t b, size_t i,
                    size_t hk, size_t seq_kv, size_t lo,
                    size_t end, const float *bias, double *s)
{
	double mx = -INFINITY, sum = 0.0;

	for (size_t j = lo; j < end; ++j) {
		const float *kr = k + mha_ref_offset(a->layout, b, j, hk, seq_kv,
		                                     a->kv_heads, a->dk);
		double acc = 0.0;
		for (size_t d = 0; d < a->dk; ++d)
			acc += (double)qr[d] * (double)kr[d];
		acc *= a->scale;
		if (bias)
			acc += (double)bias[i * seq_kv + j];
		s[j] = acc;
		if (acc > mx)
			mx = acc;
	}
	for (size_t d = 0; d < a->dv; ++d)
		o[d] = 0.0f;
	for (size_t j = 0; w && j < seq_kv; ++j)
		w[j] = 0.0f;
	if (end <= lo || mx == -INFINITY)
		return; /* every key masked: zeros */
	for (size_t j = lo; j < end; ++j) {
		s[j] = exp(s[j] - mx);
		sum += s[j];
	}
	for (size_t j = lo; w && j < end; ++j)
		w[j] = (float)(s[j] / sum);
	for (size_t d = 0; d < a->dv; ++d) {
		double acc = 0.0;
		for (size_t j = lo; j < end; ++j) {
			const float *vr = v + mha_ref_offset(a->layout, b, j, hk,
			                                     seq_kv, a->kv_heads,
			                                     a->dv);
			acc += s[j] * (double)vr[d];
		}
		o[d] = (float)(acc / sum);
	}
}

void mha_ref_attention(const struct mha_attn *a, const struct mha_args *x)
{
	const float *q = x->q, *k = x->k, *v = x->v, *bias = x->bias;
	const int32_t *kv_len = x->kv_len;
	const size_t seq_q = x->seq_q, seq_kv = x->seq_kv;
	size_t group = a->h / a->kv_heads;
	double *s = malloc((seq_kv ? seq_kv : 1) * sizeof *s);

	if (!s)
		abort();
	for (size_t b = 0; b < x->batch; ++b) {
		size_t nkv = seq_kv;
		if ((a->mask & MHA_MASK_PADDING) && kv_len[b] >= 0 &&
		    (size_t)kv_len[b] < nkv)
			nkv = (size_t)kv_len[b];
		if ((a->mask & MHA_MASK_PADDING) && kv_len[b] < 0)
			nkv = 0;
		for (size_t i = 0; i < seq_q; ++i) {
			size_t lo;
			size_t end = mha_ref_visible(a, i, seq_q, seq_kv, &lo);
			if (end > nkv)
				end = nkv;
			for (size_t hh = 0; hh < a->h; ++hh) {
				const float *qr = q + mha_ref_offset(
					a->layout, b, i, hh, seq_q, a->h, a->dk);
				float *o = x->out + mha_ref_offset(
					a->layout, b, i, hh, seq_q, a->h, a->dv);
				float *w = x->weights ? x->weights + ((b * a->h + hh) *
					seq_q + i) * seq_kv : NULL;
				ref_row(a, qr, k, v, o, w, b, i, hh / group, seq_kv,
				        lo, end,
				        (a->mask & MHA_MASK_BIAS) ? bias : NULL, s);
			}
		}
	}
	free(s);
}
