/* The reference attention: every mask, layout and head grouping, in double. */
#include "mha_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Tensor t's head dim and heads. */
static size_t dim_of(const struct mha_attn *a, enum mha_tensor t)
{
	return t == MHA_TENSOR_Q || t == MHA_TENSOR_K ? a->dk : a->dv;
}

static size_t heads_of(const struct mha_attn *a, enum mha_tensor t)
{
	return t == MHA_TENSOR_Q || t == MHA_TENSOR_OUT ? a->h : a->kv_heads;
}

/* Whether a->packed holds tensor t. */
static int packs(const struct mha_attn *a, enum mha_tensor t)
{
	return (a->packed == MHA_PACKED_QKV && t != MHA_TENSOR_OUT) ||
	       (a->packed == MHA_PACKED_KV &&
	        (t == MHA_TENSOR_K || t == MHA_TENSOR_V));
}

size_t mha_ref_pitch(const struct mha_attn *a, enum mha_tensor t)
{
	if (!packs(a, t))
		return heads_of(a, t) * dim_of(a, t);
	if (a->packed == MHA_PACKED_QKV)
		return (a->h + a->kv_heads) * a->dk + a->kv_heads * a->dv;
	return a->kv_heads * (a->dk + a->dv);
}

size_t mha_ref_base(const struct mha_attn *a, enum mha_tensor t)
{
	size_t at = 0;

	if (!packs(a, t))
		return 0;
	if (a->packed == MHA_PACKED_QKV && t != MHA_TENSOR_Q)
		at += a->h * a->dk; /* past the query heads */
	if (t == MHA_TENSOR_V)
		at += a->kv_heads * a->dk; /* past the key heads */
	return at;
}

size_t mha_ref_offset(const struct mha_attn *a, enum mha_tensor t,
                      size_t batch, size_t seq, size_t b, size_t s,
                      size_t head)
{
	const size_t d = dim_of(a, t), pitch = mha_ref_pitch(a, t);

	if (a->layout == MHA_LAYOUT_BHSD)
		return ((b * heads_of(a, t) + head) * seq + s) * d;
	if (a->layout == MHA_LAYOUT_SBHD)
		return (s * batch + b) * pitch + head * d;
	return (b * seq + s) * pitch + head * d;
}

size_t mha_ref_visible(const struct mha_attn *a, size_t i, size_t seq_q,
                       size_t seq_kv, size_t *first)
{
	/* positions as signed numbers: row i lies at i + shift on the keys'
	 * scale (shift = seq_kv - seq_q bottom-right, 0 top-left) */
	const long long kv = (long long)seq_kv;
	const long long p = (long long)i + ((a->mask & MHA_MASK_CAUSAL) &&
	                    a->align == MHA_ALIGN_TOP_LEFT ? 0
	                    : kv - (long long)seq_q);
	long long end = kv, lo = 0; /* keys [lo, end) are visible */

	if (a->mask & MHA_MASK_CAUSAL)
		end = p + 1 < kv ? p + 1 : kv;
	if (a->window) {
		/* N keys back: from row i's own position with causal, from the
		 * last key without */
		lo = ((a->mask & MHA_MASK_CAUSAL) ? p + 1 : kv) - (long long)a->window;
	}
	if (a->window_sides & MHA_WINDOW_LEFT)
		lo = p - (long long)a->window_left;
	if ((a->window_sides & MHA_WINDOW_RIGHT) &&
	    p + (long long)a->window_right + 1 < end)
		end = p + (long long)a->window_right + 1;
	if (end < 0)
		end = 0;
	if (lo < 0)
		lo = 0;
	if (first)
		*first = (size_t)lo;
	return (size_t)end;
}

double mha_ref_slope(const struct mha_attn *a, const struct mha_args *x,
                     size_t head)
{
	if (a->alibi == MHA_ALIBI_SLOPES)
		return x->alibi_slopes[head];
	if (a->alibi == MHA_ALIBI_MAX_BIAS) {
		/* ggml's rule: n the largest power of two up to h; in double,
		 * rounded to float as the generator rounds it */
		size_t n = 1;
		while (n * 2 <= a->h)
			n *= 2;
		double m0 = pow(2.0, -a->max_bias / (double)n);
		double m1 = pow(2.0, -(a->max_bias / 2.0) / (double)n);
		return (float)(head < n ? pow(m0, (double)(head + 1))
		                        : pow(m1, (double)(2 * (head - n) + 1)));
	}
	return 0.0;
}

size_t mha_ref_plane(const struct mha_attn *a, size_t b, size_t head,
                     size_t seq_q, size_t seq_kv)
{
	const size_t hb = (a->mask_dims & MHA_DIMS_BATCH) ? b : 0;
	const size_t hd = (a->mask_dims & MHA_DIMS_HEAD) ? head : 0;
	const size_t nh = (a->mask_dims & MHA_DIMS_HEAD) ? a->h : 1;

	return (hb * nh + hd) * seq_q * seq_kv;
}

int mha_ref_hidden(const struct mha_attn *a, const struct mha_args *x,
                   size_t b, size_t head, size_t i, size_t j)
{
	const size_t at = mha_ref_plane(a, b, head, x->seq_q, x->seq_kv) +
	                  i * x->seq_kv + j;

	return ((a->mask & MHA_MASK_BOOL) && !x->bool_mask[at]) ||
	       ((a->mask & MHA_MASK_KEYS) && !x->key_mask[b * x->seq_kv + j]) ||
	       ((a->mask & MHA_MASK_BIAS) && x->bias[at] == -INFINITY);
}

/* Sequence b of a call: its queries nq and keys nkv, where its rows lie
 * (item bb of buffers of batch items of tq query and tk key rows, its
 * queries from row q0, its keys from row k0: with --varlen packed, item 0
 * of [total_q] and [total_k] rows, else item b from row 0) and the shift
 * of its diagonal. */
struct seq {
	size_t b, nq, nkv;
	size_t batch, bb, tq, tk, q0, k0;
	double shift;
};

/* One query row i of head hh of sequence sq, keys [lo, end): scores in
 * double, max-subtracted softmax, weighted sum; with w (a row of seq_kv
 * floats) also the weights, 0 where masked.  s: seq_kv doubles of scratch. */
static void ref_row(const struct mha_attn *a, const struct mha_args *x,
                    const struct seq *sq, size_t i, size_t hh, size_t lo,
                    size_t end, double *s)
{
	const size_t seq_q = x->seq_q, seq_kv = x->seq_kv, b = sq->b;
	const size_t hk = hh / (a->h / a->kv_heads);
	/* q and out of a->dtype: the row's first element */
	const size_t qr = mha_ref_offset(a, MHA_TENSOR_Q, sq->batch, sq->tq,
	                                 sq->bb, sq->q0 + i, hh);
	const size_t o = mha_ref_offset(a, MHA_TENSOR_OUT, sq->batch, sq->tq,
	                                sq->bb, sq->q0 + i, hh);
	float *w = x->weights ? x->weights + ((b * a->h + hh) * seq_q + i) *
	                        seq_kv : NULL;
	const float *bias = (a->mask & MHA_MASK_BIAS) ? x->bias +
		mha_ref_plane(a, b, hh, seq_q, seq_kv) : NULL;
	/* ALiBi's row position: i on the causal diagonal's scale */
	const double shift = sq->shift;
	const double slope = mha_ref_slope(a, x, hh);
	/* lse [batch][h][seq_q], or with --varlen packed [h][total_q] */
	float *lse = !x->lse ? NULL : a->varlen == MHA_VARLEN_PACKED
	             ? x->lse + hh * sq->tq + sq->q0 + i
	             : x->lse + (b * a->h + hh) * seq_q + i;
	double mx = -INFINITY, sum = 0.0;

	for (size_t j = lo; j < end; ++j) {
		const size_t kr = mha_ref_offset(a, MHA_TENSOR_K, sq->batch, sq->tk,
		                                 sq->bb, sq->k0 + j, hk);
		double acc = 0.0;
		for (size_t d = 0; d < a->dk; ++d)
			acc += mha_ref_elem(a->dtype, x->q, qr + d) *
			       mha_ref_kv(a, x->k, kr + d);
		acc *= a->scale;
		if (a->softcap > 0.0)
			acc = a->softcap * tanh(acc / a->softcap);
		if (a->alibi)
			acc -= slope * fabs((double)i + shift - (double)j);
		if (bias)
			acc += (double)bias[i * seq_kv + j];
		if (((a->mask & (MHA_MASK_BOOL | MHA_MASK_KEYS)) &&
		     mha_ref_hidden(a, x, b, hh, i, j)))
			acc = -INFINITY;
		s[j] = acc;
		if (acc > mx)
			mx = acc;
	}
	for (size_t d = 0; d < a->dv; ++d)
		mha_ref_put(a->dtype, x->out, o + d, 0.0f);
	for (size_t j = 0; w && j < seq_kv; ++j)
		w[j] = 0.0f;
	if (lse) /* no key: the sink's logit alone, or -inf */
		*lse = a->sinks ? x->sinks[hh] : -INFINITY;
	if (end <= lo || mx == -INFINITY)
		return; /* every key masked: zeros */
	if (a->sinks) {
		/* the sink's logit: in the denominator, with no value */
		double sink = x->sinks[hh];
		if (sink > mx)
			mx = sink;
		sum = exp(sink - mx);
	}
	for (size_t j = lo; j < end; ++j) {
		s[j] = exp(s[j] - mx);
		sum += s[j];
	}
	if (lse)
		*lse = (float)(mx + log(sum));
	for (size_t j = lo; w && j < end; ++j)
		w[j] = (float)(s[j] / sum);
	for (size_t d = 0; d < a->dv; ++d) {
		double acc = 0.0;
		for (size_t j = lo; j < end; ++j) {
			const size_t vr = mha_ref_offset(a, MHA_TENSOR_V, sq->batch,
			                                 sq->tk, sq->bb, sq->k0 + j,
			                                 hk);
			acc += s[j] * mha_ref_kv(a, x->v, vr + d);
		}
		mha_ref_put(a->dtype, x->out, o + d, (float)(acc / sum));
	}
}

float mha_f16_to_float(uint16_t h)
{
	const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	uint32_t u;
	float f;

	if (e == 0x1f) /* inf, NaN (its payload in the high fraction bits) */
		u = sign | 0x7f800000u | m << 13;
	else if (e) /* normal: rebias the exponent, 15 -> 127 */
		u = sign | (e + 112) << 23 | m << 13;
	else { /* zero and subnormals: m * 2^-24, exact in float */
		f = (float)m * 0x1p-24f;
		memcpy(&u, &f, sizeof u);
		u |= sign;
	}
	memcpy(&f, &u, sizeof f);
	return f;
}


float mha_bf16_to_float(uint16_t h)
{
	const uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}


double mha_ref_kv(const struct mha_attn *a, const void *p, size_t i)
{
	return mha_ref_elem(a->kv_dtype, p, i);
}

void mha_ref_put(int dtype, void *p, size_t i, float f)
{
	if (dtype == MHA_DTYPE_F32) {
		((float *)p)[i] = f;
		return;
	}
	((uint16_t *)p)[i] = dtype == MHA_DTYPE_F16 ? mha_f16_from_float(f)
	                                            : mha_bf16_from_float(f);
}

double mha_ref_elem(int dtype, const void *p, size_t i)
{
	switch (dtype) {
	case MHA_DTYPE_F16:
		return mha_f16_to_float(((const uint16_t *)p)[i]);
	case MHA_DTYPE_BF16:
		return mha_bf16_to_float(((const uint16_t *)p)[i]);
	case MHA_DTYPE_Q8: {
		const struct mha_q8_0 *b = (const struct mha_q8_0 *)p + i / 32;
		return (double)mha_f16_to_float(b->d) * b->qs[i % 32];
	}
	default:
		return ((const float *)p)[i];
	}
}

size_t mha_kv_bytes(int dtype, size_t n)
{
	switch (dtype) {
	case MHA_DTYPE_F16:
	case MHA_DTYPE_BF16:
		return 2 * n;
	case MHA_DTYPE_Q8:
		return n / 32 * sizeof(struct mha_q8_0);
	default:
		return 4 * n;
	}
}

const void *mha_kv_at(int dtype, const void *p, size_t n)
{
	return (const char *)p + mha_kv_bytes(dtype, n);
}

void mha_kv_store(int dtype, const float *x, void *dst, size_t n)
{
	if (dtype == MHA_DTYPE_Q8) {
		for (size_t b = 0; b < n / 32; ++b) {
			struct mha_q8_0 q;
			float v[32];

			memcpy(v, (const char *)x + 128 * b, sizeof v);
			mha_q8_from_floats(v, &q);
			memcpy((char *)dst + sizeof q * b, &q, sizeof q);
		}
		return;
	}
	if (dtype == MHA_DTYPE_F32) {
		memmove(dst, x, 4 * n);
		return;
	}
	for (size_t i = 0; i < n; ++i) {
		float f;
		uint16_t u;

		memcpy(&f, (const char *)x + 4 * i, sizeof f);
		u = dtype == MHA_DTYPE_F16 ? mha_f16_from_float(f)
		                           : mha_bf16_from_float(f);
		memcpy((char *)dst + 2 * i, &u, sizeof u);
	}
}

void mha_kv_store_back(int dtype, float *x, void *dst, size_t n)
{
	const struct mha_attn a = {.kv_dtype = dtype};

	mha_kv_store(dtype, x, dst, n);
	for (size_t i = 0; i < n; ++i)
		x[i] = (float)mha_ref_kv(&a, dst, i);
}

/* A sequence's length n (--varlen) within the buffers' cap. */
static size_t clip(int32_t n, size_t cap)
{
	return n <= 0 ? 0 : (size_t)n < cap ? (size_t)n : cap;
}

void mha_ref_attention(const struct mha_attn *a, const struct mha_args *in)
{
	struct mha_args xp = *in;
	const struct mha_args *x = &xp;
	const int32_t *kv_len = x->kv_len;
	size_t seq_q, seq_kv;
	double *s;

	/* packed inputs: k and v where the kernel finds them */
	if (a->packed == MHA_PACKED_QKV) {
		xp.seq_kv = xp.seq_q;
		xp.k = mha_kv_at(a->dtype, xp.q, mha_ref_base(a, MHA_TENSOR_K));
		xp.v = mha_kv_at(a->dtype, xp.q, mha_ref_base(a, MHA_TENSOR_V));
	} else if (a->packed == MHA_PACKED_KV)
		xp.v = mha_kv_at(a->kv_dtype, xp.k, mha_ref_base(a, MHA_TENSOR_V));
	seq_q = x->seq_q;
	seq_kv = x->seq_kv;
	s = malloc((seq_kv ? seq_kv : 1) * sizeof *s);
	if (!s)
		abort();
	for (size_t b = 0; b < x->batch; ++b) {
		struct seq sq = {b, seq_q, seq_kv, x->batch, b, seq_q, seq_kv,
		                 0, 0, 0.0};
		size_t nkv = seq_kv;
		if ((a->mask & MHA_MASK_PADDING) && kv_len[b] >= 0 &&
		    (size_t)kv_len[b] < nkv)
			nkv = (size_t)kv_len[b];
		if ((a->mask & MHA_MASK_PADDING) && kv_len[b] < 0)
			nkv = 0;
		if (a->varlen == MHA_VARLEN_PADDED) {
			sq.nq = x->q_len ? clip(x->q_len[b], seq_q) : seq_q;
			sq.nkv = clip(kv_len[b], seq_kv);
		} else if (a->varlen == MHA_VARLEN_PACKED) {
			sq.nq = clip(x->cu_seqlens_q[b + 1] - x->cu_seqlens_q[b],
			             seq_q);
			sq.nkv = clip(x->cu_seqlens_k[b + 1] - x->cu_seqlens_k[b],
			              seq_kv);
			sq.batch = 1;
			sq.bb = 0;
			sq.tq = (size_t)x->cu_seqlens_q[x->batch];
			sq.tk = (size_t)x->cu_seqlens_k[x->batch];
			sq.q0 = (size_t)x->cu_seqlens_q[b];
			sq.k0 = (size_t)x->cu_seqlens_k[b];
		}
		/* the diagonal: the buffers' lengths, or the sequence's own */
		if (!((a->mask & MHA_MASK_CAUSAL) &&
		      a->align == MHA_ALIGN_TOP_LEFT))
			sq.shift = (double)sq.nkv - (double)sq.nq;
		for (size_t i = 0; i < sq.nq; ++i) {
			size_t lo;
			size_t end = mha_ref_visible(a, i, sq.nq, sq.nkv, &lo);
			if (end > nkv)
				end = nkv;
			for (size_t hh = 0; hh < a->h; ++hh)
				ref_row(a, x, &sq, i, hh, lo, end, s);
		}
	}
	free(s);
}
