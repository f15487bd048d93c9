/* Kernel checking shared by the Criterion tests and the AArch64 driver: the
 * case matrix, inputs that break naive kernels, comparison with the reference. */
#include "check.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/mha_buf.h"
#include "../runtime/mha_ref.h"

/* Sequence lengths around the vector widths (4, 8) and tiles (64). */
static const size_t lengths[] = {1, 2, 7, 8, 9, 31, 64, 65, 130};
#define NLEN (sizeof lengths / sizeof lengths[0])

float *check_alloc(size_t n)
{
#ifdef CHECK_ASAN
	return mha_alloc(n);
#else
	return mha_fenced_alloc(n);
#endif
}

void check_free(float *p, size_t n)
{
#ifdef CHECK_ASAN
	(void)n;
	mha_free(p);
#else
	mha_fenced_free(p, n);
#endif
}

int check_intact(const float *p)
{
#ifdef CHECK_ASAN
	(void)p;
	return 1;
#else
	return mha_fenced_intact(p);
#endif
}

/* The kernel's output: poisoned, guarded on both sides. */
static int out_init(struct mha_guarded *g, size_t n)
{
#ifdef CHECK_ASAN
	return mha_guarded_init(g, n);
#else
	return mha_guarded_init_fenced(g, n);
#endif
}

/* n bytes (a boolean or key mask) ending where a buffer of check_alloc
 * ends, so that a read past them faults. */
struct bytes {
	uint8_t *p;
	float *base;
	size_t n;
};

static int bytes_init(struct bytes *m, size_t n)
{
	const size_t nf = (n + 3) / 4;

	/* even when empty, a pointer like the bias's (never NULL) */
	m->base = check_alloc(nf);
	if (!m->base)
		return -1;
	m->p = (uint8_t *)m->base + 4 * nf - n;
	m->n = n;
	return 0;
}

static void bytes_free(struct bytes *m)
{
	if (m->base)
		check_free(m->base, (m->n + 3) / 4);
}

/* n keys' or values' elements stored as a --kv-dtype (f16 or bf16 bits,
 * q8_0 blocks) ending where a buffer of check_alloc ends, so that a read
 * past them faults. */
struct half {
	void *p;
	float *base;
	size_t nf;
};

static int half_init(struct half *h, int dtype, size_t n)
{
	const size_t bytes = mha_kv_bytes(dtype, n);

	h->nf = (bytes + 3) / 4;
	h->base = check_alloc(h->nf);
	if (!h->base)
		return -1;
	h->p = (char *)h->base + 4 * h->nf - bytes;
	return 0;
}

static void half_free(struct half *h)
{
	if (h->base)
		check_free(h->base, h->nf);
}

/* --dtype f16 or bf16: the kernel writes out's n 16-bit elements into the
 * second half of the bytes of g's n floats (so the fence after them still
 * catches a write past the end), first set to a signalling NaN no
 * conversion produces (conversions quiet every NaN); out16_read checks the
 * first half still holds the guard payload, then turns the elements into
 * g's floats: the poison where still unwritten, else the value. */
static uint16_t poison16(int dtype)
{
	return dtype == MHA_DTYPE_F16 ? 0x7d5au : 0x7f9au;
}

static void *out16(struct mha_guarded *g, int dtype)
{
	uint16_t *o = (uint16_t *)(void *)((char *)g->data + 2 * g->n);

	for (size_t i = 0; i < g->n; ++i)
		o[i] = poison16(dtype);
	return o;
}

static int out16_read(struct mha_guarded *g, int dtype)
{
	const uint16_t *o = (const uint16_t *)(const void *)((char *)g->data + 2 * g->n);
	uint16_t *t = malloc(g->n * sizeof *t + 1);
	int intact = 1;

	if (!t)
		return -1;
	for (size_t i = 0; i < g->n / 2; ++i)
		intact &= mha_is_poison(g->data[i]);
	memcpy(t, o, g->n * sizeof *t);
	mha_guarded_poison(g);
	for (size_t i = 0; i < g->n; ++i)
		if (t[i] != poison16(dtype))
			g->data[i] = (float)mha_ref_elem(dtype, t, i);
	free(t);
	return intact ? 0 : -1;
}

/* x rounded to dtype (f16, bf16) and read back */
static float round16(int dtype, double x)
{
	uint16_t u;

	mha_ref_put(dtype, &u, 0, (float)x);
	return (float)mha_ref_elem(dtype, &u, 0);
}


uint64_t check_rng_next(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

float check_rng_unit(uint64_t *s)
{
	return (float)((double)(check_rng_next(s) >> 11) * 0x1p-52 - 1.0);
}

size_t check_cases(const struct mha_kernel *k, size_t index,
                   struct check_case *cases, size_t max)
{
	size_t n = 0;

	if (k->seq_q) {
		/* fixed lengths: every padding and data kind, batches 1 and 3 */
		for (int pad = 0; pad < 3 && n < max; ++pad)
			for (int data = 0; data < 2 && n < max; ++data) {
				if (!(k->a.mask & MHA_MASK_PADDING) && !k->a.varlen &&
				    pad)
					continue;
				cases[n] = (struct check_case){
					k->a.varlen && pad ? 6 : pad ? 3 : 1 + (size_t)data * 2,
					k->seq_q,
					k->seq_kv, (enum check_pad)pad,
					(enum check_data)data, index * 131 + n, 0};
				++n;
			}
		cases[0].via_args = 1;
		return n;
	}
	/* dynamic: walk the length pairs with a stride that differs per
	 * kernel, so the set of kernels covers the whole matrix; include
	 * seq_q != seq_kv, both orders, and seq_kv = 0 (a fixed seq_kv, given
	 * without seq_q, stays fixed) */
	for (size_t t = 0; t < 8 && n < max; ++t) {
		size_t a = (index * 3 + t * 2) % NLEN;
		size_t b = (index * 5 + t * 7 + 1) % NLEN;
		cases[n++] = (struct check_case){
			k->a.varlen ? 5 + t % 3 : 1 + t % 3, lengths[a],
			k->seq_kv ? k->seq_kv : lengths[b],
			(k->a.mask & MHA_MASK_PADDING) || k->a.varlen ?
			(enum check_pad)(t % 3) : PAD_FULL,
			(enum check_data)(t % 2), index * 131 + t, 0};
	}
	if (n < max)
		cases[n++] = (struct check_case){2, lengths[index % NLEN], k->seq_kv,
		                                 PAD_FULL, DATA_UNIFORM, index, 0};
	if (n < max)
		cases[n++] = (struct check_case){k->a.varlen ? 5 : 1, 130,
		                                 k->seq_kv ? k->seq_kv : 130,
		                                 (k->a.mask & MHA_MASK_PADDING) || k->a.varlen ? PAD_MIXED : PAD_FULL,
		                                 DATA_HOT, index + 7, 0};
	/* rows counted at run time past a default query block (512 rows on
	 * AVX-512, 384 on AVX2, 64 elsewhere): a last block of up to 3/2 of
	 * it takes every row left (540: one block on both; 1100: 512 and 588
	 * on AVX-512, 384, 384 and 332 on AVX2); narrow heads only, to keep
	 * the reference's work small */
	if (n < max && k->a.h * (k->a.dk + k->a.dv) <= 128)
		cases[n++] = (struct check_case){k->a.varlen ? 5 : 1, 540,
		                                 k->seq_kv ? k->seq_kv : 540,
		                                 (k->a.mask & MHA_MASK_PADDING) || k->a.varlen ? PAD_MIXED : PAD_FULL,
		                                 DATA_UNIFORM, index + 11, 0};
	if (n < max && k->a.h * (k->a.dk + k->a.dv) <= 64)
		cases[n++] = (struct check_case){k->a.varlen ? 6 : 2, 1100,
		                                 k->seq_kv ? k->seq_kv : 61,
		                                 (k->a.mask & MHA_MASK_PADDING) || k->a.varlen ? PAD_MIXED : PAD_FULL,
		                                 DATA_UNIFORM, index + 13, 0};
	if (n > 0)
		cases[0].via_args = 1;
	/* packed q, k and v: the keys are the queries' positions */
	for (size_t i = 0; k->a.packed == MHA_PACKED_QKV && i < n; ++i)
		cases[i].seq_kv = cases[i].seq_q;
	return n;
}

/* Fill a tensor; DATA_HOT makes q and k rows nearly parallel with
 * |q.k| * scale close to 100, so raw exp(score) overflows. */
static void fill(float *x, size_t n, enum check_data data, float hot,
                 uint64_t *s)
{
	for (size_t i = 0; i < n; ++i) {
		if (data == DATA_HOT)
			x[i] = hot * (1.0f + 0.05f * check_rng_unit(s));
		else
			x[i] = check_rng_unit(s);
	}
}

/* The largest |x| of tensor t at p (batch items of seq rows), read row by
 * row: in a packed buffer, its own heads only. */
static double tensor_max(const struct mha_attn *a, enum mha_tensor t,
                         const float *p, size_t batch, size_t seq)
{
	const size_t heads = t == MHA_TENSOR_Q ? a->h : a->kv_heads;
	const size_t d = t == MHA_TENSOR_V ? a->dv : a->dk;
	double m = 0.0;

	for (size_t b = 0; b < batch; ++b)
		for (size_t s = 0; s < seq; ++s)
			for (size_t h = 0; h < heads; ++h) {
				const float *r = p + mha_ref_offset(a, t, batch, seq, b, s, h);
				for (size_t c = 0; c < d; ++c)
					m = fmax(m, fabs(r[c]));
			}
	return m;
}

/* Sequence b's queries and keys with --varlen (else seq_q and seq_kv):
 * q_len (NULL: seq_q) and kv_len, or the differences of cu_seqlens_q and
 * cu_seqlens_k, at most the buffers' lengths. */
static size_t seq_clip(int32_t n, size_t cap)
{
	return n <= 0 ? 0 : (size_t)n < cap ? (size_t)n : cap;
}

static void seq_lengths(const struct mha_attn *a, const struct mha_args *x,
                        size_t b, size_t *nq, size_t *nkv)
{
	*nq = x->seq_q;
	*nkv = x->seq_kv;
	if (a->varlen == MHA_VARLEN_PADDED) {
		*nq = x->q_len ? seq_clip(x->q_len[b], x->seq_q) : x->seq_q;
		*nkv = seq_clip(x->kv_len[b], x->seq_kv);
	} else if (a->varlen == MHA_VARLEN_PACKED) {
		*nq = seq_clip(x->cu_seqlens_q[b + 1] - x->cu_seqlens_q[b], x->seq_q);
		*nkv = seq_clip(x->cu_seqlens_k[b + 1] - x->cu_seqlens_k[b],
		                x->seq_kv);
	}
}

/* Offset of row i of head hh of sequence b in out. */
static size_t out_row(const struct mha_attn *a, const struct mha_args *x,
                      size_t b, size_t i, size_t hh)
{
	if (a->varlen == MHA_VARLEN_PACKED)
		return mha_ref_offset(a, MHA_TENSOR_OUT, 1,
		                      (size_t)x->cu_seqlens_q[x->batch], 0,
		                      (size_t)x->cu_seqlens_q[b] + i, hh);
	return mha_ref_offset(a, MHA_TENSOR_OUT, x->batch, x->seq_q, b, i, hh);
}

/* Compare a kernel's output with the reference's: every element written,
 * none NaN, nothing written outside, within tol; where the reference left
 * its poison (rows past a sequence's queries, --varlen), the output's
 * poison untouched.  what names the function. */
static int check_out(const char *what, const struct check_case *c,
                     const struct mha_guarded *out, const float *ref,
                     const float *hi, double tol, char *msg, size_t msglen)
{
	double err = 0.0;
	size_t worst = 0;

	if (!mha_guarded_intact(out)) {
		snprintf(msg, msglen, "%swrote outside its output", what);
		return -1;
	}
	for (size_t i = 0; i < out->n; ++i) {
		double e;
		if (mha_is_poison(ref[i])) {
			if (mha_is_poison(out->data[i]))
				continue;
			snprintf(msg, msglen, "%soutput %zu lies past its sequence's "
			         "queries but was written (%.9g)", what, i,
			         (double)out->data[i]);
			return -1;
		}
		if (mha_is_poison(out->data[i]) || !isfinite(out->data[i])) {
			snprintf(msg, msglen, "%soutput %zu %s", what, i,
			         mha_is_poison(out->data[i]) ? "never written"
			                                     : "is not finite");
			return -1;
		}
		/* with hi, ref[i] and hi[i] bound the output's range */
		e = !hi ? fabs((double)out->data[i] - (double)ref[i])
		    : out->data[i] < ref[i] ? (double)ref[i] - out->data[i]
		    : out->data[i] > hi[i] ? (double)out->data[i] - hi[i] : 0.0;
		if (e > err) {
			err = e;
			worst = i;
		}
	}
	if (err > (hi ? 0.0 : tol)) {
		snprintf(msg, msglen,
		         "%sbatch %zu seq_q %zu seq_kv %zu pad %d data %d: "
		         "|out - ref| = %.3g > tol %.3g at %zu (out %.9g, ref %.9g%s)",
		         what, c->batch, c->seq_q, c->seq_kv, (int)c->pad,
		         (int)c->data, err, tol, worst, (double)out->data[worst],
		         (double)ref[worst], hi ? " or above, rounded" : "");
		return -1;
	}
	return 0;
}

/* Rows that see no key (padding length 0, causal rows before the first
 * key, a bias row of -inf, a boolean or key mask of zeros) are exactly zero
 * in out.  x holds the reference's inputs. */
static int check_zero_rows(const char *what, const struct mha_kernel *k,
                           const struct mha_attn *a,
                           const struct check_case *c, const float *out,
                           const struct mha_args *x, char *msg, size_t msglen)
{
	for (size_t b = 0; b < c->batch; ++b) {
		size_t nq, nkv;
		seq_lengths(a, x, b, &nq, &nkv);
		for (size_t i = 0; i < nq; ++i) {
			size_t first = 0;
			size_t n = mha_ref_visible(a, i, nq, nkv, &first);
			if ((k->a.mask & MHA_MASK_PADDING) && (size_t)x->kv_len[b] < n)
				n = (size_t)x->kv_len[b];
			for (size_t hh = 0; hh < k->a.h; ++hh) {
				size_t o = out_row(a, x, b, i, hh);
				size_t j = first;
				while (j < n && mha_ref_hidden(a, x, b, hh, i, j))
					++j;
				if (j < n)
					continue; /* a key is seen */
				for (size_t d = 0; d < k->a.dv; ++d)
					if (out[o + d] != 0.0f) {
						snprintf(msg, msglen, "%sbatch %zu row %zu head %zu "
						         "sees no key but column %zu is %.9g", what,
						         b, i, hh, d, (double)out[o + d]);
						return -1;
					}
			}
		}
	}
	return 0;
}

/* Compare the weights [batch][h][seq_q][seq_kv] of NAME_weights with the
 * reference's: every element written and not NaN, nothing written outside,
 * exactly 0 at every key the masks hide (decided here from the spec, not
 * from either result), within tol of the reference elsewhere, and every row
 * with a visible key summing to 1 within the rounding of a float sum. */
static int check_weights(const struct mha_kernel *k, const struct mha_attn *a,
                         const struct check_case *c,
                         const struct mha_guarded *w, const float *ref,
                         const struct mha_args *in, double tol, char *msg,
                         size_t msglen)
{
	/* sum of n weights p_j * (1/l), l their float sum: each of l's n
	 * additions, the reciprocal and each product round once, so the total
	 * is 1 within (n + 2) ulp of 1; twice that is allowed */
	const double sum_tol = (double)(c->seq_kv + 4) * 0x1p-23;

	if (!mha_guarded_intact(w)) {
		snprintf(msg, msglen, "%s_weights wrote outside its weights", k->name);
		return -1;
	}
	for (size_t b = 0; b < c->batch; ++b)
		for (size_t hh = 0; hh < k->a.h; ++hh)
			for (size_t i = 0; i < c->seq_q; ++i) {
				size_t row = ((b * k->a.h + hh) * c->seq_q + i) * c->seq_kv;
				size_t sq, skv, lo, end;
				size_t nkv = c->seq_kv;
				double sum = 0.0;
				int seen = 0;
				seq_lengths(a, in, b, &sq, &skv);
				if (i >= sq) {
					/* past the sequence's queries: left as it was */
					for (size_t j = 0; j < c->seq_kv; ++j)
						if (!mha_is_poison(w->data[row + j])) {
							snprintf(msg, msglen, "%s_weights: row [%zu][%zu]"
							         "[%zu] lies past its sequence's queries "
							         "but was written", k->name, b, hh, i);
							return -1;
						}
					continue;
				}
				end = mha_ref_visible(a, i, sq, skv, &lo);
				if (a->varlen)
					nkv = skv;
				if ((k->a.mask & MHA_MASK_PADDING) && in->kv_len[b] <= 0)
					nkv = 0;
				else if ((k->a.mask & MHA_MASK_PADDING) &&
				         (size_t)in->kv_len[b] < nkv)
					nkv = (size_t)in->kv_len[b];
				if (end > nkv)
					end = nkv;
				for (size_t j = 0; j < c->seq_kv; ++j) {
					float x = w->data[row + j];
					int hidden = j < lo || j >= end ||
						mha_ref_hidden(a, in, b, hh, i, j);
					const char *bad = NULL;
					if (mha_is_poison(x))
						bad = "never written";
					else if (isnan(x))
						bad = "is NaN";
					else if (hidden && x != 0.0f)
						bad = "is not 0 at a masked key";
					else if (fabs((double)x - (double)ref[row + j]) > tol)
						bad = "differs from the reference";
					if (bad) {
						snprintf(msg, msglen,
						         "%s_weights: batch %zu seq_q %zu seq_kv %zu "
						         "pad %d data %d: weight [%zu][%zu][%zu][%zu] "
						         "%s (%.9g, ref %.9g, tol %.3g)", k->name,
						         c->batch, c->seq_q, c->seq_kv, (int)c->pad,
						         (int)c->data, b, hh, i, j, bad, (double)x,
						         (double)ref[row + j], tol);
						return -1;
					}
					sum += x;
					seen |= !hidden;
				}
				/* a sink takes its share: the keys' weights sum to less */
				if (seen && (a->sinks ? sum > 1.0 + sum_tol
				                      : fabs(sum - 1.0) > sum_tol)) {
					snprintf(msg, msglen,
					         "%s_weights: batch %zu seq_q %zu seq_kv %zu: "
					         "weights of row [%zu][%zu][%zu] sum to %.9g",
					         k->name, c->batch, c->seq_q, c->seq_kv, b, hh,
					         i, sum);
					return -1;
				}
			}
	return 0;
}

/* A --lse kernel's log-sum-exp against the reference's: every element
 * written, -inf exactly where the reference's is (a row with no visible key
 * and no finite sink), else within tol plus a few ulp of its size (the
 * float log of a sum near the scores' size).  what names the call. */
static int check_lse(const char *what, const struct mha_kernel *k,
                     const struct check_case *c, const struct mha_guarded *g,
                     const float *ref, double tol, char *msg, size_t msglen)
{
	const size_t n = g->n;

	if (!mha_guarded_intact(g)) {
		snprintf(msg, msglen, "%slse: written out of bounds", what);
		return -1;
	}
	for (size_t r = 0; r < n; ++r) {
		const float x = g->data[r];
		const char *bad = NULL;
		if (mha_is_poison(ref[r]) ? !mha_is_poison(x) : 0)
			bad = "lies past its sequence's queries but was written";
		else if (mha_is_poison(ref[r]))
			continue;
		else if (mha_is_poison(x))
			bad = "never written";
		else if (isnan(x))
			bad = "is NaN";
		else if (isinf(ref[r]) || isinf(x) ? x != ref[r] :
		         fabs((double)x - (double)ref[r]) >
		         tol + 0x1p-21 * fabs((double)ref[r]))
			bad = "differs from the reference";
		if (bad) {
			snprintf(msg, msglen,
			         "%slse: batch %zu seq_q %zu seq_kv %zu pad %d "
			         "data %d: lse [%zu][%zu][%zu] %s (%.9g, ref %.9g, "
			         "tol %.3g)", what, c->batch, c->seq_q, c->seq_kv,
			         (int)c->pad, (int)c->data, r / (k->a.h * c->seq_q),
			         r / c->seq_q % k->a.h, r % c->seq_q, bad, (double)x,
			         (double)ref[r], tol);
			return -1;
		}
	}
	return 0;
}

/* The lengths of sequence b of a --varlen case (PAD_FULL: each full), in
 * turn: full; no query; more queries than keys (bottom-right, the early
 * rows see no key); no key; mixed. */
static void varlen_lengths(const struct check_case *c, size_t b, int32_t *nq,
                           int32_t *nkv)
{
	const size_t sq = c->seq_q, skv = c->seq_kv;
	size_t q = sq, kv = skv;

	switch (c->pad == PAD_FULL ? 0 : (b + c->seed) % 5) {
	case 0: break;
	case 1: q = 0; kv = skv / 2; break;
	case 2: kv = sq / 2 < skv ? sq / 2 : skv; break;
	case 3: q = (sq + 1) / 2; kv = 0; break;
	default:
		q = sq ? 1 + (b * 7) % sq : 0;
		kv = skv ? 1 + (b * 5) % skv : 0;
		break;
	}
	*nq = (int32_t)q;
	*nkv = (int32_t)kv;
}

int check_run(const struct mha_kernel *k, const struct check_case *c,
              char *msg, size_t msglen)
{
	const struct mha_attn a = k->a;
	/* --varlen: each sequence's lengths (q_len, kv_len) and with packed
	 * their offsets; packed tensors are one item of total_q (tq) and
	 * total_k (tk) rows */
	int32_t *q_len = malloc((c->batch + 1) * sizeof *q_len);
	int32_t *cu_q = malloc((c->batch + 1) * sizeof *cu_q);
	int32_t *cu_k = malloc((c->batch + 1) * sizeof *cu_k);
	int32_t *kv_len = malloc((c->batch + 1) * sizeof *kv_len);
	const int vpacked = a.varlen == MHA_VARLEN_PACKED;
	size_t tb = c->batch, tq = c->seq_q, tk = c->seq_kv;
	if (!q_len || !cu_q || !cu_k || !kv_len) {
		snprintf(msg, msglen, "out of memory");
		free(q_len);
		free(cu_q);
		free(cu_k);
		free(kv_len);
		return -1;
	}
	cu_q[0] = cu_k[0] = 0;
	for (size_t b = 0; b < c->batch; ++b) {
		varlen_lengths(c, b, &q_len[b], &kv_len[b]);
		cu_q[b + 1] = cu_q[b] + q_len[b];
		cu_k[b + 1] = cu_k[b] + kv_len[b];
	}
	if (vpacked) {
		tb = 1;
		tq = (size_t)cu_q[c->batch];
		tk = (size_t)cu_k[c->batch];
	}
	size_t nq = tb * tq * k->a.h * k->a.dk;
	size_t nk = tb * tk * k->a.kv_heads * k->a.dk;
	size_t nv = tb * tk * k->a.kv_heads * k->a.dv;
	size_t no = tb * tq * k->a.h * k->a.dv;
	/* packed inputs: one buffer of packed rows, q, k and v into it */
	const size_t np = a.packed == MHA_PACKED_QKV ?
		c->batch * c->seq_q * mha_ref_pitch(&a, MHA_TENSOR_Q) :
		a.packed == MHA_PACKED_KV ?
		c->batch * c->seq_kv * mha_ref_pitch(&a, MHA_TENSOR_K) : 0;
	float *pk = np ? check_alloc(np) : NULL;
	float *q = a.packed == MHA_PACKED_QKV ? pk : check_alloc(nq);
	float *kk = pk ? pk + mha_ref_base(&a, MHA_TENSOR_K) : check_alloc(nk);
	float *v = pk ? pk + mha_ref_base(&a, MHA_TENSOR_V) : check_alloc(nv);
	/* the reference's outputs start poisoned: rows it leaves (past a
	 * sequence's queries) the kernel must leave too */
	struct mha_guarded rg = {NULL, 0, NULL}, lg = {NULL, 0, NULL};
	struct mha_guarded wg = {NULL, 0, NULL};
	float *ref = mha_guarded_init(&rg, no) ? NULL : rg.data;
	/* the bias's and boolean mask's planes of [seq_q][seq_kv] */
	const size_t planes = ((k->a.mask_dims & MHA_DIMS_BATCH) ? c->batch : 1) *
	                      ((k->a.mask_dims & MHA_DIMS_HEAD) ? k->a.h : 1);
	const size_t nbias = planes * c->seq_q * c->seq_kv;
	float *bias = (k->a.mask & MHA_MASK_BIAS) ? check_alloc(nbias) : NULL;
	struct bytes bmask = {NULL, NULL, 0}, kmask = {NULL, NULL, 0};
	struct mha_guarded out = {NULL, 0, NULL}, wout = {NULL, 0, NULL};
	struct mha_guarded w = {NULL, 0, NULL}, lse = {NULL, 0, NULL};
	struct half kh = {NULL, NULL, 0}, vh = {NULL, NULL, 0};
	struct half qh = {NULL, NULL, 0};
	/* --dtype: the reference reads the stored values as floats (q, and
	 * with --packed qkv k and v, hold them) and rounds its output the
	 * same way afterwards; rhi: the upper ends of the outputs' ranges */
	struct mha_attn ar = a;
	float *rhi = NULL;
	size_t nl = tb * k->a.h * tq;
	float *lref = k->merge && !mha_guarded_init(&lg, nl) ? lg.data : NULL;
	size_t nw = c->batch * k->a.h * c->seq_q * c->seq_kv;
	float *wref = k->weights && !mha_guarded_init(&wg, nw) ? wg.data : NULL;
	float *slopes = malloc(k->a.h * sizeof *slopes);
	float *sinks = malloc(k->a.h * sizeof *sinks);
	double smax = 0.0;
	uint64_t seed = c->seed * 0x2545f4914f6cdd1dull + 1;
	/* per element value giving |q.k| * scale near 100 on hot data */
	float hot = (float)sqrt(100.0 / ((double)k->a.dk * k->a.scale));
	double vmax = 0.0, qmax = 0.0, kmax = 0.0, tol, wtol, ltol;
	struct mha_args x;
	int rc = -1;

	if ((np && !pk) || !q || !kk || !v || !ref || !slopes || !sinks ||
	    out_init(&out, no) ||
	    ((k->a.mask & MHA_MASK_BIAS) && nbias > 0 && !bias) ||
	    ((k->a.mask & MHA_MASK_BOOL) && bytes_init(&bmask, nbias)) ||
	    ((k->a.mask & MHA_MASK_KEYS) &&
	     bytes_init(&kmask, c->batch * c->seq_kv)) ||
	    (k->weights && (!wref || out_init(&wout, no) ||
	                out_init(&w, nw))) ||
	    (k->merge && (!lref || out_init(&lse, nl)))) {
		snprintf(msg, msglen, "out of memory");
		goto done;
	}
	if (pk) {
		/* the whole buffer as q and k, then v's heads uniform */
		fill(pk, np, c->data, hot, &seed);
		if (a.packed == MHA_PACKED_KV)
			fill(q, nq, c->data, hot, &seed);
		for (size_t b = 0; b < c->batch; ++b)
			for (size_t j = 0; j < c->seq_kv; ++j)
				for (size_t h = 0; h < a.kv_heads; ++h)
					fill(v + mha_ref_offset(&a, MHA_TENSOR_V, c->batch,
					                        c->seq_kv, b, j, h),
					     a.dv, DATA_UNIFORM, 0, &seed);
	} else {
		/* (with --varlen packed, nothing but the sequences' rows) */
		fill(q, nq, c->data, hot, &seed);
		fill(kk, nk, c->data, hot, &seed);
		fill(v, nv, DATA_UNIFORM, 0, &seed);
	}
	for (size_t b = 0; b < c->batch && !a.varlen; ++b) {
		if (c->pad == PAD_ZERO)
			kv_len[b] = b % 2 ? (int32_t)c->seq_kv : 0;
		else if (c->pad == PAD_MIXED)
			kv_len[b] = (int32_t)((b * 7 + c->seq_kv / 2 + 1) % (c->seq_kv + 1));
		else
			kv_len[b] = (int32_t)c->seq_kv;
	}
	if (c->pad == PAD_MIXED && c->batch > 0 && !a.varlen)
		kv_len[c->batch - 1] = (int32_t)c->seq_kv;
	/* bias in [-2, 2] with about one key in eight at -inf, and in plane p
	 * query row p masked entirely (its output must be zeros) */
	if (bias) {
		for (size_t i = 0; i < nbias; ++i)
			bias[i] = (check_rng_next(&seed) & 7) == 0 ? -INFINITY
			                                    : 2.0f * check_rng_unit(&seed);
		for (size_t p = 0; c->seq_q && p < planes; ++p)
			for (size_t j = 0; j < c->seq_kv; ++j)
				bias[(p * c->seq_q + p % c->seq_q) * c->seq_kv + j] = -INFINITY;
	}
	/* a boolean mask hiding about one key in four, and in plane p row p + 1
	 * entirely */
	for (size_t i = 0; i < bmask.n; ++i) {
		const uint64_t r = check_rng_next(&seed);
		bmask.p[i] = (r & 3) ? (uint8_t)(r >> 8 | 1) : 0; /* any nonzero */
	}
	for (size_t p = 0; bmask.n && p < planes; ++p)
		memset(bmask.p + (p * c->seq_q + (p + 1) % c->seq_q) * c->seq_kv, 0,
		       c->seq_kv);
	/* key masks: left padding, holes, none seen, all seen, in turn */
	for (size_t b = 0; b < (kmask.n ? c->batch : 0); ++b)
		for (size_t j = 0; j < c->seq_kv; ++j) {
			uint8_t *m = kmask.p + b * c->seq_kv + j;
			switch (b % 4) {
			case 0: *m = j >= (b * 5 + c->seq_kv / 3) % (c->seq_kv + 1); break;
			case 1: *m = (check_rng_next(&seed) & 3) != 0; break;
			case 2: *m = 0; break;
			default: *m = 1; break;
			}
		}
	/* ALiBi slopes of both signs, from 0.05 to 0.5 in size; sink logits
	 * among the scores, far above them (the row's output nearly 0), and
	 * -inf (no part) */
	for (size_t h = 0; h < k->a.h; ++h) {
		double u = check_rng_unit(&seed);
		slopes[h] = (float)((h % 2 ? -1.0 : 1.0) * (0.05 + 0.45 * fabs(u)));
		sinks[h] = h % 3 == 0 ? 2.0f * (float)u : h % 3 == 1 ? 30.0f : -INFINITY;
		smax = fmax(smax, fabs(mha_ref_slope(&a, &(struct mha_args){.alibi_slopes = slopes}, h)));
	}
	/* --kv-dtype: k and v stored as f16 or bf16 (one element in 16 a
	 * tiny value, an f16 subnormal), both the reference and the kernel
	 * reading those bits; kk and v keep the stored values as floats */
	if (a.kv_dtype) {
		float *src = pk ? pk : kk;
		size_t n = pk ? np : nk;
		for (int t = 0; t < (pk ? 1 : 2); ++t) {
			struct half *h = t ? &vh : &kh;
			if (t) {
				src = v;
				n = nv;
			}
			if (half_init(h, a.kv_dtype, n)) {
				snprintf(msg, msglen, "out of memory");
				goto done;
			}
			for (size_t i = 0; i < n; ++i)
				if ((check_rng_next(&seed) & 15) == 0)
					src[i] = ldexpf(check_rng_unit(&seed), -16);
			mha_kv_store_back(a.kv_dtype, src, h->p, n);
		}
	}
	/* --dtype: q stored as f16 or bf16 too (with --packed qkv in the
	 * buffer above, of the same type) */
	if (a.dtype && a.packed != MHA_PACKED_QKV) {
		if (half_init(&qh, a.dtype, nq)) {
			snprintf(msg, msglen, "out of memory");
			goto done;
		}
		for (size_t i = 0; i < nq; ++i)
			if ((check_rng_next(&seed) & 15) == 0)
				q[i] = ldexpf(check_rng_unit(&seed), -16);
		mha_kv_store_back(a.dtype, q, qh.p, nq);
	}
	if (a.dtype) {
		ar.dtype = MHA_DTYPE_F32;
		if (a.packed == MHA_PACKED_QKV)
			ar.kv_dtype = MHA_DTYPE_F32;
	}
	vmax = tensor_max(&a, MHA_TENSOR_V, v, tb, tk);
	qmax = tensor_max(&a, MHA_TENSOR_Q, q, tb, tq);
	kmax = tensor_max(&a, MHA_TENSOR_K, kk, tb, tk);

	x = (struct mha_args){
		.q = q,
		.k = !a.kv_dtype ? (const void *)kk : (const void *)kh.p,
		.v = !a.kv_dtype ? (const void *)v : pk ?
		     mha_kv_at(a.kv_dtype, kh.p, mha_ref_base(&a, MHA_TENSOR_V)) :
		     (const void *)vh.p,
		.out = ref,
		.batch = c->batch, .seq_q = c->seq_q, .seq_kv = c->seq_kv,
		.kv_len = kv_len, .bias = bias, .weights = wref,
		.alibi_slopes = slopes, .sinks = sinks, .lse = lref,
		.bool_mask = bmask.p, .key_mask = kmask.p,
		/* padded: q_len NULL (seq_q each) in the PAD_ZERO cases */
		.q_len = a.varlen == MHA_VARLEN_PADDED && c->pad != PAD_ZERO ?
		         q_len : NULL,
		.cu_seqlens_q = vpacked ? cu_q : NULL,
		.cu_seqlens_k = vpacked ? cu_k : NULL,
	};
	if (ar.kv_dtype != a.kv_dtype) {
		x.k = kk;
		x.v = v;
	}
	mha_ref_attention(&ar, &x);
	const struct mha_args in = x; /* the inputs, for the checks */
	if (a.dtype)
		x.q = a.packed == MHA_PACKED_QKV ? kh.p : qh.p;
	/* packed: the kernel finds k and v in the buffer, and with qkv takes
	 * seq_kv from seq_q, whatever the call says */
	if (a.packed == MHA_PACKED_QKV) {
		x.k = x.v = NULL;
		x.seq_kv = c->seq_kv + 5;
	} else if (a.packed == MHA_PACKED_KV)
		x.v = NULL;
	x.kv_len = (k->a.mask & MHA_MASK_PADDING) ||
	           a.varlen == MHA_VARLEN_PADDED ? kv_len : NULL;
	x.alibi_slopes = k->a.alibi == MHA_ALIBI_SLOPES ? slopes : NULL;
	x.sinks = k->a.sinks ? sinks : NULL;
	x.out = a.dtype ? out16(&out, a.dtype) : out.data;
	x.weights = NULL;
	x.lse = lse.data; /* NULL without --lse */
	if (k->fn && !c->via_args)
		mha_call(k->fn, k->wfn, &x);
	else
		k->args(&x);
	if (a.dtype && out16_read(&out, a.dtype)) {
		snprintf(msg, msglen, "wrote before its %s output",
		         a.dtype == MHA_DTYPE_F16 ? "f16" : "bf16");
		goto done;
	}

	/* Outputs are convex combinations of v rows, so errors scale with
	 * max|v|.  A float score's rounding error grows like sqrt(dk) * eps *
	 * sum|q_d k_d| * scale (bounded by dk * max|q| max|k| * scale); it
	 * becomes a relative error of the weights.  exp adds a few ulp.  Wrong
	 * masking or indexing errs by O(max|v|), far above this. */
	wtol = 1e-5 + 4.0 * sqrt((double)k->a.dk) * 0x1p-24 *
	              (double)k->a.dk * qmax * kmax * k->a.scale;
	/* a capped score errs by a few ulp of the cap (tanh's error), an ALiBi
	 * term by an ulp of slope * distance */
	if (k->a.softcap > 0.0)
		wtol += 8.0 * k->a.softcap * 0x1p-24;
	if (k->a.alibi)
		wtol += 4.0 * smax * (double)(c->seq_q + c->seq_kv) * 0x1p-24;
	tol = vmax * wtol;
	/* lse = m + log(l): off by a score's error (wtol, absolute) and by
	 * l's relative error, a few ulp of exp over the row's keys */
	ltol = wtol + 4.0 * (double)c->seq_kv * 0x1p-24;
	/* --dtype: an output is right when it is the rounding of a float
	 * within tol of the reference: [R(ref - tol), R(ref + tol)], R the
	 * rounding to the type (a kernel that truncates falls outside) */
	if (a.dtype) {
		rhi = malloc(no * sizeof *rhi + 1);
		if (!rhi) {
			snprintf(msg, msglen, "out of memory");
			goto done;
		}
		for (size_t i = 0; i < no; ++i) {
			if (mha_is_poison(ref[i]))
				continue;
			rhi[i] = round16(a.dtype, (double)ref[i] + tol);
			ref[i] = round16(a.dtype, (double)ref[i] - tol);
		}
	}
	if (check_out("", c, &out, ref, rhi, tol, msg, msglen) ||
	    check_zero_rows("", k, &a, c, out.data, &in, msg, msglen) ||
	    (k->merge && check_lse("", k, c, &lse, lref, ltol, msg, msglen)))
		goto done;
	if (k->weights) {
		/* NAME_weights: the same output, and weights, each at most 1 and
		 * off by the relative error above (out's tolerance per unit of
		 * v); a wrong mask or index errs by a whole weight */
		mha_guarded_poison(&wout);
		mha_guarded_poison(&w);
		if (k->merge)
			mha_guarded_poison(&lse);
		x.out = a.dtype ? out16(&wout, a.dtype) : wout.data;
		x.weights = w.data;
		if (k->wfn && !c->via_args)
			mha_call(k->fn, k->wfn, &x);
		else
			k->args(&x);
		if (a.dtype && out16_read(&wout, a.dtype)) {
			snprintf(msg, msglen, "NAME_weights: wrote before its output");
			goto done;
		}
		if (check_out("NAME_weights: ", c, &wout, ref, rhi, tol, msg,
		              msglen) ||
		    check_zero_rows("NAME_weights: ", k, &a, c, wout.data, &in,
		                    msg, msglen) ||
		    check_weights(k, &a, c, &w, wref, &in, wtol, msg, msglen) ||
		    (k->merge && check_lse("NAME_weights: ", k, c, &lse, lref,
		                           ltol, msg, msglen)))
			goto done;
	}
	rc = 0;
done:
	if (pk)
		check_free(pk, np);
	if (a.packed != MHA_PACKED_QKV)
		check_free(q, nq);
	if (!pk) {
		check_free(kk, nk);
		check_free(v, nv);
	}
	mha_guarded_free(&rg);
	free(kv_len);
	free(q_len);
	free(cu_q);
	free(cu_k);
	if (bias)
		check_free(bias, nbias);
	bytes_free(&bmask);
	bytes_free(&kmask);
	half_free(&kh);
	half_free(&vh);
	half_free(&qh);
	free(rhi);
	mha_guarded_free(&out);
	mha_guarded_free(&wg);
	mha_guarded_free(&wout);
	mha_guarded_free(&w);
	mha_guarded_free(&lse);
	mha_guarded_free(&lg);
	free(slopes);
	free(sinks);
	return rc;
}

/* Bit patterns of 16-bit keys and values that a conversion gets wrong
 * first: as f16 subnormals (the smallest, the largest, negative), the
 * smallest normal, 65504 (the largest finite) of both signs, +-inf, quiet
 * and signalling NaNs, -0, 1 + 2^-10; as bf16 a subnormal, the smallest
 * normal, the largest finite, +-inf, NaNs with payloads, 1 + 2^-7, 65536. */
static const uint16_t specials[] = {
	0x0001, 0x03ff, 0x8001, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00,
	0x7e00, 0x7d01, 0x8000, 0x3c01, 0x3555, 0x0080, 0x807f, 0x7f7f,
	0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1, 0x3f81, 0x4780, 0xc2f7,
};
#define NSPECIAL (sizeof specials / sizeof specials[0])

/* Floats that rounding to f16 or bf16 gets wrong first (--dtype's out,
 * from an f32 cache): f16 65504 and the largest float below 65520 (both
 * 65504), 65520 (inf), 1e5, +-inf, NaNs with payloads, f16's smallest
 * subnormal 2^-24, 2^-25 (a tie: 0), 3 * 2^-26 (2^-24), the largest
 * subnormal's neighbourhood, ties 1 + 2^-11 (to 1) and 1 + 3 * 2^-11 (up);
 * bf16's ties 1 + 2^-8 and 1 + 3 * 2^-8, FLT_MAX (inf), a float subnormal,
 * -0. */
static const uint32_t specials32[] = {
	0x477fe000, 0x477fefff, 0x477ff000, 0x47c35000, 0x7f800000, 0xff800000,
	0x7fc00001, 0xffa00003, 0x33800000, 0x33000000, 0x33c00000, 0x387fc000,
	0x387fe000, 0x3f801000, 0x3f803000, 0x3f808000, 0x3f818000, 0x7f7fffff,
	0x00000123, 0x80000000, 0xc0490fdb, 0x3eaaaaab,
};
#define NSPECIAL32 (sizeof specials32 / sizeof specials32[0])

/* A --kv-dtype kernel's conversion of values, exactly: with one key the
 * softmax weight is 1, so every row that sees it returns the key's value
 * row as floats.  Values cycle through specials[] (NaN and inf among them:
 * the rows that see them get them); q8 blocks take them as their f16
 * scales, times int8 values from -128 to 127.  Keys, queries random.  0, or
 * -1 with a message.  Kernels whose spec fixes seq_kv other than 1 are not
 * probed. */
static int check_convert(const struct mha_kernel *k, char *msg, size_t msglen)
{
	const struct mha_attn a = k->a;
	const size_t sq = k->seq_q ? k->seq_q : 3, skv = 1;
	const size_t pitch = a.packed ? mha_ref_pitch(&a, MHA_TENSOR_K)
	                              : a.kv_heads * a.dk;
	const size_t nq = sq * a.h * a.dk, no = sq * a.h * a.dv;
	const size_t nk = skv * pitch, nv = skv * a.kv_heads * a.dv;
	uint64_t seed = 99;
	struct half kh = {NULL, NULL, 0}, vh = {NULL, NULL, 0};
	struct half qh = {NULL, NULL, 0}, oh = {NULL, NULL, 0};
	float *q = check_alloc(nq), *out = check_alloc(no);
	float *bias = check_alloc(sq * skv * a.h);
	uint8_t *ones = malloc(sq * skv * a.h + 1);
	float slopes[1024], sinks[1024];
	int32_t kv_len[1] = {1}, cu_q[2] = {0, (int32_t)sq}, cu_k[2] = {0, 1};
	void *vp;
	int rc = -1;

	if ((!a.kv_dtype && !a.dtype) || (k->seq_kv && k->seq_kv != 1) ||
	    a.packed == MHA_PACKED_QKV) {
		rc = 0;
		goto done;
	}
	if (!q || !out || !bias || !ones || half_init(&kh, a.kv_dtype, nk) ||
	    (!a.packed && half_init(&vh, a.kv_dtype, nv)) ||
	    (a.dtype && (half_init(&qh, a.dtype, nq) ||
	                 half_init(&oh, a.dtype, no)))) {
		snprintf(msg, msglen, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < nq; ++i)
		q[i] = check_rng_unit(&seed);
	if (a.dtype)
		mha_kv_store(a.dtype, q, qh.p, nq);
	for (size_t i = 0; i < sq * skv * a.h; ++i)
		bias[i] = 0.0f;
	memset(ones, 1, sq * skv * a.h + 1);
	for (size_t h = 0; h < a.h && h < 1024; ++h) {
		slopes[h] = 0.25f;
		sinks[h] = -INFINITY;
	}
	{ /* keys: random, finite */
		float *x = malloc(nk * sizeof *x);
		if (!x) {
			snprintf(msg, msglen, "out of memory");
			goto done;
		}
		for (size_t i = 0; i < nk; ++i)
			x[i] = check_rng_unit(&seed);
		mha_kv_store(a.kv_dtype, x, kh.p, nk);
		free(x);
	}
	vp = a.packed ? (void *)mha_kv_at(a.kv_dtype, kh.p,
	                                  mha_ref_base(&a, MHA_TENSOR_V)) : vh.p;
	for (size_t i = 0; i < a.kv_heads * a.dv; ++i) {
		if (a.kv_dtype == MHA_DTYPE_F32) {
			memcpy((float *)vp + i, &specials32[i % NSPECIAL32],
			       sizeof(float));
			continue;
		}
		if (a.kv_dtype != MHA_DTYPE_Q8) {
			((uint16_t *)vp)[i] = specials[i % NSPECIAL];
			continue;
		}
		struct mha_q8_0 *b = (struct mha_q8_0 *)vp + i / 32;
		if (i % 32 == 0)
			b->d = specials[i / 32 % NSPECIAL];
		b->qs[i % 32] = (int8_t)(uint8_t)(i * 37 + i / 32 * 11);
	}
	for (size_t i = 0; i < no; ++i)
		out[i] = 12345.0f;
	{
		const struct mha_args x = {
			.q = a.dtype ? qh.p : (void *)q, .k = kh.p, .v = vp,
			.out = a.dtype ? oh.p : (void *)out, .batch = 1,
			.seq_q = sq, .seq_kv = skv, .kv_len = kv_len, .bias = bias,
			.alibi_slopes = slopes, .sinks = sinks,
			.bool_mask = (a.mask & MHA_MASK_BOOL) ? ones : NULL,
			.key_mask = (a.mask & MHA_MASK_KEYS) ? ones : NULL,
			.cu_seqlens_q = cu_q, .cu_seqlens_k = cu_k,
		};
		if (a.h > 1024) {
			rc = 0;
			goto done;
		}
		if (a.dtype)
			for (size_t i = 0; i < no; ++i)
				((uint16_t *)oh.p)[i] = poison16(a.dtype);
		k->args(&x);
		for (size_t i = 0; a.dtype && i < no; ++i)
			out[i] = (float)mha_ref_elem(a.dtype, oh.p, i);
	}
	for (size_t i = 0; i < sq; ++i) {
		size_t lo;
		if (mha_ref_visible(&a, i, sq, skv, &lo) < 1 || lo > 0)
			continue; /* the row does not see the key */
		for (size_t hh = 0; hh < a.h; ++hh) {
			const size_t hk = hh / (a.h / a.kv_heads);
			const size_t o = mha_ref_offset(&a, MHA_TENSOR_OUT, 1, sq, 0, i,
			                                hh);
			for (size_t d = 0; d < a.dv; ++d) {
				const size_t e = hk * a.dv + d;
				const unsigned bits = a.kv_dtype == MHA_DTYPE_Q8 ?
					((const struct mha_q8_0 *)vp)[e / 32].d :
					a.kv_dtype == MHA_DTYPE_F32 ?
					((const uint32_t *)vp)[e] :
					((const uint16_t *)vp)[e];
				/* with --dtype, the value rounded to out's type */
				const float want = a.dtype ?
					round16(a.dtype, mha_ref_kv(&a, vp, e)) :
					(float)mha_ref_kv(&a, vp, e);
				const float got = out[o + d];
				int ok = isnan(want) ? isnan(got)
				       : isinf(want) ? got == want
				       : fabs((double)got - (double)want) <=
				         0x1p-22 * fabs((double)want) + 0x1p-148;
				if (!ok) {
					snprintf(msg, msglen, "%s: one key: row %zu head %zu "
					         "column %zu is %a, the value 0x%04x%s is %a%s",
					         k->name, i, hh, d, (double)got, bits,
					         a.kv_dtype == MHA_DTYPE_Q8 ? " (q8 scale)" : "",
					         (double)want, a.dtype ? ", rounded" : "");
					goto done;
				}
			}
		}
	}
	rc = 0;
done:
	if (q)
		check_free(q, nq);
	if (out)
		check_free(out, no);
	if (bias)
		check_free(bias, sq * skv * a.h);
	half_free(&kh);
	half_free(&vh);
	half_free(&qh);
	half_free(&oh);
	free(ones);
	return rc;
}

int check_kernel(const struct mha_kernel *k, size_t index, char *msg,
                 size_t msglen)
{
	struct check_case cases[16];
	size_t n = check_cases(k, index, cases, 16);
	char sub[512];

	for (size_t i = 0; i < n; ++i)
		if (check_run(k, &cases[i], sub, sizeof sub)) {
			snprintf(msg, msglen, "%s: %s", k->name, sub);
			return -1;
		}
	if (check_convert(k, msg, msglen))
		return -1;
	return 0;
}

struct pool_thread {
	struct check_pool *p;
	size_t worker;
};

static void *pool_worker(void *arg)
{
	const struct pool_thread *t = arg;
	struct check_pool *p = t->p;
	size_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n) {
		p->ran[i]++;
		p->fn(p->task, i, t->worker);
	}
	return NULL;
}

void check_pool_parallel(void *pool, size_t n, mha_task_fn *fn, void *task)
{
	struct check_pool *p = pool;
	pthread_t th[8];
	struct pool_thread pt[8];

	atomic_fetch_add(&p->calls, 1);
	p->n = n;
	p->fn = fn;
	p->task = task;
	atomic_store(&p->next, 0);
	p->ran = calloc(n ? n : 1, 1);
	for (size_t w = 0; w < p->workers; ++w) {
		pt[w] = (struct pool_thread){p, w};
		if (pthread_create(&th[w], NULL, pool_worker, &pt[w]))
			p->bad_worker = 1;
	}
	for (size_t w = 0; w < p->workers; ++w)
		pthread_join(th[w], NULL);
	for (size_t i = 0; i < n; ++i)
		if (p->ran[i] != 1)
			p->bad_worker = 1;
	free(p->ran);
}
