/* The knob table (generator/knobs.c) and everything that reads it: for
 * every knob, its flag's range and messages, its tag in the canonical name,
 * the command that reproduces it, the plan's report of it, and whether the
 * tuner varies it; and the plan lines tuning records are matched by. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdio.h>
#include <string.h>

#include "../generator/cli.h"
#include "../generator/gen.h"
#include "../generator/knobs.h"
#include "../generator/spec.h"
#include "../generator/tunedb.h"
#include "../generator/tunespace.h"
#include "params.h"

#define COUNT(a) (sizeof (a) / sizeof (a)[0])
#define MAXARG 48

TestSuite(knobs, .timeout = 60);

/* Tests get a knob id, every one of the table. */
static struct criterion_test_params knob_ids(void)
{
	return params_index(MHA_KNOB_N);
}

/* The spec every test starts from: scalar (vectors of one float, so every
 * value the tuner tries is valid), lengths left dynamic (so the plan clips
 * no block to them). */
static const char *const base[] = {"--h", "8", "--dk", "64", "--target",
                                   "scalar"};

/* Parse base and then the NULL-terminated flags extra; the return code of
 * mhagen_parse_args, err filled on failure. */
static int parse(struct mhagen_cli *cli, const char *const *extra, char *err)
{
	char *argv[MAXARG] = {"mhagen"};
	int argc = 1;

	for (size_t i = 0; i < COUNT(base); ++i)
		argv[argc++] = (char *)base[i];
	for (; *extra; ++extra) {
		cr_assert_lt(argc, MAXARG - 1);
		argv[argc++] = (char *)*extra;
	}
	memset(cli, 0, sizeof *cli);
	err[0] = '\0';
	return mhagen_parse_args(cli, argc, argv, err);
}

/* The base spec with knob k set to the text v; it must be accepted. */
static struct mha_spec with_knob(int k, const char *v)
{
	char flag[32], err[MHAGEN_ERR];
	const char *extra[] = {flag, v, NULL};
	struct mhagen_cli cli;

	snprintf(flag, sizeof flag, "--%s", mha_knob_table[k].key);
	cr_assert_eq(parse(&cli, extra, err), 0, "%s %s refused: %s", flag, v,
	             err);
	return cli.spec;
}

/* A value of knob k that shows in the canonical name, as text: a word
 * knob's last word (names omit the first), a number's first value tried,
 * else its least. */
static void shown_value(int k, char *buf, size_t n)
{
	const struct mha_knob_def *d = &mha_knob_table[k];
	int last = 0;

	if (d->words) {
		while (d->words[last + 1])
			++last;
		snprintf(buf, n, "%s", d->words[last]);
	} else
		snprintf(buf, n, "%ld", d->ntries ? d->tries[0] : d->min);
}

/* Every row filled: a spec key that names this id, a field name, a tag
 * unique among the numbers (names must tell them apart), at least two
 * words for a word knob, a range holding every value tried. */
Test(knobs, table)
{
	int tuned = 0;

	for (int k = 0; k < MHA_KNOB_N; ++k) {
		const struct mha_knob_def *d = &mha_knob_table[k];
		cr_assert_not_null(d->key, "knob %d has no row (ORDER MHA_KNOB)", k);
		cr_assert_not_null(d->lua, "%s", d->key);
		cr_assert_not_null(d->tag, "%s", d->key);
		cr_assert_eq(mha_knob_find(d->key), k, "%s", d->key);
		cr_assert(mha_spec_is_key(d->key), "%s", d->key);
		cr_assert_neq(d->algos, 0, "%s applies to no algorithm", d->key);
		if (d->words) {
			cr_assert_not_null(d->words[0], "%s", d->key);
			cr_assert_not_null(d->words[1], "%s: one word", d->key);
		} else {
			cr_assert_neq(d->tag[0], '\0', "%s has no tag", d->key);
			cr_assert_leq(d->min, d->max, "%s", d->key);
		}
		for (int j = 0; j < k; ++j)
			cr_assert(d->words || mha_knob_table[j].words ||
			          strcmp(d->tag, mha_knob_table[j].tag) != 0,
			          "%s and %s share tag %s", d->key,
			          mha_knob_table[j].key, d->tag);
		for (int i = 0; i < d->ntries && !d->words; ++i) {
			cr_assert(d->tries[i] >= d->min && d->tries[i] <= d->max,
			          "%s tries %ld", d->key, d->tries[i]);
			cr_assert(!d->step || d->tries[i] % d->step == 0, "%s", d->key);
		}
		tuned += mha_knob_tuned(k);
	}
	cr_assert_leq(tuned, MHA_KNOBS_MAX);
	cr_assert_null(mha_algo_names[MHA_ALGO_N]);
	cr_assert_eq(mha_knob_table[MHA_KNOB_ALGO].words, mha_algo_names);
}

/* The canonical order, which kernel names, commands and tuning records
 * follow (a change renames kernels and orphans records), and each id's
 * row. */
Test(knobs, ids)
{
	static const char *const keys[MHA_KNOB_N] = {
		[MHA_KNOB_ALGO] = "algo", [MHA_KNOB_BLOCK_Q] = "block-q",
		[MHA_KNOB_BLOCK_KV] = "block-kv", [MHA_KNOB_MQ] = "mq",
		[MHA_KNOB_NK] = "nk", [MHA_KNOB_NV] = "nv",
		[MHA_KNOB_UNROLL_MAX] = "unroll-max", [MHA_KNOB_KV_SPLIT] = "kv-split",
		[MHA_KNOB_EXP] = "exp", [MHA_KNOB_THREADS] = "threads",
	};

	for (int k = 0; k < MHA_KNOB_N; ++k)
		cr_assert_str_eq(mha_knob_table[k].key, keys[k], "knob %d", k);
}

/* A number is accepted at both ends of its range and refused one past
 * each, with the usual message; a word knob takes each of its words and
 * refuses any other. */
ParameterizedTestParameters(knobs, flag_range)
{
	return knob_ids();
}

ParameterizedTest(int *kp, knobs, flag_range)
{
	const int k = *kp;
	const struct mha_knob_def *d = &mha_knob_table[k];
	char flag[32], v[32], want[MHAGEN_ERR], err[MHAGEN_ERR];
	const char *extra[] = {flag, v, NULL};
	struct mhagen_cli cli;

	snprintf(flag, sizeof flag, "--%s", d->key);
	if (d->words) {
		for (int i = 0; d->words[i]; ++i) {
			struct mha_spec s = with_knob(k, d->words[i]);
			cr_assert_eq(mha_knob_get(&s, k), i, "%s %s", flag, d->words[i]);
		}
		snprintf(v, sizeof v, "%s", "none-such");
		cr_assert_neq(parse(&cli, extra, err), 0, "%s %s accepted", flag, v);
		snprintf(want, sizeof want, "%s: unknown value '%s'", flag, v);
		cr_assert_str_eq(err, want);
		return;
	}
	for (int end = 0; end < 2; ++end) {
		long x = end ? d->max : d->min;
		struct mha_spec s;
		snprintf(v, sizeof v, "%ld", x);
		s = with_knob(k, v);
		cr_assert_eq(mha_knob_get(&s, k), x, "%s %s", flag, v);
		snprintf(v, sizeof v, "%ld", end ? x + 1 : x - 1);
		cr_assert_neq(parse(&cli, extra, err), 0, "%s %s accepted", flag, v);
		snprintf(want, sizeof want, "%s: %s is out of range (%ld to %ld)",
		         flag, v, d->min, d->max);
		cr_assert_str_eq(err, want);
	}
}

/* Set, the knob's tag and value are in the canonical name, before the
 * target; unset, they are not. */
ParameterizedTestParameters(knobs, canonical_tag)
{
	return knob_ids();
}

ParameterizedTest(int *kp, knobs, canonical_tag)
{
	const int k = *kp;
	const struct mha_knob_def *d = &mha_knob_table[k];
	char v[32], part[48], err[MHAGEN_ERR];
	const char *none[] = {NULL};
	struct mhagen_cli cli;
	struct mha_spec s;

	shown_value(k, v, sizeof v);
	s = with_knob(k, v);
	snprintf(part, sizeof part, "_%s%s_", d->tag, v);
	cr_assert_not_null(strstr(s.name, part), "%s has no %s", s.name, part);
	cr_assert_lt(strstr(s.name, part), strstr(s.name, "__scalar"), "%s",
	             s.name);
	cr_assert_eq(parse(&cli, none, err), 0, "%s", err);
	cr_assert_null(strstr(cli.spec.name, part), "%s", cli.spec.name);
}

/* With every knob set, the tags come in the table's order. */
Test(knobs, canonical_order)
{
	char vals[MHA_KNOB_N][32], flags[MHA_KNOB_N][32], err[MHAGEN_ERR];
	const char *extra[2 * MHA_KNOB_N + 1];
	struct mhagen_cli cli;
	const char *at;
	int n = 0;

	for (int k = 0; k < MHA_KNOB_N; ++k) {
		snprintf(flags[k], sizeof flags[k], "--%s", mha_knob_table[k].key);
		shown_value(k, vals[k], sizeof vals[k]);
		extra[n++] = flags[k];
		extra[n++] = vals[k];
	}
	extra[n] = NULL;
	cr_assert_eq(parse(&cli, extra, err), 0, "%s", err);
	at = cli.spec.name;
	for (int k = 0; k < MHA_KNOB_N; ++k) {
		char part[sizeof vals + 8];
		snprintf(part, sizeof part, "_%s%s_", mha_knob_table[k].tag,
		         vals[k]);
		at = strstr(at, part);
		cr_assert_not_null(at, "%s: %s missing or out of order",
		                   cli.spec.name, part);
	}
}

/* A spec with the knob set (to each word, or each value tried and both
 * ends of its range) comes back the same through its command. */
ParameterizedTestParameters(knobs, round_trip)
{
	return knob_ids();
}

ParameterizedTest(int *kp, knobs, round_trip)
{
	const int k = *kp;
	const struct mha_knob_def *d = &mha_knob_table[k];
	char cmd[1024], again[1024], err[MHAGEN_ERR], *argv[MAXARG], *p;
	struct mhagen_cli cli;
	struct mha_spec s;
	int argc = 0;

	for (int i = 0; d->words ? d->words[i] != NULL : i < d->ntries + 2; ++i) {
		char v[32];
		if (d->words)
			snprintf(v, sizeof v, "%s", d->words[i]);
		else
			snprintf(v, sizeof v, "%ld", i < d->ntries ? d->tries[i] :
			         i == d->ntries ? d->min : d->max);
		s = with_knob(k, v);
		mha_spec_command(&s, cmd, sizeof cmd);
		argc = 0;
		for (p = strtok(cmd, " "); p; p = strtok(NULL, " "))
			argv[argc++] = p;
		memset(&cli, 0, sizeof cli);
		cr_assert_eq(mhagen_parse_args(&cli, argc, argv, err), 0, "%s", err);
		cr_assert(mha_spec_is_set(&cli.spec, d->key), "%s %s", d->key, v);
		cr_assert_eq(mha_knob_get(&cli.spec, k), mha_knob_get(&s, k),
		             "%s %s", d->key, v);
		cr_assert_str_eq(cli.spec.name, s.name);
		mha_spec_command(&s, cmd, sizeof cmd);
		mha_spec_command(&cli.spec, again, sizeof again);
		cr_assert_str_eq(again, cmd);
	}
}

/* For each algorithm a knob the plan reports applies to, and each value
 * the tuner tries, the plan has the value set (algo: the algorithm). */
ParameterizedTestParameters(knobs, plan_reports)
{
	return knob_ids();
}

ParameterizedTest(int *kp, knobs, plan_reports)
{
	const int k = *kp;
	const struct mha_knob_def *d = &mha_knob_table[k];
	char err[MHAGEN_ERR];

	if (!d->plan)
		return;
	cr_assert(d->ntries, "%s: reported but never tried", d->key);
	for (int a = MHA_ALGO_TILED; a < MHA_ALGO_N; ++a) {
		if (!(d->algos & MHA_ALGO_BIT(a)))
			continue;
		for (int i = 0; i < d->ntries; ++i) {
			char flag[32], v[32];
			const char *extra[] = {"--algo", mha_algo_names[a], flag, v, NULL};
			struct mhagen_cli cli;
			struct mha_plan p;
			if (k == MHA_KNOB_ALGO) {
				extra[2] = NULL;
				if (d->tries[i] != a)
					continue;
			}
			snprintf(flag, sizeof flag, "--%s", d->key);
			snprintf(v, sizeof v, "%ld", d->tries[i]);
			cr_assert_eq(parse(&cli, extra, err), 0, "%s", err);
			cr_assert_eq(mhagen_plan(&cli.spec, NULL, &p, err), 0,
			             "%s %s %s: %s", mha_algo_names[a], flag, v, err);
			cr_assert_eq((int)p.algo, a, "%s", cli.spec.name);
			if (k != MHA_KNOB_ALGO)
				cr_assert_eq(p.v[k], d->tries[i], "%s: plan has %ld",
				             cli.spec.name, p.v[k]);
		}
	}
}

/* unroll-max is in the plan as what it decides: dk 64 is unrolled under a
 * limit of 64 and not under 63. */
Test(knobs, plan_unroll)
{
	const char *at64[] = {"--algo", "rows", "--unroll-max", "64", NULL};
	const char *at63[] = {"--algo", "rows", "--unroll-max", "63", NULL};
	char err[MHAGEN_ERR];
	struct mhagen_cli cli;
	struct mha_plan p;

	cr_assert_eq(parse(&cli, at64, err), 0, "%s", err);
	cr_assert_eq(mhagen_plan(&cli.spec, NULL, &p, err), 0, "%s", err);
	cr_assert(p.unroll_k && p.unroll_v);
	cr_assert_eq(parse(&cli, at63, err), 0, "%s", err);
	cr_assert_eq(mhagen_plan(&cli.spec, NULL, &p, err), 0, "%s", err);
	cr_assert(!p.unroll_k && !p.unroll_v);
}

/* A tuned knob is filed in a record's knobs, not in its spec; the others
 * are part of the spec. */
ParameterizedTestParameters(knobs, tuning_key)
{
	return knob_ids();
}

ParameterizedTest(int *kp, knobs, tuning_key)
{
	const int k = *kp;
	const struct mha_knob_def *d = &mha_knob_table[k];
	char v[32], flag[48], key[1024];
	struct mha_knob got[MHA_KNOBS_MAX];
	struct mha_spec s;
	int n, found = 0;

	shown_value(k, v, sizeof v);
	s = with_knob(k, v);
	snprintf(flag, sizeof flag, "--%s %s", d->key, v);
	mha_spec_tuning_key(&s, key, sizeof key);
	n = mha_knobs_of_spec(&s, got);
	for (int i = 0; i < n; ++i)
		found |= strcmp(got[i].key, d->key) == 0 && strcmp(got[i].val, v) == 0;
	if (mha_knob_tuned(k)) {
		cr_assert_null(strstr(key, flag), "%s in %s", flag, key);
		cr_assert(found, "%s not in the record's knobs", flag);
	} else {
		cr_assert_not_null(strstr(key, flag), "%s not in %s", flag, key);
		cr_assert(!found, "%s in the record's knobs", flag);
	}
}

/* With every knob set, the record's knobs are the tuned ones in table
 * order. */
Test(knobs, record_order)
{
	char vals[MHA_KNOB_N][32], flags[MHA_KNOB_N][32], err[MHAGEN_ERR];
	const char *extra[2 * MHA_KNOB_N + 1];
	struct mha_knob got[MHA_KNOBS_MAX];
	struct mhagen_cli cli;
	int n = 0, i = 0;

	for (int k = 0; k < MHA_KNOB_N; ++k) {
		snprintf(flags[k], sizeof flags[k], "--%s", mha_knob_table[k].key);
		shown_value(k, vals[k], sizeof vals[k]);
		extra[n++] = flags[k];
		extra[n++] = vals[k];
	}
	extra[n] = NULL;
	cr_assert_eq(parse(&cli, extra, err), 0, "%s", err);
	n = mha_knobs_of_spec(&cli.spec, got);
	for (int k = 0; k < MHA_KNOB_N; ++k) {
		if (!mha_knob_tuned(k))
			continue;
		cr_assert_lt(i, n, "%s missing", mha_knob_table[k].key);
		cr_assert_str_eq(got[i].key, mha_knob_table[k].key);
		cr_assert_str_eq(got[i].val, vals[k]);
		++i;
	}
	cr_assert_eq(i, n);
}

/* The plan lines of tuning records, as databases hold them: these strings
 * must not change, or every record stops matching. */
Test(knobs, plan_lines)
{
	struct mha_plan p;
	char line[96];

	memset(&p, 0, sizeof p);
	p.algo = MHA_ALGO_TILED;
	p.v[MHA_KNOB_BLOCK_Q] = 192;
	p.v[MHA_KNOB_BLOCK_KV] = 128;
	p.v[MHA_KNOB_MQ] = 16;
	p.v[MHA_KNOB_NK] = 6;
	p.v[MHA_KNOB_NV] = 4;
	p.v[MHA_KNOB_KV_SPLIT] = 9; /* not the tiled algorithm's */
	p.unroll_k = 1;
	mha_tunedb_plan(&p, line, sizeof line);
	cr_assert_str_eq(line, "tiled bq192 bk128 mq16 nk6 nv4");
	p.algo = MHA_ALGO_ROWS;
	p.v[MHA_KNOB_BLOCK_KV] = 64;
	p.v[MHA_KNOB_KV_SPLIT] = 4;
	mha_tunedb_plan(&p, line, sizeof line);
	cr_assert_str_eq(line, "rows bk64 uk1 uv0 ks4");
}

/* Specs whose plan lines are known (from the templates of today). */
static const struct {
	const char *v[16]; /* NULL-terminated */
	const char *line;
} planned[] = {
	/* AVX2 and AVX-512: 64-key blocks for heads of dk + dv <= 128
	 * floats, 128 for wider ones, 64 causal */
	{{"--h", "8", "--dk", "64", "--seq", "128", "--target", "avx2"},
	 "tiled bq128 bk64 mq16 nk6 nv0"},
	/* --nv: rows in lanes, nv columns, where the target would broadcast
	 * rows (nv 0 in the plan) */
	{{"--h", "8", "--dk", "64", "--seq", "128", "--target", "avx2", "--nv", "6"},
	 "tiled bq128 bk64 mq16 nk6 nv6"},
	{{"--h", "8", "--dk", "64", "--dv", "72", "--seq", "128", "--target", "avx2"},
	 "tiled bq128 bk128 mq16 nk6 nv6"},
	{{"--h", "8", "--dk", "128", "--seq", "128", "--target", "avx2", "--mask", "causal"},
	 "tiled bq128 bk64 mq16 nk6 nv6"},
	{{"--h", "8", "--dk", "64", "--seq", "128", "--target", "avx512"},
	 "tiled bq128 bk64 mq32 nk8 nv0"},
	{{"--h", "8", "--dk", "128", "--seq", "128", "--target", "avx512"},
	 "tiled bq128 bk128 mq32 nk8 nv0"},
	/* AVX-512: 64 for heads of dk + dv <= 256 too where the keys number
	 * 512 or more, or are known only at run time */
	{{"--h", "8", "--dk", "128", "--seq", "512", "--target", "avx512"},
	 "tiled bq512 bk64 mq32 nk8 nv0"},
	{{"--h", "8", "--dk", "128", "--seq", "511", "--target", "avx512"},
	 "tiled bq511 bk128 mq32 nk8 nv0"},
	{{"--h", "8", "--dk", "96", "--target", "avx512"},
	 "tiled bq512 bk64 mq32 nk8 nv0"},
	/* a query block of 512 rows of 136 floats passes 256 KiB: as many
	 * whole micro-tiles as fit */
	{{"--h", "8", "--dk", "128", "--dv", "136", "--target", "avx512"},
	 "tiled bq480 bk128 mq32 nk8 nv8"},
	/* a fixed length under 3/2 of a block that the query block cannot
	 * hold at once: two blocks of half of it in whole micro-tiles, not a
	 * full one and a thin remainder */
	{{"--h", "8", "--dk", "128", "--seq", "577", "--target", "avx512"},
	 "tiled bq320 bk64 mq32 nk8 nv0"},
	{{"--h", "8", "--dk", "64", "--seq", "577", "--target", "avx512"},
	 "tiled bq577 bk80 mq32 nk8 nv0"},
	{{"--h", "8", "--dk", "256", "--seq", "300", "--target", "avx2"},
	 "tiled bq160 bk128 mq16 nk6 nv6"},
	{{"--h", "8", "--dk", "128", "--seq", "512", "--target", "avx2"},
	 "tiled bq512 bk128 mq16 nk6 nv6"},
	{{"--h", "8", "--dk", "64", "--seq", "128", "--target", "scalar"},
	 "tiled bq64 bk64 mq4 nk4 nv4"},
	/* decode items read the whole rows of both key/value heads: blocks of
	 * 8 keys by default */
	{{"--h", "2", "--dk", "64", "--seq", "1", "--seq-kv", "512", "--target",
	  "avx2", "--threads", "openmp"}, "rows bk8 uk1 uv1 ks4"},
	{{"--h", "8", "--dk", "64", "--seq", "3", "--target", "scalar",
	  "--unroll-max", "0", "--block-kv", "64"}, "rows bk64 uk0 uv0 ks1"},
};

ParameterizedTestParameters(knobs, plan_of_spec)
{
	return params_index(COUNT(planned));
}

/* The generator's plan of a spec, as a record's line. */
ParameterizedTest(int *i, knobs, plan_of_spec)
{
	char *argv[20] = {"mhagen"}, line[96], err[MHAGEN_ERR];
	struct mhagen_cli cli;
	struct mha_plan p;
	int argc = 1;

	for (int j = 0; planned[*i].v[j]; ++j)
		argv[argc++] = (char *)planned[*i].v[j];
	memset(&cli, 0, sizeof cli);
	cr_assert_eq(mhagen_parse_args(&cli, argc, argv, err), 0, "%s", err);
	cr_assert_eq(mhagen_plan(&cli.spec, NULL, &p, err), 0, "%s", err);
	mha_tunedb_plan(&p, line, sizeof line);
	cr_assert_str_eq(line, planned[*i].line);
}

/* The tuner's dimensions fit its space: per algorithm, at most
 * MHA_SPACE_DIMS knobs of at most MHA_SPACE_VALS values. */
Test(knobs, space_fits)
{
	for (int a = MHA_ALGO_TILED; a < MHA_ALGO_N; ++a) {
		int n = 0;
		for (int k = 0; k < MHA_KNOB_N; ++k) {
			const struct mha_knob_def *d = &mha_knob_table[k];
			if (k == MHA_KNOB_ALGO || !mha_knob_tuned(k) ||
			    !(d->algos & MHA_ALGO_BIT(a)))
				continue;
			++n;
			cr_assert_lt(d->ntries, MHA_SPACE_VALS, "%s", d->key);
			cr_assert_lt(d->nwide, MHA_SPACE_VALS, "%s", d->key);
		}
		cr_assert_leq(n, MHA_SPACE_DIMS);
	}
}

/* Summaries and reports list the knobs of a variant whose effect differs
 * from the default's plan: by the plan's words, so a knob set to what the
 * default does anyway (or clipped to it) is left out. */
static const struct differ_case {
	const char *knobs;        /* key=value words */
	const char *plan, *def_plan;
	const char *want;         /* mha_knobs_flags of the result */
} differ_cases[] = {
	{"algo=tiled block-q=128 block-kv=64 mq=16 nk=6 nv=6",
	 "tiled bq128 bk64 mq16 nk6 nv6", "tiled bq384 bk128 mq16 nk6 nv6",
	 "--block-q 128 --block-kv 64"},
	/* block-q 192 clipped to the 128 rows the default has too */
	{"algo=tiled block-q=192 block-kv=128 mq=16 nk=4 nv=6",
	 "tiled bq128 bk128 mq16 nk4 nv6", "tiled bq128 bk128 mq16 nk6 nv6",
	 "--nk 4"},
	/* the other algorithm: every knob of it */
	{"algo=rows block-kv=128 unroll-max=0",
	 "rows bk128 uk0 uv0 ks1", "tiled bq384 bk128 mq16 nk6 nv6",
	 "--algo rows --block-kv 128 --unroll-max 0"},
	{"algo=rows block-kv=64 unroll-max=4096",
	 "rows bk64 uk1 uv1 ks1", "rows bk128 uk1 uv1 ks1", "--block-kv 64"},
	{"algo=rows block-kv=128 unroll-max=0 kv-split=4",
	 "rows bk128 uk0 uv0 ks4", "rows bk128 uk1 uv1 ks1",
	 "--unroll-max 0 --kv-split 4"},
	{"algo=tiled block-q=32", "tiled bq32 bk64 mq4 nk4 nv4",
	 "tiled bq32 bk64 mq4 nk4 nv4", ""},
};

ParameterizedTestParameters(knobs, differing)
{
	return params_index(COUNT(differ_cases));
}

ParameterizedTest(int *i, knobs, differing)
{
	const struct differ_case *c = &differ_cases[*i];
	struct mha_knob k[MHA_KNOBS_MAX], d[MHA_KNOBS_MAX];
	char words[256], *save = NULL, got[256];
	int n = 0, nd;

	snprintf(words, sizeof words, "%s", c->knobs);
	for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '=');
		cr_assert_not_null(eq);
		*eq = '\0';
		snprintf(k[n].key, sizeof k[n].key, "%s", w);
		snprintf(k[n].val, sizeof k[n].val, "%s", eq + 1);
		++n;
	}
	nd = mha_knobs_differing(k, n, c->plan, c->def_plan, d);
	mha_knobs_flags(d, nd, got, sizeof got);
	cr_assert_str_eq(got, c->want, "%s against %s", c->plan, c->def_plan);
}
