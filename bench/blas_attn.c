/* Attention composed from OpenBLAS, the way a user writes it by hand: per
 * head, S = Q K^T * scale with cblas_sgemm (lda/ldb stride through the bshd
 * tensors, so nothing is copied), a plain scalar softmax per row of S, then
 * O = P V with cblas_sgemm writing straight into out.  An additive bias
 * is added to the scores before the softmax, and the boolean and key masks
 * hide theirs (-inf).  This is the baseline
 * the kernels are compared with; it runs on one OpenBLAS thread. */
#include <cblas.h>
#include <math.h>

#include "bench.h"

/* Softmax in place over the visible scores s[lo..end) of a row of n;
 * the other entries become 0.  A row with nothing visible is all zeros. */
static void softmax_row(float *s, size_t n, size_t lo, size_t end)
{
	float m = -INFINITY, sum = 0.0f;

	for (size_t j = lo; j < end; ++j)
		m = s[j] > m ? s[j] : m;
	if (m == -INFINITY)
		lo = end = 0; /* every key masked: zeros */
	for (size_t j = lo; j < end; ++j) {
		s[j] = expf(s[j] - m);
		sum += s[j];
	}
	for (size_t j = lo; j < end; ++j)
		s[j] /= sum;
	for (size_t j = 0; j < lo; ++j)
		s[j] = 0.0f;
	for (size_t j = end; j < n; ++j)
		s[j] = 0.0f;
}

int blas_attention(const struct mha_attn *a, const struct mha_args *x,
                   float *s)
{
	const size_t group = a->h / a->kv_heads;
	const size_t seq_q = x->seq_q, seq_kv = x->seq_kv;
	const int ldq = (int)(a->h * a->dk), ldk = (int)(a->kv_heads * a->dk);
	const int ldv = (int)(a->kv_heads * a->dv), ldo = (int)(a->h * a->dv);
	const unsigned known = MHA_MASK_CAUSAL | MHA_MASK_BIAS | MHA_MASK_BOOL |
	                       MHA_MASK_KEYS;

	if ((a->mask & ~known) || a->layout != MHA_LAYOUT_BSHD || a->window ||
	    a->window_sides)
		return -1;
	for (size_t b = 0; b < x->batch; ++b) {
		const float *qb = (const float *)x->q + b * seq_q * (size_t)ldq;
		const float *kb = (const float *)x->k + b * seq_kv * (size_t)ldk;
		const float *vb = (const float *)x->v + b * seq_kv * (size_t)ldv;
		float *ob = (float *)x->out + b * seq_q * (size_t)ldo;
		const uint8_t *km = (a->mask & MHA_MASK_KEYS) ?
			x->key_mask + b * seq_kv : NULL;
		for (size_t hh = 0; hh < a->h; ++hh) {
			const size_t hk = hh / group;
			const size_t plane = mha_ref_plane(a, b, hh, seq_q, seq_kv);
			const float *bias = (a->mask & MHA_MASK_BIAS) ?
				x->bias + plane : NULL;
			const uint8_t *bm = (a->mask & MHA_MASK_BOOL) ?
				x->bool_mask + plane : NULL;
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
			            (int)seq_q, (int)seq_kv, (int)a->dk,
			            (float)a->scale, qb + hh * a->dk, ldq,
			            kb + hk * a->dk, ldk, 0.0f, s, (int)seq_kv);
			for (size_t i = 0; i < seq_q; ++i) {
				size_t lo, end = mha_ref_visible(a, i, seq_q,
				                                 seq_kv, &lo);
				float *si = s + i * seq_kv;
				if (bias)
					for (size_t j = lo; j < end; ++j)
						si[j] += bias[i * seq_kv + j];
				if (bm)
					for (size_t j = lo; j < end; ++j)
						si[j] = bm[i * seq_kv + j] ? si[j] : -INFINITY;
				if (km)
					for (size_t j = lo; j < end; ++j)
						si[j] = km[j] ? si[j] : -INFINITY;
				softmax_row(si, seq_kv, lo, end);
			}
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
			            (int)seq_q, (int)a->dv, (int)seq_kv, 1.0f, s,
			            (int)seq_kv, vb + hk * a->dv, ldv, 0.0f,
			            ob + hh * a->dv, ldo);
		}
	}
	return 0;
}
