/* Generic reference attention: every mask, layout and head grouping that the
 * kernel ABI allows, accumulated in double.  Used to check generated kernels. */
#ifndef MHA_REF_H
#define MHA_REF_H

#include "mha_abi.h"
#include "mha_kvstore.h"

/* The end n of the keys query row i may see before padding, and through
 * *first the first of them (0 without a window): keys [*first, n), none
 * when *first >= n (a window past the keys). */
size_t mha_ref_visible(const struct mha_attn *a, size_t i, size_t seq_q,
                       size_t seq_kv, size_t *first);

/* out = softmax(q k^T * scale + mask) v for the inputs in x, as a kernel
 * generated for a computes them (with a->packed, k and v from the packed
 * buffer in x->q or x->k, and seq_kv = seq_q for qkv; x->kv_len must be
 * set when a->mask has PADDING, x->bias when it has BIAS, x->bool_mask with
 * BOOL, x->key_mask with KEYS, x->alibi_slopes with MHA_ALIBI_SLOPES,
 * x->sinks with a->sinks; with a->varlen x->kv_len and x->q_len, or
 * x->cu_seqlens_q and x->cu_seqlens_k), the score modifiers applied in the
 * contract's order (softcap, ALiBi, then bias and masks).  Rows with no
 * visible key are zero; with a->varlen, rows past a sequence's queries are
 * left as they are (in out, weights and lse).
 * With x->weights also the softmax weights: [batch][h][seq_q][seq_kv] in
 * every layout, 0 where masked, the weights of a row with no visible key
 * all 0.  With x->lse also each row's log-sum-exp [batch][h][seq_q] (with
 * --varlen packed [h][total_q]): the
 * natural log of its softmax denominator (the sink's term included), -inf
 * (or the sink's logit) for a row with no visible key. */
void mha_ref_attention(const struct mha_attn *a, const struct mha_args *x);

/* ALiBi's slope of query head head: x->alibi_slopes[head], or ggml's rule
 * from a->max_bias (rounded to float, as in the generated kernel); 0
 * without ALiBi. */
double mha_ref_slope(const struct mha_attn *a, const struct mha_args *x,
                     size_t head);

/* Element offset of batch item b's and head head's [seq_q][seq_kv] plane
 * in the bias and the boolean mask (by a->mask_dims; 0 without them). */
size_t mha_ref_plane(const struct mha_attn *a, size_t b, size_t head,
                     size_t seq_q, size_t seq_kv);

/* 1 when a mask of x hides key j from row i of head head, batch item b
 * beyond the rows' limits: a zero byte of the boolean or key mask, a bias
 * of -inf. */
int mha_ref_hidden(const struct mha_attn *a, const struct mha_args *x,
                   size_t b, size_t head, size_t i, size_t j);

/* The tensors of a call. */
enum mha_tensor { MHA_TENSOR_Q, MHA_TENSOR_K, MHA_TENSOR_V, MHA_TENSOR_OUT };

/* The floats of one position's row of tensor t: its heads, or with
 * a->packed the whole packed row its heads lie in. */
size_t mha_ref_pitch(const struct mha_attn *a, enum mha_tensor t);

/* Where t's heads start in a packed row (its pointer less the packed
 * buffer's); 0 unless a->packed holds t. */
size_t mha_ref_base(const struct mha_attn *a, enum mha_tensor t);

/* Element offset of (b, s, head, 0) in tensor t of a call with batch items
 * of seq rows (seq_q for q and out, seq_kv for k and v), from t's own
 * pointer, in a's layout and packing. */
size_t mha_ref_offset(const struct mha_attn *a, enum mha_tensor t,
                      size_t batch, size_t seq, size_t b, size_t s,
                      size_t head);

/* Element i of k or v stored as a->kv_dtype (floats, f16 or bf16 bits, or
 * q8_0 blocks: element i in block i / 32), exactly. */
double mha_ref_kv(const struct mha_attn *a, const void *p, size_t i);
/* Element i of p stored as dtype, exactly; mha_ref_put stores f there
 * (f32, f16 or bf16, rounded as mha_kv_store rounds). */
double mha_ref_elem(int dtype, const void *p, size_t i);
void mha_ref_put(int dtype, void *p, size_t i, float f);

/* The bytes of n elements stored as dtype (enum mha_dtype; q8: n a multiple
 * of 32), and p advanced by n such elements. */
size_t mha_kv_bytes(int dtype, size_t n);
const void *mha_kv_at(int dtype, const void *p, size_t n);

/* n floats x stored as dtype at dst (dst may be x itself: the conversion
 * runs forward, each float, or each q8 block's 32, read before bytes are
 * written); q8 by mha_q8_from_floats (runtime/mha_kvstore.h): ggml's
 * quantize_row_q8_0_ref, and a block with an inf or NaN reads as NaN. */
void mha_kv_store(int dtype, const float *x, void *dst, size_t n);
/* The same into dst (not x), then x set to the values stored, as a kernel
 * reads them (the tests', benchmarks' and tuner's inputs). */
void mha_kv_store_back(int dtype, float *x, void *dst, size_t n);

/* The conversions of --kv-dtype.  To float: exact (every f16 and bf16 value
 * is a float; f16 subnormals become normal floats, a NaN stays a NaN with
 * its payload in the high fraction bits).  From float: rounded to nearest,
 * ties to even; f16: magnitudes from 65520 on become inf (65504 is the
 * largest finite), below 2^-14 subnormals (2^-25 and below zero); bf16:
 * magnitudes past FLT_MAX's rounding become inf.  A NaN stays a quiet NaN
 * (the payload's high bits kept), with its sign. */
float mha_f16_to_float(uint16_t h);
float mha_bf16_to_float(uint16_t h);
/* mha_f16_from_float, mha_bf16_from_float: runtime/mha_kvstore.h */

#endif
