/* The runtime's reference attention behind one flat function, for the
 * Python package's tests (tests/test_python.py loads it with ctypes): the
 * spec as words and numbers, so that Python never lays out struct
 * mha_attn or struct mha_args, which grow. */
#include <string.h>

#include "../runtime/mha_ref.h"

/* The MHA_MASK_* bits of a comma list of mask words ("" or "none": 0);
 * -1 for an unknown word. */
static long mask_bits(const char *words)
{
	static const char *const names[] = {
#define MHA_X(name, word) #word,
		MHA_MASK_LIST(MHA_X)
#undef MHA_X
	};
	long bits = 0;

	if (strcmp(words, "none") == 0)
		return 0;
	while (*words) {
		size_t len = strcspn(words, ","), i;
		for (i = 0; i < MHA_MASK_N; ++i)
			if (strlen(names[i]) == len && strncmp(words, names[i], len) == 0)
				break;
		if (i == MHA_MASK_N)
			return -1;
		bits |= 1l << i;
		words += len + (words[len] == ',');
	}
	return bits;
}

/* out = the reference attention of a kernel generated for these settings
 * (mask a comma list of words, align "bottom-right" or "top-left", layout
 * "bshd", "bhsd" or "sbhd"; softcap 0 for none, alibi_slopes and sinks
 * NULL for none; mask_dims "", "b", "h" or "b,h"; varlen "none", "padded"
 * with q_len (NULL: seq_q each) and kv_len, or "packed" with cu_seqlens_q
 * and cu_seqlens_k; window_left, window_right the sides of a window by
 * position, -1 for an unbounded side); 0, or -1 for a word it does not
 * know. */
int pyref_attention(size_t h, size_t kv_heads, size_t dk, size_t dv,
                    const char *mask, const char *align, const char *layout,
                    double scale, size_t window, const float *q,
                    const float *k, const float *v, float *out, size_t batch,
                    size_t seq_q, size_t seq_kv, const int32_t *kv_len,
                    const float *bias, double softcap,
                    const float *alibi_slopes, const float *sinks,
                    const char *mask_dims, const uint8_t *bool_mask,
                    const uint8_t *key_mask, const char *varlen,
                    const int32_t *q_len, const int32_t *cu_seqlens_q,
                    const int32_t *cu_seqlens_k, long window_left,
                    long window_right)
{
	long bits = mask_bits(mask);
	struct mha_attn a = {.h = h, .kv_heads = kv_heads, .dk = dk, .dv = dv,
	                     .window = window, .scale = scale,
	                     .softcap = softcap,
	                     .alibi = alibi_slopes ? MHA_ALIBI_SLOPES
	                                           : MHA_ALIBI_NONE,
	                     .sinks = sinks != NULL};
	struct mha_args x = {.q = q, .k = k, .v = v, .out = out, .batch = batch,
	                     .seq_q = seq_q, .seq_kv = seq_kv, .kv_len = kv_len,
	                     .bias = bias, .alibi_slopes = alibi_slopes,
	                     .sinks = sinks, .bool_mask = bool_mask,
	                     .key_mask = key_mask, .q_len = q_len,
	                     .cu_seqlens_q = cu_seqlens_q,
	                     .cu_seqlens_k = cu_seqlens_k};

	if (bits < 0 || (strcmp(align, "bottom-right") && strcmp(align, "top-left")) ||
	    (strcmp(layout, "bshd") && strcmp(layout, "bhsd") &&
	     strcmp(layout, "sbhd")))
		return -1;
	if (strcmp(mask_dims, "") && strcmp(mask_dims, "b") &&
	    strcmp(mask_dims, "h") && strcmp(mask_dims, "b,h"))
		return -1;
	a.mask_dims = (strchr(mask_dims, 'b') ? MHA_DIMS_BATCH : 0) |
	              (strchr(mask_dims, 'h') ? MHA_DIMS_HEAD : 0);
	if (strcmp(varlen, "none") && strcmp(varlen, "padded") &&
	    strcmp(varlen, "packed"))
		return -1;
	a.varlen = strcmp(varlen, "padded") == 0 ? MHA_VARLEN_PADDED
	         : strcmp(varlen, "packed") == 0 ? MHA_VARLEN_PACKED
	         : MHA_VARLEN_NONE;
	a.mask = (unsigned)bits;
	a.window_sides = (window_left >= 0 ? MHA_WINDOW_LEFT : 0) |
	                 (window_right >= 0 ? MHA_WINDOW_RIGHT : 0);
	a.window_left = window_left >= 0 ? (size_t)window_left : 0;
	a.window_right = window_right >= 0 ? (size_t)window_right : 0;
	a.align = strcmp(align, "top-left") == 0 ? MHA_ALIGN_TOP_LEFT
	                                         : MHA_ALIGN_BOTTOM_RIGHT;
	a.layout = strcmp(layout, "bhsd") == 0 ? MHA_LAYOUT_BHSD
	         : strcmp(layout, "sbhd") == 0 ? MHA_LAYOUT_SBHD
	         : MHA_LAYOUT_BSHD;
	mha_ref_attention(&a, &x);
	return 0;
}
