/* Generic reference attention: every mask, layout and head grouping that the
 * kernel ABI allows, accumulated in double.  Used to check generated kernels. */
#ifndef MHA_REF_H
#define MHA_REF_H

#include <stddef.h>
#include <stdint.h>

enum {
	MHA_MASK_CAUSAL = 1u << 0,
	MHA_MASK_PADDING = 1u << 1,
	MHA_MASK_BIAS = 1u << 2
};

enum mha_align { MHA_ALIGN_BOTTOM_RIGHT = 0, MHA_ALIGN_TOP_LEFT = 1 };
enum mha_layout { MHA_LAYOUT_BSHD = 0, MHA_LAYOUT_BHSD = 1 };

/* The attention problem a kernel solves, independent of how it is computed. */
struct mha_attn {
	size_t h;        /* query heads */
	size_t kv_heads; /* key/value heads; divides h */
	size_t dk, dv;   /* head dims of q/k and of v/out */
	unsigned mask;   /* MHA_MASK_* bits */
	int align;       /* enum mha_align, for causal */
	int layout;      /* enum mha_layout */
	size_t window;   /* 0: none; else a query sees at most this many keys */
	double scale;    /* multiplies q.k */
};

/* Number of keys 0..n-1 that query row i may see before padding, or the
 * first visible key (through *first) when a window is set. */
size_t mha_ref_visible(const struct mha_attn *a, size_t i, size_t seq_q,
                       size_t seq_kv, size_t *first);

/* out = softmax(q k^T * scale + mask) v, exactly the kernel ABI's arguments.
 * kv_len must be non-NULL when mask has PADDING, bias when it has BIAS.
 * Rows with no visible key are zero. */
void mha_ref_attention(const struct mha_attn *a, const float *q,
                       const float *k, const float *v, float *out,
                       size_t batch, size_t seq_q, size_t seq_kv,
                       const int32_t *kv_len, const float *bias);

/* mha_ref_attention that also writes the softmax weights, when weights is
 * not NULL: [batch][h][seq_q][seq_kv] in every layout, 0 where masked, the
 * weights of a row with no visible key all 0. */
void mha_ref_attention_weights(const struct mha_attn *a, const float *q,
                               const float *k, const float *v, float *out,
                               size_t batch, size_t seq_q, size_t seq_kv,
                               const int32_t *kv_len, const float *bias,
                               float *weights);

/* Element offset of (b, s, head, 0) in a tensor of the given layout. */
size_t mha_ref_offset(int layout, size_t b, size_t s, size_t head,
                      size_t seq, size_t heads, size_t d);

#endif
