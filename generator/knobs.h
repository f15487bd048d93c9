/* The tuning knobs, stated once: what each is called (flag, canonical name,
 * templates), its range, which algorithms it applies to and what the tuner
 * tries.  The spec parser, the canonical name, the generator's bridge to
 * the templates, the tuner and the tuning database all read this table. */
#ifndef MHAGEN_KNOBS_H
#define MHAGEN_KNOBS_H

#include <stddef.h>

struct mha_spec;

/* The algorithms of a kernel; auto lets the templates choose.  The values
 * of --algo, so of struct mha_spec's algo.  ORDER MHA_ALGO */
enum mha_algo { MHA_ALGO_AUTO, MHA_ALGO_TILED, MHA_ALGO_ROWS, MHA_ALGO_N };

/* Their words, NULL-terminated.  ORDER MHA_ALGO */
extern const char *const mha_algo_names[MHA_ALGO_N + 1];

/* The bit of algorithm a in a knob's algos. */
#define MHA_ALGO_BIT(a) (1u << (a))

/* The knobs, in their canonical order: the order of their tags in a
 * kernel's name, of their flags in its command and of the knobs of a
 * tuning record.  ORDER MHA_KNOB */
enum mha_knob_id {
	MHA_KNOB_ALGO, MHA_KNOB_BLOCK_Q, MHA_KNOB_BLOCK_KV, MHA_KNOB_MQ,
	MHA_KNOB_NK, MHA_KNOB_NV, MHA_KNOB_UNROLL_MAX, MHA_KNOB_KV_SPLIT,
	MHA_KNOB_EXP, MHA_KNOB_THREADS, MHA_KNOB_N
};

#define MHA_KNOB_TRIES 8 /* values the tuner tries of one knob, at most */

/* One knob.  Its value lives in a long field of struct mha_spec: the
 * number, or for a word knob the index of its word; 0 unless given means
 * the target's default, which the templates decide. */
struct mha_knob_def {
	const char *key;          /* spec key, the flag without "--" */
	const char *tag;          /* its part of the canonical name before the
	                             value ("bq" in _bq64); "" for a word knob,
	                             whose word (unless the first) is the part */
	const char *arg;          /* its value in --help ("N") */
	const char *help;         /* --help's text, lines 56 columns wide */
	const char *lua;          /* its field in the templates' spec table, and
	                             in their plan table when plan is set */
	size_t off;               /* of its long field in struct mha_spec */
	const char *const *words; /* a word knob's values, NULL-terminated;
	                             NULL for a number */
	long min, max;            /* a number's range */
	long step;                /* a number's values are multiples of it
	                             (0: any), checked when the spec is
	                             finished */
	long unset;               /* its value when not given, if not 0 */
	unsigned algos;           /* MHA_ALGO_BITs of the algorithms it applies
	                             to */
	int plan;                 /* the templates' plan reports the value in
	                             effect, for the algorithms it applies to
	                             (algo's: the plan's algorithm) */
	/* the tuner: a knob with values to try is tuned (varied, and filed in
	 * a record's knobs, not in its spec); the others are part of the
	 * spec a record is filed under */
	long tries[MHA_KNOB_TRIES]; /* values tried (words: their indices) */
	int ntries;
	long wide[MHA_KNOB_TRIES]; /* when not empty and vectors hold more
	                             than one float: tried instead, as
	                             multiples of the vector width */
	int nwide;
	int threaded;             /* tried only for specs with threads (it
	                             spreads work over them) */
};

/* The knobs.  ORDER MHA_KNOB */
extern const struct mha_knob_def mha_knob_table[MHA_KNOB_N];

/* The id of the knob with spec key key, or -1 when key is no knob. */
int mha_knob_find(const char *key);

/* 1 when the tuner varies knob k. */
int mha_knob_tuned(int k);

/* The value of knob k in s (a word knob's word index), and setting it. */
long mha_knob_get(const struct mha_spec *s, int k);
void mha_knob_put(struct mha_spec *s, int k, long v);

/* The value of knob k in s as a flag takes it ("64", "tiled"), into buf
 * of size n; returns buf. */
char *mha_knob_text(const struct mha_spec *s, int k, char *buf, size_t n);

/* The knobs in effect for a spec, as the templates plan them: algo is
 * tiled or rows; v holds, for each knob with plan set that applies to
 * algo, its value in effect (the other entries are 0); unroll-max is in
 * effect as what it decides, whether the k and v head dims are unrolled. */
struct mha_plan {
	enum mha_algo algo;
	long v[MHA_KNOB_N];
	int unroll_k, unroll_v;
};

#endif
