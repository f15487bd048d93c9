/* The kernel contract: what a generated kernel computes and how it is
 * called.  The README's "Kernel ABI" section says the same in prose; this is
 * the one place it is declared in C, installed with mhagen, and included by
 * every file in the repository that calls or declares a kernel.  Generated
 * kernels do not include it (they are self-contained); the test builds check
 * each one against these types. */
#ifndef MHA_ABI_H
#define MHA_ABI_H

#include <stddef.h>
#include <stdint.h>

/* The masks a kernel may be generated with (--mask), in order: X(NAME,
 * word), the word being its --mask word and canonical-name tag.  ORDER
 * MASK: bit i of a mask is the i-th; the generator reads this list for the
 * flag, the names and the templates' spec fields. */
#define MHA_MASK_LIST(X)                                                    \
	X(CAUSAL, causal)   /* query i sees keys up to its diagonal */      \
	X(PADDING, padding) /* keys at or past kv_len[b] are masked */      \
	X(BIAS, bias)       /* bias[i][j] added to each score */            \
	X(BOOL, bool)       /* key j is seen where bool_mask[i][j] != 0 */  \
	X(KEYS, keys)       /* key j is seen where key_mask[b][j] != 0 */

enum mha_mask_index {
#define MHA_X(name, word) MHA_MASK_I_##name,
	MHA_MASK_LIST(MHA_X)
#undef MHA_X
	MHA_MASK_N /* how many masks there are */
};

enum {
#define MHA_X(name, word) MHA_MASK_##name = 1u << MHA_MASK_I_##name,
	MHA_MASK_LIST(MHA_X)
#undef MHA_X
};

/* Where the causal diagonal lies when seq_q != seq_kv (--causal-align). */
enum mha_align { MHA_ALIGN_BOTTOM_RIGHT = 0, MHA_ALIGN_TOP_LEFT = 1 };

/* Where ALiBi's slopes come from (--alibi, --max-bias): none, the caller's
 * array alibi_slopes[h], or fixed at generation time by ggml's rule from
 * max_bias.  The bias is -slope * |i + shift - j|, shift being where the
 * causal diagonal lies (seq_kv - seq_q bottom-right, 0 top-left). */
enum mha_alibi { MHA_ALIBI_NONE = 0, MHA_ALIBI_SLOPES = 1,
	MHA_ALIBI_MAX_BIAS = 2 };

/* The bounded sides of a window by position (struct mha_attn's
 * window_sides): a side not set is unbounded (FlashAttention's -1). */
enum { MHA_WINDOW_LEFT = 1, MHA_WINDOW_RIGHT = 2 };

/* The leading dimensions of the bias and the boolean mask (--mask-dims,
 * struct mha_attn's mask_dims): with MHA_DIMS_BATCH they are
 * [batch][...][seq_q][seq_kv], with MHA_DIMS_HEAD [...][h][seq_q][seq_kv],
 * with both [batch][h][seq_q][seq_kv]; without either one [seq_q][seq_kv]
 * plane serves every batch item and head. */
enum { MHA_DIMS_BATCH = 1, MHA_DIMS_HEAD = 2 };

/* How q, k, v and out hold their rows (--layout): bshd is
 * [batch][seq][heads][d], bhsd is [batch][heads][seq][d], sbhd is
 * [seq][batch][heads][d] (nn.MultiheadAttention's batch_first=False). */
enum mha_layout { MHA_LAYOUT_BSHD = 0, MHA_LAYOUT_BHSD = 1,
	MHA_LAYOUT_SBHD = 2 };

/* Inputs packed in one buffer (--packed; layouts bshd and sbhd), read in
 * place.  Each (batch, seq) position of the buffer is one packed row: with
 * qkv the h query heads (dk floats each), then the kv_heads key heads (dk),
 * then the kv_heads value heads (dv) -- FlashAttention's qkvpacked
 * [batch][seq][3][h][d] when kv_heads = h, and a fused projection's
 * [batch][seq][(h + 2 kv_heads) d] output with GQA; with kv the key heads
 * then the value heads -- FlashAttention's kvpacked [batch][seq][2][h][d].
 * The caller passes the buffer as q (qkv) or k (kv); the kernel ignores k
 * and v (qkv) or v (kv), and with qkv reads seq_kv as seq_q (the keys are
 * the queries' positions).  out is never packed. */
enum mha_packed { MHA_PACKED_NONE = 0, MHA_PACKED_QKV = 1,
	MHA_PACKED_KV = 2 };

/* Variable-length batches (--varlen), FlashAttention's semantics: each
 * sequence b has its own lengths, and causal, windows and ALiBi align to
 * them (shift = its keys less its queries bottom-right, 0 top-left).
 * padded: q_len[b] queries (NULL: seq_q) and kv_len[b] keys in the
 * buffers' [batch][seq_q] and [batch][seq_kv] rows (flash_attn_with_kvcache
 * with cache_seqlens); packed: sequence b is rows cu_seqlens_q[b] to
 * cu_seqlens_q[b + 1] - 1 of q [total_q][h][dk] and out, and likewise of k
 * and v by cu_seqlens_k (flash_attn_varlen_func), seq_q and seq_kv being
 * the longest (max_seqlen_q, max_seqlen_k).  Rows past a sequence's queries
 * are left as they were in out, weights and lse. */
enum mha_varlen { MHA_VARLEN_NONE = 0, MHA_VARLEN_PADDED = 1,
	MHA_VARLEN_PACKED = 2 };

/* How q and out (--dtype; struct mha_attn's dtype: f32, f16 or bf16), and
 * K and V (--kv-dtype, by default the --dtype; struct mha_attn's kv_dtype),
 * are stored: f32
 * floats, or 16-bit elements passed as uint16_t bits: f16 (IEEE 754
 * binary16: 1 sign, 5 exponent, 10 fraction bits) or bf16 (bfloat16: the
 * high half of a float's bits).  The kernel converts each element exactly
 * to float (every f16 and bf16 value is a float) and computes in float;
 * an f16 or bf16 out is each float result rounded to nearest, ties to even
 * (f16: past 65504 rounds to inf; NaN stays NaN). 
 * q8 is ggml's q8_0, read in place: each run of 32 elements along a row is
 * one struct mha_q8_0 (34 bytes: an f16 scale d, then 32 int8 values q;
 * element i is d * q[i], exactly a float), so head dims are multiples of 32
 * and a row of dk elements is dk / 32 blocks. */
enum mha_dtype { MHA_DTYPE_F32 = 0, MHA_DTYPE_F16 = 1, MHA_DTYPE_BF16 = 2,
	MHA_DTYPE_Q8 = 3 };

/* The attention problem a kernel solves, independent of how it is computed:
 * the generation-time facts a caller needs to size and check its buffers. */
struct mha_attn {
	size_t h;        /* query heads */
	size_t kv_heads; /* key/value heads; divides h */
	size_t dk, dv;   /* head dims of q/k and of v/out */
	unsigned mask;   /* MHA_MASK_* bits */
	int align;       /* enum mha_align, for causal */
	int layout;      /* enum mha_layout */
	int packed;      /* enum mha_packed */
	size_t window;   /* 0: none; else a query sees at most this many keys */
	double scale;    /* multiplies q.k */
	/* score modifiers, applied in this order to s = scale * q.k: */
	double softcap;  /* > 0: s = softcap * tanh(s / softcap) */
	int alibi;       /* enum mha_alibi: s -= slope[head] * |i + shift - j| */
	double max_bias; /* MHA_ALIBI_MAX_BIAS: the slopes' rule (ggml) */
	int sinks;       /* 1: a logit per head joins each row's softmax */
	/* a window by position (--window-left, --window-right; FlashAttention's
	 * window_size): with bit MHA_WINDOW_LEFT of window_sides, query i sees
	 * only keys j >= i + shift - window_left; with MHA_WINDOW_RIGHT, only
	 * j <= i + shift + window_right (shift as ALiBi's) */
	int window_sides;
	size_t window_left, window_right;
	unsigned mask_dims; /* MHA_DIMS_* bits of the bias and boolean mask */
	int varlen;         /* enum mha_varlen */
	int kv_dtype;       /* enum mha_dtype: how k and v are stored */
	int dtype;          /* enum mha_dtype: how q and out are stored (f32,
	                     * f16, bf16) */
};

/* The kernel, NAME: out = softmax(q k^T * scale + mask) v per head, every
 * tensor floats (a kernel with --dtype or --kv-dtype f16, bf16 or q8 has no
 * 9-argument form: it takes struct mha_args, whose pointers are of its
 * types).
 * kv_len is read only by kernels with MHA_MASK_PADDING, bias only with
 * MHA_MASK_BIAS (NULL otherwise; its shape per mask_dims); seq_q and seq_kv are ignored when the spec
 * fixed them.  A function type: `mha_kernel_fn NAME;` declares a kernel. */
typedef void mha_kernel_fn(const float *q, const float *k, const float *v,
                           float *out, size_t batch, size_t seq_q,
                           size_t seq_kv, const int32_t *kv_len,
                           const float *bias);

/* NAME_weights of a kernel generated with --weights: the same, also writing
 * the softmax weights [batch][h][seq_q][seq_kv] (0 where masked). */
typedef void mha_weights_fn(const float *q, const float *k, const float *v,
                            float *out, size_t batch, size_t seq_q,
                            size_t seq_kv, const int32_t *kv_len,
                            const float *bias, float *weights);

/* The inputs of one call as one struct: the form the contract grows by.  A
 * new optional input (a mask tensor, per-sequence lengths, slopes) is a new
 * field, appended, NULL or 0 when unused: fill it with a designated
 * initializer (`struct mha_args a = {.q = q, ...}`) so fields added later
 * are 0.  Fields a kernel's spec does not use are ignored.  Every kernel
 * exports NAME_args, taking this struct; a generated file holds its own copy
 * of the definition, between the marks below, under MHA_ARGS_DEFINED. */
/* mha_args: begin */
#ifndef MHA_ARGS_DEFINED
#define MHA_ARGS_DEFINED
/* A host's parallel-for (struct mha_args' parallel): run fn(task, i, worker)
 * for every i in [0, n), on at most `workers` threads at once, each passing
 * its own worker index (0 <= worker < workers), and return when all are
 * done.  pool is the host's, passed back. */
typedef void mha_task_fn(void *task, size_t i, size_t worker);
typedef void mha_parallel_fn(void *pool, size_t n, mha_task_fn *fn,
                             void *task);
/* --kv-dtype q8: one block of 32 elements, ggml's block_q8_0 byte for
 * byte (d: f16 bits; element i is d * qs[i]) */
struct mha_q8_0 {
	uint16_t d;
	int8_t qs[32];
};
struct mha_args {
	/* q and out of the kernel's --dtype: floats (f32, every kernel without
	 * --dtype) or uint16_t bits (f16, bf16); with --packed qkv, q is the
	 * packed buffer of that type */
	const void *q;
	/* k and v as stored, of the kernel's --kv-dtype: floats (f32, every
	 * kernel without --kv-dtype), uint16_t bits (f16, bf16) or struct
	 * mha_q8_0 blocks (q8); with --packed kv, k is the packed buffer of
	 * that type */
	const void *k, *v;
	void *out;
	size_t batch, seq_q, seq_kv;
	const int32_t *kv_len;       /* --mask padding, --varlen padded: keys
	                              * per batch item */
	const float *bias;           /* --mask bias: [seq_q][seq_kv], added;
	                              * --mask-dims puts [batch][h] first */
	float *weights;              /* --weights: [batch][h][seq_q][seq_kv] out */
	const float *alibi_slopes;   /* --alibi: [h], one slope per query head */
	const float *sinks;          /* --sinks: [h], one logit per query head */
	float *lse;                  /* --lse: [batch][h][seq_q] out (--varlen
	                              * packed: [h][total_q]), or NULL */
	/* how the call runs (0 for the defaults: scratch from malloc, and the
	 * work on OpenMP's threads with --threads openmp, else this thread) */
	void *workspace;             /* scratch the caller owns, or NULL */
	size_t workspace_size;       /* its bytes: NAME_workspace(a) or more */
	mha_parallel_fn *parallel;   /* the host's parallel-for, or NULL */
	void *pool;                  /* passed to parallel */
	size_t workers;              /* parallel's workers at most (0: 1) */
	/* --mask bool: bytes shaped as the bias (--mask-dims), nonzero = the
	 * key takes part; --mask keys: [batch][seq_kv], nonzero = takes part */
	const uint8_t *bool_mask;
	const uint8_t *key_mask;
	/* --varlen padded: each sequence's queries (NULL: seq_q each; its keys
	 * are kv_len[b]); --varlen packed: [batch + 1] offsets of the
	 * sequences' rows in q and out, and in k and v (cu_seqlens[0] = 0) */
	const int32_t *q_len;
	const int32_t *cu_seqlens_q, *cu_seqlens_k;
};
#endif
/* mha_args: end */

/* NAME_args: the kernel on the inputs in a (with --weights, NAME_weights
 * when a->weights is set). */
typedef void mha_args_fn(const struct mha_args *a);

/* NAME_merge of a kernel generated with --lse: out and lse hold the result
 * of a call over one set of keys (NAME_args with a->lse set), out2 and lse2
 * that of a call over another set, disjoint; afterwards out and lse are what
 * one call over both sets gives (lse = log(e^lse + e^lse2), out weighted by
 * e^(lse - new lse) and e^(lse2 - new lse); zeros and -inf where both are
 * -inf).  out in the kernel's layout and --dtype (floats, or f16 or bf16
 * bits: rounded once more), lse [batch][h][seq_q]; seq_q is
 * ignored when the spec fixed it. */
typedef void mha_merge_fn(void *out, float *lse, const void *out2,
                          const float *lse2, size_t batch, size_t seq_q);

/* NAME_workspace: the bytes of scratch a call of NAME_args with these
 * settings (parallel, workers; with OpenMP its thread count) takes; 0 when
 * it takes none.  Given a->workspace of that many bytes (any alignment), the
 * kernel allocates nothing; otherwise it takes them from malloc and, should
 * malloc fail, sets every element of out to NaN and errno to ENOMEM. */
typedef size_t mha_workspace_fn(const struct mha_args *a);

/* Call kernel fn (or, when a->weights is set, its NAME_weights wfn) on the
 * inputs in a: the 9-argument form of kernels whose spec needs no other
 * input. */
static inline void mha_call(mha_kernel_fn *fn, mha_weights_fn *wfn,
                            const struct mha_args *a)
{
	if (a->weights)
		wfn(a->q, a->k, a->v, a->out, a->batch, a->seq_q, a->seq_kv,
		    a->kv_len, a->bias, a->weights);
	else
		fn(a->q, a->k, a->v, a->out, a->batch, a->seq_q, a->seq_kv,
		   a->kv_len, a->bias);
}


/* ---- The whole layer: torch.nn.MultiheadAttention's forward (mhagen
 * --embed E).  The input projections, the attention above and the output
 * projection, generated as one file that exports NAME_packed_floats,
 * NAME_pack, NAME_workspace and NAME_forward.  Its files carry their own
 * copy of the two structs between the marks below, under
 * MHA_LAYER_DEFINED. */
/* mha_layer: begin */
#ifndef MHA_LAYER_DEFINED
#define MHA_LAYER_DEFINED
/* nn.MultiheadAttention's parameters as its state_dict holds them, float32,
 * row-major ([out][in], as nn.Linear).  With kdim = vdim = E the layer reads
 * in_proj_weight [3E][E] (the q rows, then k, then v) and ignores
 * q/k/v_proj_weight; with --kdim or --vdim other than E it reads
 * q_proj_weight [E][E], k_proj_weight [E][kdim], v_proj_weight [E][vdim]
 * and ignores in_proj_weight.  in_proj_bias [3E] and out_proj_bias [E] are
 * read unless the layer was generated with --proj-bias false (bias=False).
 * With --kv-heads K (grouped-query projections: k and v of K heads, KE =
 * K * E / h floats) the k and v parts are KE rows: in_proj_weight
 * [E + 2 KE][E], k_proj_weight [KE][kdim], v_proj_weight [KE][vdim],
 * in_proj_bias [E + 2 KE]. */
struct mha_layer_params {
	const float *in_proj_weight;
	const float *in_proj_bias;
	const float *q_proj_weight, *k_proj_weight, *v_proj_weight;
	const float *out_proj_weight;   /* out_proj.weight [E][E] */
	const float *out_proj_bias;     /* out_proj.bias [E] */
	/* --add-bias-kv (add_bias_kv=True): bias_k, bias_v [KE] (PyTorch's
	 * [1, 1, E]), the key and value every row sees after the inputs' */
	const float *bias_k, *bias_v;
};
/* One forward call.  Rows of E floats (kdim, vdim for key, value) in the
 * layer's layout: bshd [batch][seq][E] (batch_first=True), sbhd
 * [seq][batch][E] (batch_first=False). */
struct mha_layer_args {
	const float *query;          /* [batch][seq_q][E] or [seq_q][batch][E] */
	const float *key, *value;    /* --cross: seq_kv rows of kdim and vdim
	                              * floats; without --cross ignored (the
	                              * keys and values are query's rows) */
	float *out;                  /* as query: the layer's output */
	size_t batch, seq_q, seq_kv; /* seq_kv ignored without --cross */
	const float *packed;         /* NAME_pack's output */
	/* the attention's masks, as struct mha_args takes them */
	const int32_t *kv_len;       /* --mask padding */
	const float *bias;           /* --mask bias */
	const uint8_t *bool_mask;    /* --mask bool, nonzero = takes part */
	const uint8_t *key_mask;     /* --mask keys: [batch][seq_kv], nonzero =
	                              * takes part (~key_padding_mask) */
	void *workspace;             /* scratch the caller owns, or NULL */
	size_t workspace_size;       /* its bytes: NAME_workspace(a) or more */
	/* --weights (need_weights=True): the softmax weights, written when
	 * set; 0 where masked, a row that sees no key all 0.  With
	 * --add-bias-kv and --add-zero-attn each row has seq_kv + 1 or + 2
	 * columns, bias_k's then the zero key's last, as PyTorch's */
	float *weights;              /* [batch][seq_q][seq_kv], averaged over
	                              * the heads (average_attn_weights=True) */
	float *head_weights;         /* [batch][h][seq_q][seq_kv], per head
	                              * (average_attn_weights=False) */
	/* --kv-cache N (the decoder step): the caller's cache, [batch][N]
	 * rows of kv_heads * E / h elements of the layer's --kv-dtype
	 * (floats, or uint16_t f16/bf16 bits), keys and values apart;
	 * cache_len[b] positions of item b are filled.  The step writes the
	 * seq_q new tokens' k and v at positions cache_len[b] on and attends
	 * over the cache_len[b] + seq_q positions; it does not change
	 * cache_len (the caller adds seq_q).  With some cache_len[b] < 0 or
	 * cache_len[b] + seq_q > N it writes nothing to the cache, sets every
	 * element of out to NaN and errno to ERANGE. */
	void *k_cache, *v_cache;
	const int32_t *cache_len;
	/* the host's parallel-for, as struct mha_args takes it (NULL: OpenMP's
	 * threads with --threads openmp, else this thread): the projections'
	 * rows, runs of whole micro-tiles, and the attention's work items; the
	 * same bits on any number of workers */
	mha_parallel_fn *parallel;
	void *pool;
	size_t workers;
};
#endif
/* mha_layer: end */

/* NAME_packed_floats: the floats NAME_pack writes.  NAME_pack: the
 * parameters turned once into the layout NAME_forward reads.
 * NAME_workspace: the scratch bytes a forward with a's settings takes (the
 * projections' outputs and the attention's scratch); without a workspace
 * that large the forward takes them from malloc (on failure every element
 * of out is NaN and errno is ENOMEM).  NAME_forward: the layer. */
typedef size_t mha_layer_size_fn(void);
typedef void mha_layer_pack_fn(float *packed, const struct mha_layer_params *p);
typedef size_t mha_layer_workspace_fn(const struct mha_layer_args *a);
typedef void mha_layer_fn(const struct mha_layer_args *a);

/* A layer as its spec fixes it: the generation-time facts. */
struct mha_layer {
	size_t embed, kdim, vdim;  /* E, and the key and value inputs' widths */
	int cross;                 /* 1: query and key/value inputs apart */
	int proj_bias;             /* 1: in_proj_bias and out_proj.bias */
	int weights;               /* 1: --weights, need_weights */
	int add_bias_kv;           /* 1: bias_k, bias_v after the keys */
	int add_zero_attn;         /* 1: a zero key and value after them */
	size_t kv_cache;           /* > 0: the decoder step over a cache of
	                            * this many positions (--kv-cache) */
	struct mha_attn attn;      /* the attention: h, dk = dv = E / h, mask,
	                            * layout (of the inputs), scale */
};

#endif
