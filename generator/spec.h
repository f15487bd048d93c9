/* The attention spec: parsed from flags and spec files, validated, made
 * canonical.  Everything later stages know about a kernel lives here. */
#ifndef MHAGEN_SPEC_H
#define MHAGEN_SPEC_H

#include <stddef.h>

#define MHAGEN_ERR 512     /* size of error message buffers */
#define MHAGEN_NAME_MAX 128

/* Documented limits; the kernel's index arithmetic is size_t throughout. */
#define MHAGEN_MAX_H 1024
#define MHAGEN_MAX_D 4096
#define MHAGEN_MAX_SEQ (1L << 24)
#define MHAGEN_MAX_EMBED 65536 /* --embed, --kdim, --vdim */

struct mha_spec {
	long h, kv_heads, dk, dv;
	long seq_q, seq_kv;      /* 0: dynamic (any length at run time) */
	unsigned mask;           /* MHA_MASK_* bits from runtime/mha_abi.h */
	unsigned mask_dims;      /* MHA_DIMS_* bits: the bias's and boolean
	                          * mask's leading dimensions */
	long window;             /* 0: none; else a row sees its last N keys */
	long window_left;        /* a window by position: keys from i + shift -
	                          * window_left on; -1 unbounded (after finish) */
	long window_right;       /* up to i + shift + window_right; -1 unbounded */
	int align, layout;       /* enum mha_align, enum mha_layout */
	int packed;              /* enum mha_packed: inputs in one buffer */
	int varlen;              /* enum mha_varlen: per-sequence lengths */
	int dtype;               /* enum mha_dtype: how q and out are stored */
	int kv_dtype;            /* enum mha_dtype: how k and v are stored (after
	                          * finish: dtype unless --kv-dtype was given) */
	double scale;            /* 0: default 1/sqrt(dk) */
	char target[64];         /* a target table's name (native resolved), or
	                          * a comma list of them (run-time dispatch) */
	char name[MHAGEN_NAME_MAX]; /* exported symbol; canonical if unset */
	int weights;             /* also export NAME_weights (softmax weights) */
	double softcap;          /* > 0: scores capped, cap * tanh(s / cap) */
	int alibi;               /* ALiBi slopes from the caller (enum mha_alibi) */
	double max_bias;         /* > 0: ALiBi slopes fixed by ggml's rule */
	int sinks;               /* a sink logit per head from the caller */
	int lse;                 /* also write each row's log-sum-exp */
	/* the whole layer (nn.MultiheadAttention), when embed > 0: dk = dv =
	 * embed / h, kv_heads = h (after finish) */
	long embed;              /* E; 0: an attention kernel, no layer */
	long kdim, vdim;         /* key and value inputs' widths (embed) */
	int cross;               /* query and key/value inputs apart */
	int proj_bias;           /* in_proj_bias, out_proj.bias (1 after
	                          * finish unless --proj-bias false) */
	int add_bias_kv;         /* bias_k, bias_v: a key and value after the
	                          * inputs' (add_bias_kv=True) */
	int add_zero_attn;       /* a zero key and value after them */
	long kv_cache;           /* > 0: the decoder step over a KV cache of
	                          * this many positions (--kv-cache) */
	/* tuning knobs (generator/knobs.c); 0 means the target's default
	 * (decided in templates) */
	long block_kv;           /* keys per block */
	long block_q;            /* query rows per work item (tiled) */
	long mq, nk;             /* QK micro-tile: query rows, keys (tiled) */
	long nv;                 /* P.V micro-tile: output columns (tiled;
	                          * > 0 also picks rows in lanes) */
	long unroll_max;         /* head dims up to this are unrolled (rows) */
	long kv_split;           /* key ranges per row, merged after (rows) */
	long algo;               /* enum mha_algo: 0 auto, 1 tiled, 2 rows */
	long threads;            /* 0 none, 1 openmp */
	long exp;                /* 0 accurate, 1 fast */
	unsigned long set;       /* bit per key that was given explicitly */
};

/* Apply one "key = value" setting as a spec file would; 0 or -1. */
int mha_spec_set(struct mha_spec *s, const char *key, const char *val,
                 char *err);

/* Parse spec-file text; name is used in messages.  0 or -1. */
int mha_spec_parse_text(struct mha_spec *s, const char *text,
                        const char *name, char *err);

/* Fill defaults, resolve the native target, validate, and make the
 * canonical name if none was given.  0 or -1 with err filled. */
int mha_spec_finish(struct mha_spec *s, char *err);

/* Start from an empty spec (everything unset). */
void mha_spec_init(struct mha_spec *s);

/* The canonical kernel name of a finished spec (into buf of size n). */
void mha_spec_canonical_name(const struct mha_spec *s, char *buf, size_t n);

/* The flags that reproduce a finished spec, canonical order, no output
 * options: the same spec always gives the same text. */
void mha_spec_command(const struct mha_spec *s, char *buf, size_t n);

/* The spec a tuning record is filed under: the flags of mha_spec_command
 * without "mhagen ", --name and the knobs the tuner varies (mha_knob_tuned);
 * the other knobs stay. */
void mha_spec_tuning_key(const struct mha_spec *s, char *buf, size_t n);

/* 1 when knob key (a spec key such as "block-q") was given explicitly. */
int mha_spec_is_set(const struct mha_spec *s, const char *key);

/* Forget that key was given, so that it may be set again (flags override
 * a spec file's settings). */
void mha_spec_unset(struct mha_spec *s, const char *key);

/* 1 when key is a spec key (a flag without "--"); when it is a switch (a
 * flag that may stand alone: --weights). */
int mha_spec_is_key(const char *key);
int mha_spec_is_switch(const char *key);

/* The --mask word of each mask bit (runtime/mha_abi.h, MHA_MASK_LIST). */
extern const char *const mha_mask_words[];

/* The --layout, --packed, --varlen and --kv-dtype words by enum value,
 * NULL-terminated. */
extern const char *const mha_layout_words[];
extern const char *const mha_packed_words[];
extern const char *const mha_varlen_words[];
extern const char *const mha_dtype_words[];

/* Append printf-style text to the NUL-terminated buf of size n, cutting it
 * short when it does not fit. */
void mha_append(char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The effective scale of a finished spec. */
double mha_spec_scale(const struct mha_spec *s);

#endif
