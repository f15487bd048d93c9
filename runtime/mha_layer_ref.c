/* The reference layer: nn.MultiheadAttention's forward in double. */
#include "mha_layer_ref.h"

#include <math.h>
#include <stdlib.h>

#include "mha_ref.h"

/* The row of position s of batch item b in rows of batch items of seq
 * positions, by layout: bshd b * seq + s, sbhd s * batch + b. */
static size_t row_of(const struct mha_layer *l, size_t batch, size_t seq,
                     size_t b, size_t s)
{
	return l->attn.layout == MHA_LAYOUT_SBHD ? s * batch + b : b * seq + s;
}

/* y[r][o] = x[r] . w[o] + bias[o] for n rows of k floats in, e out, all
 * in double (bias NULL: none). */
static void project(double *y, const float *x, size_t n, size_t k,
                    const float *w, const float *bias, size_t e)
{
	for (size_t r = 0; r < n; ++r)
		for (size_t o = 0; o < e; ++o) {
			double s = bias ? bias[o] : 0.0;
			for (size_t c = 0; c < k; ++c)
				s += (double)x[r * k + c] * w[o * k + c];
			y[r * e + o] = s;
		}
}

/* out = o W_o^T + b_o for n rows of E, rounded to float once. */
static void out_project(const struct mha_layer *l,
                        const struct mha_layer_params *p, const double *o,
                        size_t n, float *out)
{
	const size_t E = l->embed;

	for (size_t r = 0; r < n; ++r)
		for (size_t e = 0; e < E; ++e) {
			double y = l->proj_bias ? p->out_proj_bias[e] : 0.0;
			for (size_t c = 0; c < E; ++c)
				y += o[r * E + c] * p->out_proj_weight[e * E + c];
			out[r * E + e] = (float)y;
		}
}

void mha_ref_layer(const struct mha_layer *l, const struct mha_layer_params *p,
                   const struct mha_layer_args *x)
{
	const struct mha_attn *at = &l->attn;
	const size_t E = l->embed, h = at->h, dk = E / h, batch = x->batch;
	/* k and v: kv_heads heads (grouped-query projections), KE floats */
	const size_t KE = at->kv_heads * dk, group = h / at->kv_heads;
	const size_t seq_q = x->seq_q, seq_kv = l->cross ? x->seq_kv : seq_q;
	const size_t tq = batch * seq_q, tkv = batch * seq_kv;
	const int same = l->kdim == E && l->vdim == E;
	const float *wq = same ? p->in_proj_weight : p->q_proj_weight;
	const float *wk = same ? p->in_proj_weight + E * E : p->k_proj_weight;
	const float *wv = same ? p->in_proj_weight + (E + KE) * E : p->v_proj_weight;
	const float *bi = l->proj_bias ? p->in_proj_bias : NULL;
	const struct mha_args m = {.batch = batch, .seq_q = seq_q,
		.seq_kv = seq_kv, .kv_len = x->kv_len, .bias = x->bias,
		.bool_mask = x->bool_mask, .key_mask = x->key_mask};
	double *q = malloc(sizeof *q * (tq * 2 * E + tkv * 2 * KE) + 1);
	double *k = q + tq * E, *v = k + tkv * KE, *o = v + tkv * KE;
	/* add_bias_kv, add_zero_attn: keys after the inputs' every row sees;
	 * each row's weights have wn columns, theirs last */
	const size_t extra = (size_t)l->add_bias_kv + (size_t)l->add_zero_attn;
	const size_t wn = seq_kv + extra;
	double *s = malloc(sizeof *s * (wn + 1));

	double *avg = x->weights ? calloc(tq * wn + 1, sizeof *avg) : NULL;

	if (!q || !s || (x->weights && !avg))
		abort();
	if (x->head_weights)
		for (size_t i = 0; i < tq * h * wn; ++i)
			x->head_weights[i] = 0.0f;
	project(q, x->query, tq, E, wq, bi, E);
	project(k, l->cross ? x->key : x->query, tkv, l->cross ? l->kdim : E,
	        wk, bi ? bi + E : NULL, KE);
	project(v, l->cross ? x->value : x->query, tkv, l->cross ? l->vdim : E,
	        wv, bi ? bi + E + KE : NULL, KE);
	for (size_t b = 0; b < batch; ++b)
		for (size_t hh = 0; hh < h; ++hh)
			for (size_t i = 0; i < seq_q; ++i) {
				const double *qi = q + row_of(l, batch, seq_q, b, i) * E + hh * dk;
				double *oi = o + row_of(l, batch, seq_q, b, i) * E + hh * dk;
				size_t first, n = mha_ref_visible(at, i, seq_q, seq_kv, &first);
				double mx = -INFINITY, sum = 0.0;
				for (size_t j = seq_kv; j < wn; ++j)
					s[j] = -INFINITY;
				if ((at->mask & MHA_MASK_PADDING) && x->kv_len[b] < 0)
					n = 0;
				else if ((at->mask & MHA_MASK_PADDING) &&
				         (size_t)x->kv_len[b] < n)
					n = (size_t)x->kv_len[b];
				for (size_t j = first; j < n; ++j) {
					const double *kj = k + row_of(l, batch, seq_kv, b, j) * KE + hh / group * dk;
					double d = 0.0;
					s[j] = -INFINITY;
					if (mha_ref_hidden(at, &m, b, hh, i, j))
						continue;
					for (size_t c = 0; c < dk; ++c)
						d += qi[c] * kj[c];
					d *= at->scale;
					if (at->mask & MHA_MASK_BIAS)
						d += x->bias[mha_ref_plane(at, b, hh, seq_q, seq_kv) +
						             i * seq_kv + j];
					s[j] = d;
					mx = d > mx ? d : mx;
				}
				if (l->add_bias_kv) {
					/* bias_k, unprojected, a key of every row whatever
					 * its masks (PyTorch pads the masks with a column
					 * that hides nothing) */
					double d = 0.0;
					for (size_t c = 0; c < dk; ++c)
						d += qi[c] * p->bias_k[hh / group * dk + c];
					s[seq_kv] = d * at->scale;
				}
				if (l->add_zero_attn)
					s[wn - 1] = 0.0; /* the zero key */
				for (size_t j = seq_kv; j < wn; ++j)
					mx = s[j] > mx ? s[j] : mx;
				for (size_t c = 0; c < dk; ++c)
					oi[c] = 0.0;
				if (mx == -INFINITY)
					continue; /* no key: zeros, weights 0 */
				for (size_t j = first; j < wn; ++j) {
					/* the values: the inputs', bias_v, the zero one */
					const double *vj;
					double e;
					if (j >= n && j < seq_kv)
						continue; /* past the row's keys */
					e = s[j] == -INFINITY ? 0.0 : exp(s[j] - mx);
					vj = j < n ? v + row_of(l, batch, seq_kv, b, j) * KE + hh / group * dk : NULL;
					sum += e;
					for (size_t c = 0; c < dk; ++c)
						oi[c] += e * (vj ? vj[c] : j == seq_kv && l->add_bias_kv ?
						              (double)p->bias_v[hh / group * dk + c] : 0.0);
				}
				for (size_t c = 0; c < dk; ++c)
					oi[c] /= sum;
				for (size_t j = first; j < wn; ++j) {
					const double wj = (j >= n && j < seq_kv) || s[j] == -INFINITY ? 0.0 : exp(s[j] - mx) / sum;
					if (x->head_weights)
						x->head_weights[((b * h + hh) * seq_q + i) * wn + j] = (float)wj;
					if (avg)
						avg[(b * seq_q + i) * wn + j] += wj / (double)h;
				}
			}
	out_project(l, p, o, tq, x->out);
	if (avg)
		for (size_t i = 0; i < tq * wn; ++i)
			x->weights[i] = (float)avg[i];
	free(avg);
	free(q);
	free(s);
}

void mha_ref_layer_step(const struct mha_layer *l,
                        const struct mha_layer_params *p,
                        const struct mha_layer_args *x, double *new_kv)
{
	const struct mha_attn *at = &l->attn;
	const size_t E = l->embed, h = at->h, dk = E / h, batch = x->batch;
	const size_t KE = at->kv_heads * dk, group = h / at->kv_heads;
	const size_t M = l->kv_cache, sq = x->seq_q, tq = batch * sq;
	const float *bi = l->proj_bias ? p->in_proj_bias : NULL;
	double *q = malloc(sizeof *q * (2 * tq * E) + 1), *o = q + tq * E;
	double *s = malloc(sizeof *s * (M + 1));

	if (!q || !s)
		abort();
	project(q, x->query, tq, E, p->in_proj_weight, bi, E);
	/* k then v: in_proj_weight's (and in_proj_bias's) rows after q's */
	project(new_kv, x->query, tq, E, p->in_proj_weight + E * E,
	        bi ? bi + E : NULL, 2 * KE);
	for (size_t b = 0; b < batch; ++b)
		for (size_t hh = 0; hh < h; ++hh)
			for (size_t i = 0; i < sq; ++i) {
				/* new token i of item b sees positions 0 to
				 * cache_len[b] + i, read as the cache holds them */
				const size_t n = (size_t)x->cache_len[b] + i + 1;
				const double *qi = q + (b * sq + i) * E + hh * dk;
				double *oi = o + (b * sq + i) * E + hh * dk;
				double mx = -INFINITY, sum = 0.0;

				for (size_t j = 0; j < n; ++j) {
					const size_t kj = (b * M + j) * KE + hh / group * dk;
					double d = 0.0;
					for (size_t c = 0; c < dk; ++c)
						d += qi[c] * mha_ref_kv(at, x->k_cache, kj + c);
					s[j] = d * at->scale;
					mx = s[j] > mx ? s[j] : mx;
				}
				for (size_t c = 0; c < dk; ++c)
					oi[c] = 0.0;
				for (size_t j = 0; j < n; ++j) {
					const size_t vj = (b * M + j) * KE + hh / group * dk;
					const double e = exp(s[j] - mx);
					sum += e;
					for (size_t c = 0; c < dk; ++c)
						oi[c] += e * mha_ref_kv(at, x->v_cache, vj + c);
				}
				for (size_t c = 0; c < dk; ++c)
					oi[c] /= sum;
			}
	out_project(l, p, o, tq, x->out);
	free(q);
	free(s);
}
