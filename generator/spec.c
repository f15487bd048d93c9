/* The attention spec: its keys, parsing one setting or a spec file, validation,
 * the canonical name and command. */
#include "spec.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/mha_abi.h"
#include "fail.h"
#include "gen.h"

enum kind { K_INT, K_MASK, K_ALIGN, K_LAYOUT, K_SCALE, K_TARGET, K_NAME,
	K_BOOL, K_WORD };

/* The masks' words, by bit (ORDER MASK). */
const char *const mha_mask_words[MHA_MASK_N] = {
#define MHA_X(name, word) #word,
	MHA_MASK_LIST(MHA_X)
#undef MHA_X
};

static const char *const algos[] = {"auto", "tiled", "rows", NULL};
static const char *const threads[] = {"none", "openmp", NULL};
static const char *const exps[] = {"accurate", "fast", NULL};

/* Every spec key; flags are "--" + key, spec files use the key itself. */
static const struct key {
	const char *name;
	enum kind kind;
	size_t off; /* of the long field (K_INT) or int field (K_WORD) */
	long min, max;
	const char *tag;          /* knobs: canonical name part, "" for none */
	const char *const *words; /* K_WORD: the values, index = field */
} keys[] = {
	{"h", K_INT, offsetof(struct mha_spec, h), 1, MHAGEN_MAX_H, NULL, NULL},
	{"kv-heads", K_INT, offsetof(struct mha_spec, kv_heads), 1, MHAGEN_MAX_H, NULL, NULL},
	{"dk", K_INT, offsetof(struct mha_spec, dk), 1, MHAGEN_MAX_D, NULL, NULL},
	{"dv", K_INT, offsetof(struct mha_spec, dv), 1, MHAGEN_MAX_D, NULL, NULL},
	{"seq", K_INT, offsetof(struct mha_spec, seq_q), 1, MHAGEN_MAX_SEQ, NULL, NULL},
	{"seq-kv", K_INT, offsetof(struct mha_spec, seq_kv), 1, MHAGEN_MAX_SEQ, NULL, NULL},
	{"mask", K_MASK, 0, 0, 0, NULL, NULL},
	{"window", K_INT, offsetof(struct mha_spec, window), 1, MHAGEN_MAX_SEQ, NULL, NULL},
	{"causal-align", K_ALIGN, 0, 0, 0, NULL, NULL},
	{"layout", K_LAYOUT, 0, 0, 0, NULL, NULL},
	{"scale", K_SCALE, 0, 0, 0, NULL, NULL},
	{"target", K_TARGET, 0, 0, 0, NULL, NULL},
	{"name", K_NAME, 0, 0, 0, NULL, NULL},
	{"weights", K_BOOL, offsetof(struct mha_spec, weights), 0, 0, NULL, NULL},
	/* tuning knobs, from here on */
	{"algo", K_WORD, offsetof(struct mha_spec, algo), 0, 0, "", algos},
	{"block-q", K_INT, offsetof(struct mha_spec, block_q), 1, 1024, "bq", NULL},
	{"block-kv", K_INT, offsetof(struct mha_spec, block_kv), 8, 1024, "bk", NULL},
	{"mq", K_INT, offsetof(struct mha_spec, mq), 1, 64, "mq", NULL},
	{"nk", K_INT, offsetof(struct mha_spec, nk), 1, 16, "nk", NULL},
	{"nv", K_INT, offsetof(struct mha_spec, nv), 1, 16, "nv", NULL},
	{"unroll-max", K_INT, offsetof(struct mha_spec, unroll_max), 0, MHAGEN_MAX_D, "um", NULL},
	{"kv-split", K_INT, offsetof(struct mha_spec, kv_split), 1, 64, "ks", NULL},
	{"exp", K_WORD, offsetof(struct mha_spec, exp), 0, 0, "", exps},
	{"threads", K_WORD, offsetof(struct mha_spec, threads), 0, 0, "", threads},
};
#define FIRST_KNOB 14 /* index of "algo" */
#define NKEYS (sizeof keys / sizeof keys[0])

/* The value of a K_INT or K_WORD key in s. */
static long long_at(const struct mha_spec *s, const struct key *k)
{
	return *(const long *)((const char *)s + k->off);
}

static int int_at(const struct mha_spec *s, const struct key *k)
{
	return *(const int *)((const char *)s + k->off);
}

void mha_spec_init(struct mha_spec *s)
{
	memset(s, 0, sizeof *s);
}

static const struct key *find_key(const char *name)
{
	for (size_t i = 0; i < NKEYS; ++i)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

static int parse_long(const struct key *k, const char *val, long *out,
                      char *err)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(val, &end, 10);
	if (end == val || *end != '\0' || val[0] == '+' ||
	    isspace((unsigned char)val[0]))
		return mhagen_fail(err, "--%s: '%s' is not a whole number", k->name, val);
	if (errno == ERANGE || x < k->min || x > k->max)
		return mhagen_fail(err, "--%s: %s is out of range (%ld to %ld)",
		            k->name, val, k->min, k->max);
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

static int parse_word(const char *key, const char *val, const char *const *w,
                      int n, int *out, char *err)
{
	for (int i = 0; i < n; ++i)
		if (strcmp(val, w[i]) == 0) {
			*out = i;
			return 0;
		}
	return mhagen_fail(err, "--%s: unknown value '%s'", key, val);
}

int mha_spec_set(struct mha_spec *s, const char *key, const char *val,
                 char *err)
{
	static const char *const aligns[] = {"bottom-right", "top-left"};
	static const char *const layouts[] = {"bshd", "bhsd"};
	const struct key *k = find_key(key);
	unsigned long bit;

	if (!k)
		return mhagen_fail(err, "unknown setting '%s'", key);
	bit = 1ul << (k - keys);
	if (s->set & bit)
		return mhagen_fail(err, "--%s is given twice (again as '%s')", key, val);
	s->set |= bit;
	switch (k->kind) {
	case K_INT:
		return parse_long(k, val, (long *)((char *)s + k->off), err);
	case K_MASK:
		return parse_mask(val, &s->mask, err);
	case K_ALIGN:
		return parse_word(key, val, aligns, 2, &s->align, err);
	case K_LAYOUT:
		return parse_word(key, val, layouts, 2, &s->layout, err);
	case K_TARGET: {
		/* a name of a target table, checked when it is loaded */
		size_t n = strlen(val);
		int ok = n > 0 && n < sizeof s->target && val[0] >= 'a' &&
		         val[0] <= 'z';
		for (size_t i = 0; ok && i < n; ++i)
			ok = (val[i] >= 'a' && val[i] <= 'z') ||
			     (val[i] >= '0' && val[i] <= '9') || val[i] == '_';
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
	case K_WORD: {
		int *field = (int *)((char *)s + k->off);
		for (int i = 0; k->words[i]; ++i)
			if (strcmp(val, k->words[i]) == 0) {
				*field = i;
				return 0;
			}
		return mhagen_fail(err, "--%s: unknown value '%s'", key, val);
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
	case K_SCALE: {
		char *end;
		double x;
		errno = 0;
		x = strtod(val, &end);
		if (end == val || *end != '\0')
			return mhagen_fail(err, "--scale: '%s' is not a number", val);
		if (!(x > 0.0) || !isfinite(x) || x > 1e30 || x < 1e-30)
			return mhagen_fail(err, "--scale: %s must be a positive finite number",
			            val);
		s->scale = x;
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

void mha_spec_canonical_name(const struct mha_spec *s, char *buf, size_t n)
{
	buf[0] = '\0';
	mha_append(buf, n, "mha_f32_h%ld", s->h);
	if (s->kv_heads != s->h)
		mha_append(buf, n, "_kv%ld", s->kv_heads);
	mha_append(buf, n, "_dk%ld", s->dk);
	if (s->dv != s->dk)
		mha_append(buf, n, "_dv%ld", s->dv);
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
	if (s->window)
		mha_append(buf, n, "_w%ld", s->window);
	if (s->layout == MHA_LAYOUT_BHSD)
		mha_append(buf, n, "_bhsd");
	if (s->scale > 0.0) {
		float f = (float)s->scale;
		uint32_t u;
		memcpy(&u, &f, sizeof u);
		mha_append(buf, n, "_sc%08x", (unsigned)u);
	}
	if (s->weights)
		mha_append(buf, n, "_weights");
	for (size_t k = FIRST_KNOB; k < NKEYS; ++k) {
		if (!(s->set & (1ul << k)))
			continue;
		if (keys[k].kind == K_INT)
			mha_append(buf, n, "_%s%ld", keys[k].tag, long_at(s, &keys[k]));
		else if (int_at(s, &keys[k]))
			mha_append(buf, n, "_%s", keys[k].words[int_at(s, &keys[k])]);
	}
	mha_append(buf, n, "__%s", s->target);
}

void mha_spec_command(const struct mha_spec *s, char *buf, size_t n)
{
	int first = 1;

	buf[0] = '\0';
	mha_append(buf, n, "mhagen --h %ld", s->h);
	if (s->kv_heads != s->h)
		mha_append(buf, n, " --kv-heads %ld", s->kv_heads);
	mha_append(buf, n, " --dk %ld", s->dk);
	if (s->dv != s->dk)
		mha_append(buf, n, " --dv %ld", s->dv);
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
	if (s->window)
		mha_append(buf, n, " --window %ld", s->window);
	if ((s->mask & MHA_MASK_CAUSAL) && s->align == MHA_ALIGN_TOP_LEFT)
		mha_append(buf, n, " --causal-align top-left");
	if (s->layout == MHA_LAYOUT_BHSD)
		mha_append(buf, n, " --layout bhsd");
	if (s->scale > 0.0)
		mha_append(buf, n, " --scale %a", (double)(float)s->scale);
	if (s->weights)
		mha_append(buf, n, " --weights");
	for (size_t k = FIRST_KNOB; k < NKEYS; ++k) {
		if (!(s->set & (1ul << k)))
			continue;
		if (keys[k].kind == K_INT)
			mha_append(buf, n, " --%s %ld", keys[k].name, long_at(s, &keys[k]));
		else
			mha_append(buf, n, " --%s %s", keys[k].name,
			       keys[k].words[int_at(s, &keys[k])]);
	}
	mha_append(buf, n, " --target %s", s->target);
	if (s->set & (1ul << (find_key("name") - keys)))
		mha_append(buf, n, " --name %s", s->name);
}

void mha_spec_tuning_key(const struct mha_spec *s, char *buf, size_t n)
{
	static const char *const tuned[] = {"algo", "block-q", "block-kv", "mq",
	                                    "nk", "nv", "unroll-max", "kv-split",
	                                    "name"};
	struct mha_spec c = *s;
	char tmp[1024];

	for (size_t i = 0; i < sizeof tuned / sizeof tuned[0]; ++i)
		c.set &= ~(1ul << (find_key(tuned[i]) - keys));
	mha_spec_command(&c, tmp, sizeof tmp);
	snprintf(buf, n, "%s", tmp + strlen("mhagen "));
}

void mha_spec_unset(struct mha_spec *s, const char *key)
{
	const struct key *k = find_key(key);

	if (k)
		s->set &= ~(1ul << (k - keys));
}

int mha_spec_is_key(const char *key)
{
	return find_key(key) != NULL;
}

int mha_spec_is_switch(const char *key)
{
	const struct key *k = find_key(key);

	return k && k->kind == K_BOOL;
}

int mha_spec_is_set(const struct mha_spec *s, const char *key)
{
	const struct key *k = find_key(key);

	return k && (s->set & (1ul << (k - keys))) != 0;
}

int mha_spec_finish(struct mha_spec *s, char *err)
{
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
	if (s->seq_q && !s->seq_kv)
		s->seq_kv = s->seq_q;
	if (!(s->mask & MHA_MASK_CAUSAL) && s->align != MHA_ALIGN_BOTTOM_RIGHT)
		return mhagen_fail(err, "--causal-align: needs a causal --mask");
	if (mhagen_resolve_target(s, NULL, err))
		return -1;
	if (s->block_kv % 8)
		return mhagen_fail(err, "--block-kv: %ld is not a multiple of 8",
		            s->block_kv);
	if (!(s->set & (1ul << (find_key("unroll-max") - keys))))
		s->unroll_max = 128;
	if (!s->name[0])
		mha_spec_canonical_name(s, s->name, sizeof s->name);
	return 0;
}
