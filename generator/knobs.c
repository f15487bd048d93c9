/* The knob table: every tuning knob of a spec, and reading its value. */
#include "knobs.h"

#include <stdio.h>
#include <string.h>

#include "spec.h"

/* ORDER MHA_ALGO */
const char *const mha_algo_names[MHA_ALGO_N + 1] = {"auto", "tiled", "rows",
                                                     NULL};

static const char *const threads[] = {"none", "openmp", NULL};
static const char *const exps[] = {"accurate", "fast", NULL};

#define OFF(field) offsetof(struct mha_spec, field)
#define TILED MHA_ALGO_BIT(MHA_ALGO_TILED)
#define ROWS MHA_ALGO_BIT(MHA_ALGO_ROWS)
/* a list of values to try, and how many */
#define TRIES(...) .tries = {__VA_ARGS__}, \
	.ntries = (int)(sizeof (long[]){__VA_ARGS__} / sizeof (long))
#define WIDE(...) .wide = {__VA_ARGS__}, \
	.nwide = (int)(sizeof (long[]){__VA_ARGS__} / sizeof (long))

/* ORDER MHA_KNOB */
const struct mha_knob_def mha_knob_table[MHA_KNOB_N] = {
	/* the tuner tries each algorithm but auto */
	{.key = "algo", .arg = "A",
	 .help = "tiled (query tiles x key blocks, register-blocked\n" "micro-kernels), rows (one query row at a time), or\n" "auto (default: rows for fixed seq_q of 4 or less,\n" "else tiled)",
	 .tag = "", .lua = "algo", .off = OFF(algo),
	 .words = mha_algo_names, .algos = TILED | ROWS, .plan = 1,
	 TRIES(MHA_ALGO_TILED, MHA_ALGO_ROWS)},
	{.key = "block-q", .arg = "N",
	 .help = "query rows per work item (tiled; default per\n" "target, below; with the default a fixed --seq of\n"
	         "up to 3/2 of it is one block, and rows counted at\n" "run time put a last block of up to half of it in\n"
	         "the one before)",
	 .tag = "bq", .lua = "block_q", .off = OFF(block_q),
	 .min = 1, .max = 1024, .algos = TILED, .plan = 1,
	 TRIES(32, 64, 128, 192, 256, 384)},
	{.key = "block-kv", .arg = "N",
	 .help = "keys per block, a multiple of 8 and of the vector\n" "width (default per target, below; a fixed --seq-kv\n"
	         "whose last block would hold under a quarter of it\n" "takes one block fewer, or as many even ones; keys\n"
	         "counted at run time put such a last block in the\n" "one before)",
	 .tag = "bk", .lua = "block_kv", .off = OFF(block_kv),
	 .min = 8, .max = 1024, .step = 8, .algos = TILED | ROWS, .plan = 1,
	 TRIES(32, 64, 128, 256)},
	/* micro-tiles: whole vectors that fit the registers */
	{.key = "mq", .arg = "N",
	 .help = "scores micro-tile: query rows, a multiple of the\n" "vector width (tiled; default per target)",
	 .tag = "mq", .lua = "mq", .off = OFF(mq),
	 .min = 1, .max = 64, .algos = TILED, .plan = 1,
	 TRIES(1, 2, 4, 8), WIDE(1, 2, 3)},
	{.key = "nk", .arg = "N",
	 .help = "scores micro-tile: keys (tiled; default per target)",
	 .tag = "nk", .lua = "nk", .off = OFF(nk),
	 .min = 1, .max = 16, .algos = TILED, .plan = 1, TRIES(2, 4, 6, 8)},
	/* 0: the target's P.V, which on avx512 (and avx2 at dv <= 64)
	 * broadcasts rows of weights against the output's columns in lanes;
	 * the plan reports 0 for it */
	{.key = "nv", .arg = "N",
	 .help = "P.V micro-tile: output columns, for mq rows in\n" "vector lanes (tiled; default per target); 0: the\n" "target's P.V (avx512, and avx2 at dv <= 64: 4 rows\n" "broadcast against the columns in lanes)",
	 .tag = "nv", .lua = "nv", .off = OFF(nv),
	 .min = 0, .max = 16, .algos = TILED, .plan = 1, TRIES(2, 4, 6, 8)},
	/* tried: every head dim a loop, or unrolled; the plan reports what it
	 * decides, whether k and v are unrolled */
	{.key = "unroll-max", .arg = "N",
	 .help = "rows: unroll head dims up to N elements (default 128)",
	 .tag = "um", .lua = "unroll_max",
	 .off = OFF(unroll_max), .min = 0, .max = MHAGEN_MAX_D, .unset = 128,
	 .algos = ROWS, TRIES(0, MHAGEN_MAX_D)},
	/* key ranges per row only pay with threads to spread them over */
	{.key = "kv-split", .arg = "N",
	 .help = "rows: split each row's keys in N ranges, merged after\n" "(default 4 with --threads openmp, else 1)",
	 .tag = "ks", .lua = "kv_split", .off = OFF(kv_split),
	 .min = 1, .max = 64, .algos = ROWS, .plan = 1, TRIES(1, 2, 4, 8),
	 .threaded = 1},
	/* not tuned: part of the spec a tuning record is filed under */
	{.key = "exp", .arg = "E",
	 .help = "accurate (default) or fast exp",
	 .tag = "", .lua = "exp", .off = OFF(exp), .words = exps,
	 .algos = TILED | ROWS},
	{.key = "threads", .arg = "T",
	 .help = "none (default) or openmp: OpenMP pragmas, active when\n" "the file is compiled with -fopenmp",
	 .tag = "", .lua = "threads", .off = OFF(threads),
	 .words = threads, .algos = TILED | ROWS},
};

int mha_knob_find(const char *key)
{
	for (int k = 0; k < MHA_KNOB_N; ++k)
		if (strcmp(mha_knob_table[k].key, key) == 0)
			return k;
	return -1;
}

int mha_knob_tuned(int k)
{
	return mha_knob_table[k].ntries > 0;
}

long mha_knob_get(const struct mha_spec *s, int k)
{
	return *(const long *)((const char *)s + mha_knob_table[k].off);
}

void mha_knob_put(struct mha_spec *s, int k, long v)
{
	*(long *)((char *)s + mha_knob_table[k].off) = v;
}

char *mha_knob_text(const struct mha_spec *s, int k, char *buf, size_t n)
{
	const struct mha_knob_def *d = &mha_knob_table[k];

	if (d->words)
		snprintf(buf, n, "%s", d->words[mha_knob_get(s, k)]);
	else
		snprintf(buf, n, "%ld", mha_knob_get(s, k));
	return buf;
}
