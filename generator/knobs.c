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
	{.key = "algo", .tag = "", .lua = "algo", .off = OFF(algo),
	 .words = mha_algo_names, .algos = TILED | ROWS, .plan = 1,
	 TRIES(MHA_ALGO_TILED, MHA_ALGO_ROWS)},
	{.key = "block-q", .tag = "bq", .lua = "block_q", .off = OFF(block_q),
	 .min = 1, .max = 1024, .algos = TILED, .plan = 1,
	 TRIES(32, 64, 128, 192, 256, 384)},
	{.key = "block-kv", .tag = "bk", .lua = "block_kv", .off = OFF(block_kv),
	 .min = 8, .max = 1024, .step = 8, .algos = TILED | ROWS, .plan = 1,
	 TRIES(32, 64, 128, 256)},
	/* micro-tiles: whole vectors that fit the registers */
	{.key = "mq", .tag = "mq", .lua = "mq", .off = OFF(mq),
	 .min = 1, .max = 64, .algos = TILED, .plan = 1,
	 TRIES(1, 2, 4, 8), WIDE(1, 2, 3)},
	{.key = "nk", .tag = "nk", .lua = "nk", .off = OFF(nk),
	 .min = 1, .max = 16, .algos = TILED, .plan = 1, TRIES(2, 4, 6, 8)},
	{.key = "nv", .tag = "nv", .lua = "nv", .off = OFF(nv),
	 .min = 1, .max = 16, .algos = TILED, .plan = 1, TRIES(2, 4, 6, 8)},
	/* tried: every head dim a loop, or unrolled; the plan reports what it
	 * decides, whether k and v are unrolled */
	{.key = "unroll-max", .tag = "um", .lua = "unroll_max",
	 .off = OFF(unroll_max), .min = 0, .max = MHAGEN_MAX_D, .unset = 128,
	 .algos = ROWS, TRIES(0, MHAGEN_MAX_D)},
	/* key ranges per row only pay with threads to spread them over */
	{.key = "kv-split", .tag = "ks", .lua = "kv_split", .off = OFF(kv_split),
	 .min = 1, .max = 64, .algos = ROWS, .plan = 1, TRIES(1, 2, 4, 8),
	 .threaded = 1},
	/* not tuned: part of the spec a tuning record is filed under */
	{.key = "exp", .tag = "", .lua = "exp", .off = OFF(exp), .words = exps,
	 .algos = TILED | ROWS},
	{.key = "threads", .tag = "", .lua = "threads", .off = OFF(threads),
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
