/* The attention spec: its keys, parsing one setting or a spec file, validation,
 * the canonical name and command. */
#include "spec.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/mha_abi.h"
#include "fail.h"
#include "gen.h"
#include "knobs.h"

enum kind { K_INT, K_MASK, K_DIMS, K_ALIGN, K_LAYOUT, K_PACKED, K_VARLEN, K_DTYPE, K_QDTYPE, K_REAL,
	K_TARGET, K_NAME, K_BOOL };

/* The masks' words, by bit (ORDER MASK). */
const char *const mha_mask_words[MHA_MASK_N] = {
#define MHA_X(name, word) #word,
	MHA_MASK_LIST(MHA_X)
#undef MHA_X
};

/* The --layout, --packed, --varlen and --kv-dtype words, by enum value
 * (ORDER: enum mha_layout, enum mha_packed, enum mha_varlen, enum
 * mha_dtype). */
const char *const mha_layout_words[] = {"bshd", "bhsd", "sbhd", NULL};
const char *const mha_packed_words[] = {"none", "qkv", "kv", NULL};
const char *const mha_varlen_words[] = {"none", "padded", "packed", NULL};
const char *const mha_dtype_words[] = {"f32", "f16", "bf16", "q8", NULL};

/* Every spec key but the knobs (generator/knobs.c); flags are "--" + key,
 * spec files use the key itself. */
static const struct key {
	const char *name;
	enum kind kind;
	size_t off; /* of the long (K_INT), int (K_BOOL) or double (K_REAL) field */
	long min, max;
} keys[] = {
	{"h", K_INT, offsetof(struct mha_spec, h), 1, MHAGEN_MAX_H},
	{"kv-heads", K_INT, offsetof(struct mha_spec, kv_heads), 1, MHAGEN_MAX_H},
	{"dk", K_INT, offsetof(struct mha_spec, dk), 1, MHAGEN_MAX_D},
	{"dv", K_INT, offsetof(struct mha_spec, dv), 1, MHAGEN_MAX_D},
	{"seq", K_INT, offsetof(struct mha_spec, seq_q), 1, MHAGEN_MAX_SEQ},
	{"seq-kv", K_INT, offsetof(struct mha_spec, seq_kv), 1, MHAGEN_MAX_SEQ},
	{"mask", K_MASK, 0, 0, 0},
	{"mask-dims", K_DIMS, 0, 0, 0},
	{"window", K_INT, offsetof(struct mha_spec, window), 1, MHAGEN_MAX_SEQ},
	{"window-left", K_INT, offsetof(struct mha_spec, window_left), -1,
	 MHAGEN_MAX_SEQ},
	{"window-right", K_INT, offsetof(struct mha_spec, window_right), -1,
	 MHAGEN_MAX_SEQ},
	{"causal-align", K_ALIGN, 0, 0, 0},
	{"layout", K_LAYOUT, 0, 0, 0},
	{"packed", K_PACKED, 0, 0, 0},
	{"varlen", K_VARLEN, 0, 0, 0},
	{"dtype", K_QDTYPE, 0, 0, 0},
	{"kv-dtype", K_DTYPE, 0, 0, 0},
	{"scale", K_REAL, offsetof(struct mha_spec, scale), 0, 0},
	{"target", K_TARGET, 0, 0, 0},
	{"name", K_NAME, 0, 0, 0},
	{"weights", K_BOOL, offsetof(struct mha_spec, weights), 0, 0},
	{"softcap", K_REAL, offsetof(struct mha_spec, softcap), 0, 0},
	{"alibi", K_BOOL, offsetof(struct mha_spec, alibi), 0, 0},
	{"max-bias", K_REAL, offsetof(struct mha_spec, max_bias), 0, 0},
	{"sinks", K_BOOL, offsetof(struct mha_spec, sinks), 0, 0},
	{"lse", K_BOOL, offsetof(struct mha_spec, lse), 0, 0},
	{"embed", K_INT, offsetof(struct mha_spec, embed), 1, MHAGEN_MAX_EMBED},
	{"kdim", K_INT, offsetof(struct mha_spec, kdim), 1, MHAGEN_MAX_EMBED},
	{"vdim", K_INT, offsetof(struct mha_spec, vdim), 1, MHAGEN_MAX_EMBED},
	{"cross", K_BOOL, offsetof(struct mha_spec, cross), 0, 0},
	{"proj-bias", K_BOOL, offsetof(struct mha_spec, proj_bias), 0, 0},
	{"add-bias-kv", K_BOOL, offsetof(struct mha_spec, add_bias_kv), 0, 0},
	{"add-zero-attn", K_BOOL, offsetof(struct mha_spec, add_zero_attn), 0, 0},
	{"kv-cache", K_INT, offsetof(struct mha_spec, kv_cache), 1, MHAGEN_MAX_SEQ},
};
#define NKEYS (sizeof keys / sizeof keys[0])

/* A bit of mha_spec.set per key given: the knobs' ids, then keys[]. */
_Static_assert(MHA_KNOB_N + NKEYS <= sizeof(unsigned long) * CHAR_BIT,
               "a bit of mha_spec.set per spec key");

void mha_spec_init(struct mha_spec *s)
{
	memset(s, 0, sizeof *s);
}

/* The bit of mha_spec.set for spec key name: a knob's id, else
 * MHA_KNOB_N + its index in keys[]; -1 when name is no spec key. */
static int bit_of(const char *name)
{
	int k = mha_knob_find(name);

	if (k >= 0)
		return k;
	for (size_t i = 0; i < NKEYS; ++i)
		if (strcmp(keys[i].name, name) == 0)
			return MHA_KNOB_N + (int)i;
	return -1;
}

/* The entry of keys[] for name, or NULL (for a knob too). */
static const struct key *find_key(const char *name)
{
	int b = bit_of(name);

	return b >= MHA_KNOB_N ? &keys[b - MHA_KNOB_N] : NULL;
}

/* A whole number of flag --name from min to max. */
static int parse_long(const char *name, long min, long max, const char *val,
                      long *out, char *err)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(val, &end, 10);
	if (end == val || *end != '\0' || val[0] == '+' ||
	    isspace((unsigned char)val[0]))
		return mhagen_fail(err, "--%s: '%s' is not a whole number", name, val);
	if ((errno == ERANGE || x < min || x > max) && min == -1)
		return mhagen_fail(err, "--%s: %s is out of range (0 to %ld, or -1 "
		                   "for unbounded)", name, val, max);
	if (errno == ERANGE || x < min || x > max)
		return mhagen_fail(err, "--%s: %s is out of range (%ld to %ld)",
		            name, val, min, max);
	*out = x;
	return 0;
}

/* Mask words, comma separated, each at most once: none alone, or any of
 * the masks' words (runtime/mha_abi.h, MHA_MASK_LIST). */
static int parse_mask(const char *val, unsigned *out, char *err)
{
	unsigned m = 0;
	const char *p = val;

	if (strcmp(val, "none") == 0) {
		*out = 0;
		return 0;
	}
	for (;;) {
		size_t n = strcspn(p, ",");
		int i;
		for (i = 0; i < MHA_MASK_N; ++i)
			if (strlen(mha_mask_words[i]) == n &&
			    strncmp(p, mha_mask_words[i], n) == 0)
				break;
		if (i == MHA_MASK_N) {
			char list[256] = "";
			for (int j = 0; j < MHA_MASK_N; ++j)
				mha_append(list, sizeof list, "%s%s", j ? ", " : "",
				           mha_mask_words[j]);
			return mhagen_fail(err, "--mask: unknown mask '%.*s' in '%s' "
			                   "(none, or a comma list of %s)", (int)n, p,
			                   val, list);
		}
		if (m & (1u << i))
			return mhagen_fail(err, "--mask: '%s' names %s twice", val,
			                   mha_mask_words[i]);
		m |= 1u << i;
		if (p[n] == '\0')
			break;
		p += n + 1;
	}
	*out = m;
	return 0;
}

/* --mask-dims: none, or b, h or both as a comma list in that order (the
 * bias's and boolean mask's leading dimensions, runtime/mha_abi.h). */
static int parse_dims(const char *val, unsigned *out, char *err)
{
	static const char *const words[] = {"none", "b", "h", "b,h"};

	for (unsigned i = 0; i < 4; ++i)
		if (strcmp(val, words[i]) == 0) {
			*out = i; /* MHA_DIMS_BATCH 1, MHA_DIMS_HEAD 2 */
			return 0;
		}
	return mhagen_fail(err, "--mask-dims: unknown value '%s' (none, b, h "
	                   "or b,h: the bias's and boolean mask's leading "
	                   "[batch][h] dimensions)", val);
}

/* One of the NULL-terminated words w; its index into *out. */
static int parse_word(const char *key, const char *val, const char *const *w,
                      int *out, char *err)
{
	for (int i = 0; w[i]; ++i)
		if (strcmp(val, w[i]) == 0) {
			*out = i;
			return 0;
		}
	return mhagen_fail(err, "--%s: unknown value '%s'", key, val);
}

/* Knob k of s from its value as text. */
static int set_knob(struct mha_spec *s, int k, const char *val, char *err)
{
	const struct mha_knob_def *d = &mha_knob_table[k];
	long v;

	if (d->words) {
		int i = 0;
		if (parse_word(d->key, val, d->words, &i, err))
			return -1;
		v = i;
	} else if (parse_long(d->key, d->min, d->max, val, &v, err))
		return -1;
	mha_knob_put(s, k, v);
	return 0;
}

int mha_spec_set(struct mha_spec *s, const char *key, const char *val,
                 char *err)
{
	static const char *const aligns[] = {"bottom-right", "top-left", NULL};
	int b = bit_of(key);
	const struct key *k;

	if (b < 0)
		return mhagen_fail(err, "unknown setting '%s'", key);
	if (s->set & (1ul << b))
		return mhagen_fail(err, "--%s is given twice (again as '%s')", key, val);
	s->set |= 1ul << b;
	if (b < MHA_KNOB_N)
		return set_knob(s, b, val, err);
	k = &keys[b - MHA_KNOB_N];
	switch (k->kind) {
	case K_INT:
		return parse_long(k->name, k->min, k->max, val,
		                  (long *)((char *)s + k->off), err);
	case K_MASK:
		return parse_mask(val, &s->mask, err);
	case K_DIMS:
		return parse_dims(val, &s->mask_dims, err);
	case K_ALIGN:
		return parse_word(key, val, aligns, &s->align, err);
	case K_LAYOUT:
		return parse_word(key, val, mha_layout_words, &s->layout, err);
	case K_PACKED:
		return parse_word(key, val, mha_packed_words, &s->packed, err);
	case K_VARLEN:
		return parse_word(key, val, mha_varlen_words, &s->varlen, err);
	case K_DTYPE:
		if (parse_word(key, val, mha_dtype_words, &s->kv_dtype, err))
			return mhagen_fail(err, "--kv-dtype: unknown value '%s' (f32, "
			                   "f16, bf16 or q8)", val);
		return 0;
	case K_QDTYPE:
		if (parse_word(key, val, mha_dtype_words, &s->dtype, err) ||
		    s->dtype == MHA_DTYPE_Q8)
			return mhagen_fail(err, "--dtype: unknown value '%s' (f32, f16 "
			                   "or bf16; q8 stores only keys and values: "
			                   "--kv-dtype q8)", val);
		return 0;
	case K_TARGET: {
		/* a name of a target table, or a comma list of them, checked
		 * when they are loaded */
		size_t n = strlen(val);
		int ok = n > 0 && n < sizeof s->target && val[0] >= 'a' &&
		         val[0] <= 'z';
		for (size_t i = 0; ok && i < n; ++i)
			ok = (val[i] >= 'a' && val[i] <= 'z') ||
			     (val[i] >= '0' && val[i] <= '9') || val[i] == '_' ||
			     val[i] == ',';
		if (!ok)
			return mhagen_fail(err, "--target: unknown target '%s'", val);
		memcpy(s->target, val, n + 1);
		return 0;
	}
	case K_BOOL: {
		int *field = (int *)((char *)s + k->off);
		if (strcmp(val, "true") != 0 && strcmp(val, "false") != 0)
			return mhagen_fail(err, "--%s: '%s' is not true or false", key, val);
		*field = val[0] == 't';
		return 0;
	}
	case K_NAME: {
		size_t n = strlen(val);
		if (n == 0 || n >= MHAGEN_NAME_MAX)
			return mhagen_fail(err, "--name: '%s' must be 1 to %d characters",
			            val, MHAGEN_NAME_MAX - 1);
		for (size_t i = 0; i < n; ++i) {
			char c = val[i];
			int ok = c == '_' || (c >= 'a' && c <= 'z') ||
			         (c >= 'A' && c <= 'Z') || (i && c >= '0' && c <= '9');
			if (!ok)
				return mhagen_fail(err, "--name: '%s' is not a C identifier", val);
		}
		memcpy(s->name, val, n + 1);
		return 0;
	}
	case K_REAL: {
		/* a positive number, kept as the float the kernel uses */
		char *end;
		double x;
		errno = 0;
		x = strtod(val, &end);
		if (end == val || *end != '\0')
			return mhagen_fail(err, "--%s: '%s' is not a number", key, val);
		if (!(x > 0.0) || !isfinite(x) || x > 1e30 || x < 1e-30)
			return mhagen_fail(err, "--%s: %s must be a positive finite number",
			            key, val);
		*(double *)((char *)s + k->off) = x;
		return 0;
	}
	}
	return mhagen_fail(err, "internal: unhandled key '%s'", key);
}

static char *trim(char *p)
{
	char *e;

	while (*p == ' ' || *p == '\t')
		++p;
	e = p + strlen(p);
	while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return p;
}

int mha_spec_parse_text(struct mha_spec *s, const char *text,
                        const char *name, char *err)
{
	char line[1024];
	int lineno = 0;
	const char *p = text;

	while (*p) {
		size_t n = strcspn(p, "\n");
		char *eq, *key, *val;
		char sub[MHAGEN_ERR];
		++lineno;
		if (n >= sizeof line)
			return mhagen_fail(err, "%s:%d: line too long (over %d characters)",
			            name, lineno, (int)sizeof line - 1);
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (p[n] == '\n');
		key = line;
		key[strcspn(key, "#")] = '\0';
		key = trim(key);
		if (*key == '\0')
			continue;
		eq = strchr(key, '=');
		if (!eq)
			return mhagen_fail(err, "%s:%d: expected 'key = value', got '%s'",
			            name, lineno, key);
		*eq = '\0';
		val = trim(eq + 1);
		key = trim(key);
		if (mha_spec_set(s, key, val, sub))
			return mhagen_fail(err, "%s:%d: %s", name, lineno, sub);
	}
	return 0;
}

double mha_spec_scale(const struct mha_spec *s)
{
	return s->scale > 0.0 ? s->scale : 1.0 / sqrt((double)s->dk);
}

void mha_append(char *buf, size_t n, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, n - len, fmt, ap);
	va_end(ap);
}

/* The bits of x rounded to float, for names. */
static unsigned float_bits(double x)
{
	float f = (float)x;
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return (unsigned)u;
}

void mha_spec_canonical_name(const struct mha_spec *s, char *buf, size_t n)
{
	buf[0] = '\0';
	if (s->embed) {
		/* a layer: its widths, the head dims follow from them */
		mha_append(buf, n, "mha_layer_f32_");
		if (s->kv_dtype)
			mha_append(buf, n, "%skv_", mha_dtype_words[s->kv_dtype]);
		mha_append(buf, n, "e%ld_h%ld", s->embed, s->h);
		if (s->kv_heads != s->h)
			mha_append(buf, n, "_kv%ld", s->kv_heads);
		if (s->kv_cache)
			mha_append(buf, n, "_cache%ld", s->kv_cache);
		if (s->add_bias_kv)
			mha_append(buf, n, "_biaskv");
		if (s->add_zero_attn)
			mha_append(buf, n, "_zeroattn");
		if (s->kdim != s->embed)
			mha_append(buf, n, "_kdim%ld", s->kdim);
		if (s->vdim != s->embed)
			mha_append(buf, n, "_vdim%ld", s->vdim);
		if (s->cross)
			mha_append(buf, n, "_cross");
		if (!s->proj_bias)
			mha_append(buf, n, "_nobias");
	} else {
		/* the storage of q and out (--dtype), then of k and v when it
		 * differs (--kv-dtype): mha_f16_, mha_f32_f16kv_, mha_f32_q8kv_ */
		mha_append(buf, n, "mha_%s_", mha_dtype_words[s->dtype]);
		if (s->kv_dtype != s->dtype)
			mha_append(buf, n, "%skv_", mha_dtype_words[s->kv_dtype]);
		mha_append(buf, n, "h%ld", s->h);
		if (s->kv_heads != s->h)
			mha_append(buf, n, "_kv%ld", s->kv_heads);
		mha_append(buf, n, "_dk%ld", s->dk);
		if (s->dv != s->dk)
			mha_append(buf, n, "_dv%ld", s->dv);
	}
	if (s->seq_q && s->seq_q == s->seq_kv)
		mha_append(buf, n, "_s%ld", s->seq_q);
	else {
		if (s->seq_q)
			mha_append(buf, n, "_q%ld", s->seq_q);
		if (s->seq_kv)
			mha_append(buf, n, "_kv_s%ld", s->seq_kv);
	}
	for (int i = 0; i < MHA_MASK_N; ++i) {
		if (!(s->mask & (1u << i)))
			continue;
		mha_append(buf, n, "_%s", mha_mask_words[i]);
		/* the causal diagonal's alignment goes with it */
		if (1u << i == MHA_MASK_CAUSAL && s->align == MHA_ALIGN_TOP_LEFT)
			mha_append(buf, n, "_tl");
	}
	if (s->mask_dims)
		mha_append(buf, n, "_dims%s%s",
		           s->mask_dims & MHA_DIMS_BATCH ? "b" : "",
		           s->mask_dims & MHA_DIMS_HEAD ? "h" : "");
	if (s->window)
		mha_append(buf, n, "_w%ld", s->window);
	if (s->window_left >= 0)
		mha_append(buf, n, "_wl%ld", s->window_left);
	if (s->window_right >= 0)
		mha_append(buf, n, "_wr%ld", s->window_right);
	if (s->layout != MHA_LAYOUT_BSHD)
		mha_append(buf, n, "_%s", mha_layout_words[s->layout]);
	if (s->packed)
		mha_append(buf, n, "_%spacked", mha_packed_words[s->packed]);
	if (s->varlen)
		mha_append(buf, n, "_varlen%s",
		           s->varlen == MHA_VARLEN_PACKED ? "packed" : "");
	if (s->scale > 0.0)
		mha_append(buf, n, "_sc%08x", float_bits(s->scale));
	/* score modifiers: numbers as their float's bits, like the scale */
	if (s->softcap > 0.0)
		mha_append(buf, n, "_cap%08x", float_bits(s->softcap));
	if (s->alibi)
		mha_append(buf, n, "_alibi");
	if (s->max_bias > 0.0)
		mha_append(buf, n, "_mb%08x", float_bits(s->max_bias));
	if (s->sinks)
		mha_append(buf, n, "_sinks");
	if (s->lse)
		mha_append(buf, n, "_lse");
	if (s->weights)
		mha_append(buf, n, "_weights");
	/* the knobs given: a number after its tag, a word unless the first */
	for (int k = 0; k < MHA_KNOB_N; ++k) {
		const struct mha_knob_def *d = &mha_knob_table[k];
		long v = mha_knob_get(s, k);
		if (!(s->set & (1ul << k)))
			continue;
		if (!d->words)
			mha_append(buf, n, "_%s%ld", d->tag, v);
		else if (v)
			mha_append(buf, n, "_%s%s", d->tag, d->words[v]);
	}
	/* a target list's names joined by '_': __avx512_avx2_scalar */
	mha_append(buf, n, "__");
	for (const char *t = s->target; *t; ++t)
		mha_append(buf, n, "%c", *t == ',' ? '_' : *t);
}

void mha_spec_command(const struct mha_spec *s, char *buf, size_t n)
{
	int first = 1;

	buf[0] = '\0';
	if (s->embed) {
		mha_append(buf, n, "mhagen --embed %ld --h %ld", s->embed, s->h);
		if (s->kv_heads != s->h)
			mha_append(buf, n, " --kv-heads %ld", s->kv_heads);
		if (s->kdim != s->embed)
			mha_append(buf, n, " --kdim %ld", s->kdim);
		if (s->vdim != s->embed)
			mha_append(buf, n, " --vdim %ld", s->vdim);
		if (s->cross)
			mha_append(buf, n, " --cross");
		if (!s->proj_bias)
			mha_append(buf, n, " --proj-bias false");
		if (s->kv_cache)
			mha_append(buf, n, " --kv-cache %ld", s->kv_cache);
		if (s->add_bias_kv)
			mha_append(buf, n, " --add-bias-kv");
		if (s->add_zero_attn)
			mha_append(buf, n, " --add-zero-attn");
	} else {
		mha_append(buf, n, "mhagen --h %ld", s->h);
		if (s->kv_heads != s->h)
			mha_append(buf, n, " --kv-heads %ld", s->kv_heads);
		mha_append(buf, n, " --dk %ld", s->dk);
		if (s->dv != s->dk)
			mha_append(buf, n, " --dv %ld", s->dv);
	}
	if (s->seq_q)
		mha_append(buf, n, " --seq %ld", s->seq_q);
	if (s->seq_kv && s->seq_kv != s->seq_q)
		mha_append(buf, n, " --seq-kv %ld", s->seq_kv);
	if (s->mask) {
		mha_append(buf, n, " --mask ");
		for (int i = 0; i < MHA_MASK_N; ++i)
			if (s->mask & (1u << i)) {
				mha_append(buf, n, "%s%s", first ? "" : ",",
				           mha_mask_words[i]);
				first = 0;
			}
	}
	if (s->mask_dims)
		mha_append(buf, n, " --mask-dims %s%s%s",
		           s->mask_dims & MHA_DIMS_BATCH ? "b" : "",
		           s->mask_dims == (MHA_DIMS_BATCH | MHA_DIMS_HEAD) ? "," : "",
		           s->mask_dims & MHA_DIMS_HEAD ? "h" : "");
	if (s->window)
		mha_append(buf, n, " --window %ld", s->window);
	if (s->window_left >= 0)
		mha_append(buf, n, " --window-left %ld", s->window_left);
	if (s->window_right >= 0)
		mha_append(buf, n, " --window-right %ld", s->window_right);
	if ((s->mask & MHA_MASK_CAUSAL) && s->align == MHA_ALIGN_TOP_LEFT)
		mha_append(buf, n, " --causal-align top-left");
	if (s->layout != MHA_LAYOUT_BSHD)
		mha_append(buf, n, " --layout %s", mha_layout_words[s->layout]);
	if (s->packed)
		mha_append(buf, n, " --packed %s", mha_packed_words[s->packed]);
	if (s->varlen)
		mha_append(buf, n, " --varlen %s", mha_varlen_words[s->varlen]);
	if (s->dtype)
		mha_append(buf, n, " --dtype %s", mha_dtype_words[s->dtype]);
	if (s->kv_dtype != s->dtype)
		mha_append(buf, n, " --kv-dtype %s", mha_dtype_words[s->kv_dtype]);
	if (s->scale > 0.0)
		mha_append(buf, n, " --scale %a", (double)(float)s->scale);
	if (s->softcap > 0.0)
		mha_append(buf, n, " --softcap %a", (double)(float)s->softcap);
	if (s->alibi)
		mha_append(buf, n, " --alibi");
	if (s->max_bias > 0.0)
		mha_append(buf, n, " --max-bias %a", (double)(float)s->max_bias);
	if (s->sinks)
		mha_append(buf, n, " --sinks");
	if (s->lse)
		mha_append(buf, n, " --lse");
	if (s->weights)
		mha_append(buf, n, " --weights");
	for (int k = 0; k < MHA_KNOB_N; ++k) {
		char v[24];
		if (s->set & (1ul << k))
			mha_append(buf, n, " --%s %s", mha_knob_table[k].key,
			           mha_knob_text(s, k, v, sizeof v));
	}
	mha_append(buf, n, " --target %s", s->target);
	if (mha_spec_is_set(s, "name"))
		mha_append(buf, n, " --name %s", s->name);
}

void mha_spec_tuning_key(const struct mha_spec *s, char *buf, size_t n)
{
	struct mha_spec c = *s;
	char tmp[1024];

	for (int k = 0; k < MHA_KNOB_N; ++k)
		if (mha_knob_tuned(k))
			c.set &= ~(1ul << k);
	mha_spec_unset(&c, "name");
	mha_spec_command(&c, tmp, sizeof tmp);
	snprintf(buf, n, "%s", tmp + strlen("mhagen "));
}

void mha_spec_unset(struct mha_spec *s, const char *key)
{
	int b = bit_of(key);

	if (b >= 0)
		s->set &= ~(1ul << b);
}

int mha_spec_is_key(const char *key)
{
	return bit_of(key) >= 0;
}

int mha_spec_is_switch(const char *key)
{
	const struct key *k = find_key(key);

	return k && k->kind == K_BOOL;
}

int mha_spec_is_set(const struct mha_spec *s, const char *key)
{
	int b = bit_of(key);

	return b >= 0 && (s->set & (1ul << b)) != 0;
}

/* The window by position (--window-left, --window-right): a side not given
 * or -1 is unbounded, as FlashAttention's window_size.  Causal bounds the
 * right side at 0 already, so with causal a right side is dropped (as
 * FlashAttention sets it to 0): the same kernel, the same name. */
static int window_sides(struct mha_spec *s, char *err)
{
	int l = mha_spec_is_set(s, "window-left");
	int r = mha_spec_is_set(s, "window-right");

	if (!l)
		s->window_left = -1;
	if (!r)
		s->window_right = -1;
	if (s->window && (l || r))
		return mhagen_fail(err, "--window-%s: --window N counts N keys back "
		                   "from a row's causal limit; give it or "
		                   "--window-left/--window-right, not both",
		                   l ? "left" : "right");
	if (s->mask & MHA_MASK_CAUSAL)
		s->window_right = -1;
	return 0;
}

/* Packed inputs (--packed): rows of positions, so bshd or sbhd; qkv holds
 * the queries' and keys' heads at the same positions (one length) and, as
 * FlashAttention's qkvpacked, one head dim. */
static int packing(struct mha_spec *s, char *err)
{
	if (!s->packed)
		return 0;
	if (s->layout == MHA_LAYOUT_BHSD)
		return mhagen_fail(err, "--packed %s: packed rows are positions "
		                   "of [batch][seq] or [seq][batch]; use --layout "
		                   "bshd or sbhd, not bhsd",
		                   mha_packed_words[s->packed]);
	if (s->packed != MHA_PACKED_QKV)
		return 0;
	if (s->dv != s->dk)
		return mhagen_fail(err, "--packed qkv: q, k and v share one head "
		                   "dim; --dv %ld differs from --dk %ld (pack k "
		                   "and v alone with --packed kv)", s->dv, s->dk);
	if (s->seq_kv != s->seq_q)
		return mhagen_fail(err, "--packed qkv: keys lie at the queries' "
		                   "positions; give --seq alone, not --seq-kv");
	return 0;
}

/* Variable-length batches (--varlen): padded reads each sequence's keys
 * from kv_len, so not with --mask padding as well; packed rows are the
 * sequences' positions one after another ([total][heads][d], bshd, no
 * --packed), and a bias, a boolean mask or weights would need the padded
 * [seq_q][seq_kv] planes that packing does away with. */
static int varlen(const struct mha_spec *s, char *err)
{
	if (s->varlen == MHA_VARLEN_PADDED && (s->mask & MHA_MASK_PADDING))
		return mhagen_fail(err, "--varlen padded: reads each sequence's "
		                   "keys from kv_len already; drop padding from "
		                   "--mask");
	if (s->varlen != MHA_VARLEN_PACKED)
		return 0;
	if (s->layout != MHA_LAYOUT_BSHD)
		return mhagen_fail(err, "--varlen packed: sequences are rows "
		                   "[total][heads][d] one after another; --layout "
		                   "%s does not apply (bshd only)",
		                   mha_layout_words[s->layout]);
	if (s->packed)
		return mhagen_fail(err, "--varlen packed: not with --packed %s "
		                   "(q, k and v are separate [total][heads][d] "
		                   "buffers)", mha_packed_words[s->packed]);
	if (s->mask & (MHA_MASK_BIAS | MHA_MASK_BOOL))
		return mhagen_fail(err, "--varlen packed: the bias and the boolean "
		                   "mask are padded [seq_q][seq_kv] planes; use "
		                   "--varlen padded, or --mask keys");
	if (s->weights)
		return mhagen_fail(err, "--varlen packed: no --weights (padded "
		                   "[seq_q][seq_kv] rows; FlashAttention's varlen "
		                   "returns none either); use --varlen padded");
	return 0;
}

/* The decoder step (--embed with --kv-cache N): self-attention of the new
 * tokens over a caller-owned cache of N positions per batch item, rows
 * [batch][N][kv_heads][E / h] (bshd); causal, bottom-right per item (new
 * token s of item b sees the cache_len[b] cached positions and the new
 * tokens up to s).  The masks and settings it does not take are refused.
 * 0 or -1 with err. */
static int decoder_step(struct mha_spec *s, char *err)
{
	if (s->cross)
		return mhagen_fail(err, "--kv-cache: the decoder step is "
		                   "self-attention (its keys and values are the new "
		                   "tokens' and the cache's); drop --cross");
	if (s->layout != MHA_LAYOUT_BSHD)
		return mhagen_fail(err, "--kv-cache: the step's inputs and cache "
		                   "are [batch][seq][E] rows (bshd, batch_first="
		                   "True); --layout %s does not apply",
		                   mha_layout_words[s->layout]);
	if (s->mask & ~MHA_MASK_CAUSAL)
		return mhagen_fail(err, "--kv-cache: the step is causal over the "
		                   "cache's lengths (cache_len); --mask takes only "
		                   "causal here");
	if (s->align == MHA_ALIGN_TOP_LEFT)
		return mhagen_fail(err, "--causal-align top-left: the step's new "
		                   "tokens follow the cache (bottom-right)");
	if (s->seq_kv)
		return mhagen_fail(err, "--seq-kv: the step's keys are the cache's "
		                   "positions; its size is --kv-cache");
	if (s->add_bias_kv || s->add_zero_attn)
		return mhagen_fail(err, "--%s: not with --kv-cache (the step's "
		                   "keys are the cache's)", s->add_bias_kv ?
		                   "add-bias-kv" : "add-zero-attn");
	if (s->weights)
		return mhagen_fail(err, "--weights: not with --kv-cache (the "
		                   "decoder step returns no attention weights)");
	if (s->seq_q > s->kv_cache)
		return mhagen_fail(err, "--seq %ld: more new tokens than the cache "
		                   "holds (--kv-cache %ld)", s->seq_q, s->kv_cache);
	s->mask |= MHA_MASK_CAUSAL;
	return 0;
}

/* The whole layer (--embed E): nn.MultiheadAttention's heads split E, so
 * dk = dv = E / h; kv_heads = h unless --kv-heads asks for grouped-query
 * projections (k and v of kv_heads heads); key and value inputs of other widths
 * (--kdim, --vdim) come only with --cross; the attention features the layer
 * does not carry yet are refused.  Without --embed the layer's keys are
 * refused.  0 or -1 with err. */
static int layer(struct mha_spec *s, char *err)
{
	static const char *const layer_only[] = {"kdim", "vdim", "cross",
		"proj-bias", "kv-cache", "add-bias-kv", "add-zero-attn"};
	static const char *const derived[] = {"dk", "dv"};
	static const char *const not_yet[] = {"packed", "varlen", "lse",
		"alibi", "max-bias", "sinks", "softcap", "window", "window-left",
		"window-right"};

	if (!s->embed) {
		for (size_t i = 0; i < sizeof layer_only / sizeof *layer_only; ++i)
			if (mha_spec_is_set(s, layer_only[i]))
				return mhagen_fail(err, "--%s: a layer's setting; needs "
				                   "--embed E", layer_only[i]);
		return 0;
	}
	if (!s->h)
		return mhagen_fail(err, "--h is required (number of query heads)");
	for (size_t i = 0; i < sizeof derived / sizeof *derived; ++i)
		if (mha_spec_is_set(s, derived[i]))
			return mhagen_fail(err, "--%s: a layer's heads are --embed / "
			                   "--h wide; drop --%s", derived[i], derived[i]);
	for (size_t i = 0; i < sizeof not_yet / sizeof *not_yet; ++i)
		if (mha_spec_is_set(s, not_yet[i]))
			return mhagen_fail(err, "--%s: not with --embed (the layer "
			                   "does not carry it yet)", not_yet[i]);
	if (s->embed % s->h)
		return mhagen_fail(err, "--embed: %ld is not divisible by --h %ld "
		                   "(each head takes embed / h)", s->embed, s->h);
	if (s->embed / s->h > MHAGEN_MAX_D)
		return mhagen_fail(err, "--embed: heads of %ld / %ld = %ld floats "
		                   "exceed the head dim limit %d; more --h",
		                   s->embed, s->h, s->embed / s->h, MHAGEN_MAX_D);
	if (s->kv_cache && decoder_step(s, err))
		return -1;
	if (!s->cross && (mha_spec_is_set(s, "kdim") ||
	                  mha_spec_is_set(s, "vdim") || s->seq_kv))
		return mhagen_fail(err, "--%s: self-attention's keys and values "
		                   "are the query's rows; add --cross for key and "
		                   "value inputs of their own",
		                   mha_spec_is_set(s, "kdim") ? "kdim" :
		                   mha_spec_is_set(s, "vdim") ? "vdim" : "seq-kv");
	if (s->layout == MHA_LAYOUT_BHSD)
		return mhagen_fail(err, "--layout bhsd: a layer's inputs are rows "
		                   "of E floats; bshd (batch_first=True) or sbhd "
		                   "(batch_first=False)");
	if (strchr(s->target, ','))
		return mhagen_fail(err, "--target %s: a layer takes one target",
		                   s->target);
	if (s->dtype)
		return mhagen_fail(err, "--dtype %s: a layer's inputs, weights and "
		                   "outputs are floats; --kv-dtype stores its KV "
		                   "cache", mha_dtype_words[s->dtype]);
	if (s->kv_dtype && !s->kv_cache)
		return mhagen_fail(err, "--kv-dtype %s: a layer stores k and v only "
		                   "in its KV cache; add --kv-cache N (the decoder "
		                   "step)", mha_dtype_words[s->kv_dtype]);
	if (!s->kdim)
		s->kdim = s->embed;
	if (!s->vdim)
		s->vdim = s->embed;
	if (!mha_spec_is_set(s, "proj-bias"))
		s->proj_bias = 1;
	s->dk = s->dv = s->embed / s->h;
	if (!s->kv_heads)
		s->kv_heads = s->h;
	return 0;
}

int mha_spec_finish(struct mha_spec *s, char *err)
{
	if (layer(s, err))
		return -1;
	/* k and v are stored as q and out unless --kv-dtype says otherwise */
	if (!mha_spec_is_set(s, "kv-dtype"))
		s->kv_dtype = s->dtype;
	if (!s->h)
		return mhagen_fail(err, "--h is required (number of query heads)");
	if (!s->dk)
		return mhagen_fail(err, "--dk is required (head dimension of q and k)");
	if (!s->kv_heads)
		s->kv_heads = s->h;
	if (!s->dv)
		s->dv = s->dk;
	if (s->h % s->kv_heads)
		return mhagen_fail(err, "--kv-heads: %ld does not divide --h %ld",
		            s->kv_heads, s->h);
	if (s->seq_q && !s->seq_kv && !s->kv_cache)
		s->seq_kv = s->seq_q;
	if (!(s->mask & MHA_MASK_CAUSAL) && s->align != MHA_ALIGN_BOTTOM_RIGHT)
		return mhagen_fail(err, "--causal-align: needs a causal --mask");
	if (window_sides(s, err))
		return -1;
	if (s->mask_dims && !(s->mask & (MHA_MASK_BIAS | MHA_MASK_BOOL)))
		return mhagen_fail(err, "--mask-dims: shapes the bias and the boolean "
		                   "mask, and --mask has neither (add bias or bool)");
	if (packing(s, err))
		return -1;
	if (varlen(s, err))
		return -1;
	if (s->kv_dtype == MHA_DTYPE_Q8 && (s->dk % 32 || s->dv % 32))
		return mhagen_fail(err, "--kv-dtype q8: blocks of 32 elements along "
		                   "each key and value row (ggml's q8_0), so --dk "
		                   "(%ld) and --dv (%ld) are multiples of 32", s->dk,
		                   s->dv);
	if (s->kv_dtype != s->dtype && s->packed == MHA_PACKED_QKV)
		return mhagen_fail(err, "--kv-dtype %s: not with --packed qkv (q "
		                   "is %s, in the same rows as k and v); use "
		                   "--packed kv, or --dtype for all three",
		                   mha_dtype_words[s->kv_dtype],
		                   mha_dtype_words[s->dtype]);
	if (s->alibi && s->max_bias > 0.0)
		return mhagen_fail(err, "--max-bias: fixes the ALiBi slopes, --alibi "
		                   "takes them from the caller; give one of them");
	if (mhagen_resolve_target(s, NULL, err))
		return -1;
	for (int k = 0; k < MHA_KNOB_N; ++k) {
		const struct mha_knob_def *d = &mha_knob_table[k];
		long v = mha_knob_get(s, k);
		if (d->step && v % d->step)
			return mhagen_fail(err, "--%s: %ld is not a multiple of %ld",
			                   d->key, v, d->step);
		if (d->unset && !(s->set & (1ul << k)))
			mha_knob_put(s, k, d->unset);
	}
	if (!s->name[0])
		mha_spec_canonical_name(s, s->name, sizeof s->name);
	return 0;
}
