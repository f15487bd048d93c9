/* The tuner's search (generator/tunesearch.c) on synthetic knob spaces: a
 * fake measure callback whose times have a known minimum, failing and
 * refused candidates, and a fake clock that each measurement advances, so
 * budgets run out and deadlines pass in microseconds. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../generator/tuneprogress.h"
#include "../generator/tunesearch.h"
#include "params.h"

#define COUNT(a) (sizeof (a) / sizeof (a)[0])
#define MAXCALLS 4096
#define COST 1.0          /* fake seconds per measurement */
#define RESERVE (MHA_CONFIRM_ROUNDS * (MHA_CONFIRM_TOP + 1)) /* again */

/* The world the fake callbacks see: per candidate its time and what
 * becomes of it, and a log of every call. */
struct fake {
	double t[MHA_SPACE_POINTS + 1];  /* seconds per call when it runs */
	int status[MHA_SPACE_POINTS + 1];/* MHA_MEASURE_* */
	int fail_again[MHA_SPACE_POINTS + 1]; /* fails when measured again
	                                    the fail_again'th time */
	int nagain[MHA_SPACE_POINTS + 1];
	int stop_after;                  /* set the stop flag after this many
	                                    calls; 0: never */
	int stop_call;                   /* the callback says interrupted at
	                                    this call (1-based); 0: never */
	int error_call;                  /* the callback fails at this call */
	int ncalls;
	struct call {
		int cand, is_default, again;
		double at;                   /* the fake clock when it began */
	} calls[MAXCALLS];
	int nnotes;                      /* measured callbacks */
	int notes_consistent;            /* each saw its candidate updated */
	int vary_again;                  /* a measurement again is slower by
	                                    a quarter each time */
	/* the search's progress as each measured callback saw it, and the
	 * figures of its progress line against those of its measurement */
	struct seen {
		int phase, done, total;
	} seen[MAXCALLS];
	int lines_consistent;
	char bad_line[1200];
};

static struct fake fk;
static struct mha_space sp;
static struct mha_point pts[MHA_SPACE_POINTS];
static struct mha_cand cands[MHA_SPACE_POINTS + 1];
static double clock_now;
static volatile sig_atomic_t stop_flag;
static const struct mha_search *running; /* the search the callbacks serve */
static uint64_t rng;

/* The fake clock: seconds that only measurements advance. */
static double fake_now(void)
{
	return clock_now;
}

/* A fixed seed for each test: every run draws the same numbers. */
static void seed(void)
{
	rng = 0x853c49e6748fea9bull;
}

/* A pseudo-random number in [0, 1). */
static double uniform(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng >> 11) * 0x1p-53;
}

TestSuite(search, .init = seed, .timeout = 10);

static const char *const keys[MHA_SPACE_DIMS] = {"k0", "k1", "k2", "k3",
                                                 "k4"};

/* A space of one algorithm with nd knobs of n[i] values each, its
 * combinations in mixed radix (knob 0 fastest) less those in hole[] (a -1
 * ends it: points the generator refuses).  Each point is a candidate of
 * its own, in order; candidate 0, the default, is the point with every
 * knob at its first value.  Every candidate measures ok in 1 ms. */
static void make_space(int nd, const int *n, const int *hole)
{
	int total = 1;

	memset(&sp, 0, sizeof sp);
	memset(pts, 0, sizeof pts);
	memset(cands, 0, sizeof cands);
	memset(&fk, 0, sizeof fk);
	fk.notes_consistent = 1;
	fk.lines_consistent = 1;
	clock_now = 0;
	stop_flag = 0;
	sp.pts = pts;
	sp.cands = cands;
	sp.ndims[0] = nd;
	for (int i = 0; i < nd; ++i) {
		sp.dims[0][i].key = keys[i];
		sp.dims[0][i].n = n[i];
		total *= n[i];
	}
	cr_assert(total <= MHA_SPACE_POINTS);
	for (int p = 0; p < total; ++p) {
		int skip = 0, x = p, q = sp.npts;
		for (int h = 0; hole && hole[h] >= 0; ++h)
			skip |= hole[h] == p;
		cr_assert(!skip || p > 0, "the default cannot be refused");
		if (skip)
			continue;
		for (int i = 0; i < nd; ++i) {
			pts[q].idx[i] = x % n[i];
			x /= n[i];
		}
		pts[q].cand = q;
		snprintf(cands[q].plan, sizeof cands[q].plan, "p%d", p);
		cands[q].point = q;
		++sp.npts;
	}
	sp.ncands = sp.npts;
	for (int c = 0; c < sp.ncands; ++c) {
		fk.t[c] = 1e-3;
		fk.status[c] = MHA_MEASURE_OK;
	}
}

/* The candidate of the point with knob values idx, -1 if none. */
static int cand_at(int nd, const int *idx)
{
	for (int q = 0; q < sp.npts; ++q)
		if (memcmp(pts[q].idx, idx, (size_t)nd * sizeof *idx) == 0)
			return pts[q].cand;
	return -1;
}

/* The measure callback: log the call, advance the clock, report. */
static int measure(void *ctx, int cand, int is_default, int again,
                   struct mha_measurement *m, char *err)
{
	struct fake *f = ctx;
	int status = f->status[cand];

	cr_assert_lt(f->ncalls, MAXCALLS);
	f->calls[f->ncalls++] = (struct call){cand, is_default, again, clock_now};
	if (f->ncalls == f->stop_call)
		return MHA_SEARCH_STOP;
	if (f->ncalls == f->error_call) {
		snprintf(err, MHAGEN_ERR, "planted error");
		return MHA_SEARCH_ERROR;
	}
	if (f->stop_after && f->ncalls >= f->stop_after)
		stop_flag = 1;
	if (again && ++f->nagain[cand] == f->fail_again[cand])
		status = MHA_MEASURE_FAILED;
	m->status = status;
	if (status == MHA_MEASURE_REFUSED)
		return MHA_SEARCH_DONE;
	clock_now += COST;
	m->cost = COST;
	m->median = f->t[cand];
	if (again && f->vary_again)
		m->median *= 1 + 0.25 * f->nagain[cand];
	m->min = 0.9 * m->median;
	m->max = 1.5 * m->median;
	m->flops = f->vary_again ? 1e8 : 1e6; /* ~100 GFLOP/s: 0.1 resolves */
	return MHA_SEARCH_DONE;
}

/* The progress line of measurement m of cand: its ms and GFLOP/s must be
 * m's own (flops / median), and on a measurement again the variant's
 * median beside the GFLOP/s at that median. */
static void check_line(struct fake *f, int cand, const struct mha_measurement *m)
{
	char line[1200];
	const char *at;
	double ms, lo, hi, gf, vms, vgf;
	int nts;

	mha_progress_line(line, sizeof line, running, &cands[cand], "--k0 1", m,
	                  "");
	at = strstr(line, "--k0 1: ");
	if (!at || sscanf(at + 8, "%lf ms (%lf to %lf ms), %lf GFLOP/s", &ms, &lo,
	                  &hi, &gf) != 4 ||
	    fabs(ms - m->median * 1e3) > 1e-3 * ms ||
	    fabs(lo - m->min * 1e3) > 1e-3 * lo ||
	    fabs(hi - m->max * 1e3) > 1e-3 * hi ||
	    fabs(gf - m->flops / m->median * 1e-9) > 0.05 + 1e-3 * gf)
		goto bad;
	at = strstr(line, "; median of its ");
	if (running->phase == MHA_PHASE_REMEASURE) {
		if (!at || sscanf(at, "; median of its %d: %lf ms, %lf GFLOP/s",
		                  &nts, &vms, &vgf) != 3 ||
		    nts != cands[cand].nts ||
		    fabs(vms - cands[cand].t * 1e3) > 1e-3 * vms ||
		    fabs(vgf - m->flops / cands[cand].t * 1e-9) > 0.05 + 1e-3 * vgf)
			goto bad;
	} else if (at) {
		goto bad;
	}
	return;
bad:
	if (f->lines_consistent)
		snprintf(f->bad_line, sizeof f->bad_line, "%s", line);
	f->lines_consistent = 0;
}

/* The measured callback: the candidate must already show the outcome. */
static int measured(void *ctx, int cand, int is_default, int again,
                    const struct mha_measurement *m, char *err)
{
	struct fake *f = ctx;
	int want = m->status == MHA_MEASURE_REFUSED ? 3 :
	           m->status == MHA_MEASURE_FAILED ? 2 : 0;

	(void)is_default;
	(void)again;
	(void)err;
	if (running && f->nnotes < MAXCALLS)
		f->seen[f->nnotes] = (struct seen){(int)running->phase,
		                                   running->phase_done,
		                                   running->phase_total};
	if (running && m->status == MHA_MEASURE_OK && cands[cand].state == 1)
		check_line(f, cand, m);
	++f->nnotes;
	if (want ? cands[cand].state != want : cands[cand].state == 0)
		f->notes_consistent = 0;
	return MHA_SEARCH_DONE;
}

/* Search the space with budget seconds of the fake clock; returns what
 * mha_search_run returned. */
static int search(struct mha_search *s, const char *how, double budget,
                  int have_default)
{
	char err[MHAGEN_ERR] = "";
	int rc;

	mha_search_init(s, &sp, clock_now + budget, measure, measured, &fk);
	s->now = fake_now;
	s->stop = &stop_flag;
	running = s;
	rc = mha_search_run(s, how, have_default, err);
	running = NULL;
	cr_assert(rc == 0 || err[0], "an error without a message");
	return rc;
}

/* The candidate with the least time among those that measure ok. */
static int true_best(void)
{
	int best = -1;

	for (int c = 0; c < sp.ncands; ++c)
		if (fk.status[c] == MHA_MEASURE_OK && !fk.fail_again[c] &&
		    (best < 0 || fk.t[c] < fk.t[best]))
			best = c;
	return best;
}

/* How many calls measured candidate c (and again when again). */
static int calls_of(int c, int again)
{
	int n = 0;

	for (int i = 0; i < fk.ncalls; ++i)
		n += fk.calls[i].cand == c && (again || !fk.calls[i].again);
	return n;
}

/* ---- exhaustive */

/* Spaces for the exhaustive search: the knobs' sizes and where the
 * minimum is put (a candidate; -1: wherever random times put it). */
struct space_case {
	int nd;
	int n[MHA_SPACE_DIMS];
	int min;
};

static const struct space_case exhaustive_cases[] = {
	{1, {7}, 6},
	{2, {4, 5}, -1},
	{3, {6, 4, 3}, 0},
	{3, {6, 4, 3}, 71},
	{5, {3, 3, 2, 4, 2}, -1},
};

ParameterizedTestParameters(search, exhaustive_finds_minimum)
{
	return params_index(COUNT(exhaustive_cases));
}

/* Every candidate is measured once (besides the measurements again) and
 * the fastest is the best, wherever it lies. */
ParameterizedTest(int *i, search, exhaustive_finds_minimum)
{
	const struct space_case *k = &exhaustive_cases[*i];
	struct mha_search s;
	int want;

	make_space(k->nd, k->n, NULL);
	for (int c = 0; c < sp.ncands; ++c)
		fk.t[c] = 1e-3 * (1 + uniform());
	if (k->min >= 0)
		fk.t[k->min] = 0.5e-3;
	want = true_best();
	cr_assert_eq(search(&s, "exhaustive", 1e6, 0), 0);
	cr_assert_str_eq(s.how, "exhaustive");
	cr_assert_eq(mha_search_best(&sp), want, "best %d, the minimum is %d",
	             mha_search_best(&sp), want);
	cr_assert_eq(s.measured, sp.ncands);
	for (int c = 0; c < sp.ncands; ++c) {
		cr_assert_eq(cands[c].state, 1, "candidate %d not measured", c);
		cr_assert_eq(calls_of(c, 0), 1, "candidate %d measured twice", c);
	}
	cr_assert_eq(fk.nnotes, fk.ncalls);
	cr_assert(fk.notes_consistent);
}

/* auto: exhaustive when every candidate and the measurements again fit the
 * budget (at the cost the default's measurement showed), else descent. */
Test(search, auto_chooses_by_budget)
{
	static const int n[] = {4, 4};
	struct mha_search s;

	make_space(2, n, NULL);
	/* 1 s for the default, then 15 more and 8 again: 24 s */
	search(&s, "auto", COST * (sp.ncands + RESERVE), 0);
	cr_assert_str_eq(s.how, "exhaustive");
	make_space(2, n, NULL);
	search(&s, "auto", COST * (sp.ncands + RESERVE) - 0.5, 0);
	cr_assert_str_eq(s.how, "descent");
}

/* ---- descent */

/* Separable convex spaces: time grows with the squared distance of each
 * knob from its minimum m (weighted), so a pass of coordinate descent
 * from the default finds the minimum. */
struct descent_case {
	int nd;
	int n[MHA_SPACE_DIMS];
	int m[MHA_SPACE_DIMS];
	double w[MHA_SPACE_DIMS];
};

static const struct descent_case descent_cases[] = {
	{2, {8, 8}, {5, 3}, {1, 1}},
	{3, {6, 4, 4}, {3, 2, 3}, {1, 3, 0.5}},
	{3, {6, 4, 4}, {0, 0, 3}, {2, 1, 1}},
	{4, {6, 4, 4, 4}, {5, 1, 2, 3}, {1, 1, 1, 1}},
	{5, {6, 4, 4, 4, 4}, {2, 3, 1, 0, 2}, {0.1, 1, 10, 1, 1}},
};

ParameterizedTestParameters(search, descent_reaches_minimum)
{
	return params_index(COUNT(descent_cases));
}

/* With a budget of one pass (one measurement per value of each knob, the
 * default's included, and the measurements again), descent ends at the
 * minimum; a search that measured at random would seldom find it. */
ParameterizedTest(int *i, search, descent_reaches_minimum)
{
	const struct descent_case *k = &descent_cases[*i];
	struct mha_search s;
	int pass = 1, want;

	make_space(k->nd, k->n, NULL);
	for (int c = 0; c < sp.ncands; ++c) {
		const int *idx = pts[cands[c].point].idx;
		double d = 0;
		for (int j = 0; j < k->nd; ++j)
			d += k->w[j] * (idx[j] - k->m[j]) * (idx[j] - k->m[j]);
		fk.t[c] = 1e-3 * (1 + d);
	}
	for (int j = 0; j < k->nd; ++j)
		pass += k->n[j] - 1;
	want = cand_at(k->nd, k->m);
	cr_assert_eq(search(&s, "descent", COST * (pass + RESERVE), 0), 0);
	cr_assert_str_eq(s.how, "descent");
	cr_assert_eq(s.measured, pass, "measured %d, a pass is %d", s.measured,
	             pass);
	cr_assert_lt(pass, sp.ncands / 2, "the space is too small to tell");
	cr_assert_eq(mha_search_best(&sp), want, "best %d, the minimum is %d",
	             mha_search_best(&sp), want);
}

/* Given all the time it wants, descent with random restarts measures every
 * candidate once; the points the generator refused (holes in the grid)
 * are stepped over. */
Test(search, descent_restarts_cover_the_space)
{
	static const int n[] = {5, 4, 3};
	static const int hole[] = {7, 30, 31, 59, -1};
	struct mha_search s;

	make_space(3, n, hole);
	cr_assert_eq(sp.ncands, 5 * 4 * 3 - 4);
	for (int c = 0; c < sp.ncands; ++c)
		fk.t[c] = 1e-3 * (1 + uniform());
	cr_assert_eq(search(&s, "descent", 1e6, 0), 0);
	for (int c = 0; c < sp.ncands; ++c) {
		cr_assert_eq(cands[c].state, 1, "candidate %d", c);
		cr_assert_eq(calls_of(c, 0), 1, "candidate %d", c);
	}
	cr_assert_eq(s.measured, sp.ncands);
	cr_assert_eq(mha_search_best(&sp), true_best());
}

/* ---- failures and refusals */

/* Candidates that fail (the fastest among them) are never the best, in
 * exhaustive search or descent, and each is counted once. */
Test(search, failed_never_best)
{
	static const int n[] = {6, 5};
	static const int bad[] = {13, 22, 29};
	static const char *const hows[] = {"exhaustive", "descent"};

	for (size_t h = 0; h < COUNT(hows); ++h) {
		struct mha_search s;
		make_space(2, n, NULL);
		for (int c = 0; c < sp.ncands; ++c)
			fk.t[c] = 1e-3 * (2 + uniform());
		for (size_t b = 0; b < COUNT(bad); ++b) {
			fk.status[bad[b]] = MHA_MEASURE_FAILED;
			fk.t[bad[b]] = 0.1e-3 * (double)(b + 1); /* the fastest */
		}
		cr_assert_eq(search(&s, hows[h], 1e6, 0), 0);
		cr_assert_eq(mha_search_best(&sp), true_best(), "%s", hows[h]);
		for (size_t b = 0; b < COUNT(bad); ++b)
			cr_assert_eq(cands[bad[b]].state, 2);
		cr_assert_eq(s.failed, (int)COUNT(bad), "%s", hows[h]);
		cr_assert(fk.notes_consistent);
	}
}

/* A candidate that measured fast but fails when measured again is failed
 * for good, even when a later measurement is ok: never the best, counted
 * once. */
Test(search, failed_again_is_never_best)
{
	static const int n[] = {4, 4};
	struct mha_search s;
	int fast = 9;

	make_space(2, n, NULL);
	for (int c = 0; c < sp.ncands; ++c)
		fk.t[c] = 1e-3 * (2 + uniform());
	fk.t[fast] = 0.5e-3;
	fk.fail_again[fast] = 1;    /* the first time again; then ok */
	cr_assert_eq(search(&s, "exhaustive", 1e6, 0), 0);
	cr_assert_eq(calls_of(fast, 1), 1 + MHA_CONFIRM_ROUNDS);
	cr_assert_eq(cands[fast].state, 2);
	cr_assert_eq(s.failed, 1);
	cr_assert_eq(mha_search_best(&sp), true_best());
	cr_assert_neq(true_best(), fast);
	cr_assert(fk.notes_consistent);
}

/* Candidates the generator refuses when asked for the kernel: counted,
 * state 3, asked once, never the best; the search goes on past them. */
Test(search, refused_never_best)
{
	static const int n[] = {5, 5};
	static const int no[] = {0, 6, 12, 18};
	static const char *const hows[] = {"exhaustive", "descent"};

	for (size_t h = 0; h < COUNT(hows); ++h) {
		struct mha_search s;
		make_space(2, n, NULL);
		for (int c = 0; c < sp.ncands; ++c)
			fk.t[c] = 1e-3 * (2 + uniform());
		for (size_t b = 0; b < COUNT(no); ++b) {
			fk.status[no[b]] = MHA_MEASURE_REFUSED;
			fk.t[no[b]] = 0.1e-3;
		}
		cr_assert_eq(search(&s, hows[h], 1e6, 0), 0);
		cr_assert_eq(s.refused, (int)COUNT(no), "%s", hows[h]);
		for (size_t b = 0; b < COUNT(no); ++b) {
			cr_assert_eq(cands[no[b]].state, 3);
			cr_assert_eq(calls_of(no[b], 1), 1);
		}
		cr_assert_eq(mha_search_best(&sp), true_best(), "%s", hows[h]);
		/* the default was refused: nothing is measured again */
		for (int i = 0; i < fk.ncalls; ++i)
			cr_assert_not(fk.calls[i].again);
		cr_assert_eq(s.measured + s.refused, sp.ncands);
	}
}

/* ---- the default, the budget, the measurements again */

/* The default is measured first, forced, even when the budget is gone;
 * nothing else is then. */
Test(search, default_first_past_budget)
{
	static const int n[] = {4, 4};
	struct mha_search s;

	make_space(2, n, NULL);
	clock_now = 100;
	cr_assert_eq(search(&s, "auto", -5, 0), 0);
	cr_assert_eq(fk.ncalls, 1);
	cr_assert_eq(fk.calls[0].cand, 0);
	cr_assert(fk.calls[0].is_default);
	cr_assert_not(fk.calls[0].again);
	cr_assert_eq(cands[0].state, 1);
	cr_assert_str_eq(s.how, "descent");
	/* with the default known, nothing at all */
	make_space(2, n, NULL);
	cands[0].state = 1;
	mha_cand_add_time(&cands[0], 1e-3, 1e6);
	cr_assert_eq(search(&s, "exhaustive", -5, 1), 0);
	cr_assert_eq(fk.ncalls, 0);
}

/* In a search with time to spare the default comes first too. */
Test(search, default_first)
{
	static const int n[] = {3, 3};
	static const char *const hows[] = {"auto", "exhaustive", "descent"};

	for (size_t h = 0; h < COUNT(hows); ++h) {
		struct mha_search s;
		make_space(2, n, NULL);
		search(&s, hows[h], 1e6, 0);
		cr_assert_gt(fk.ncalls, 1);
		cr_assert(fk.calls[0].is_default && fk.calls[0].cand == 0);
		for (int i = 1; i < fk.ncalls; ++i)
			cr_assert(!fk.calls[i].is_default || fk.calls[i].again,
			          "%s: the default measured twice", hows[h]);
	}
}

/* After the search, MHA_CONFIRM_ROUNDS rounds measure again the default
 * and the MHA_CONFIRM_TOP fastest others, fastest first; their times
 * become the medians of their measurements. */
Test(search, confirm_measures_default_and_top)
{
	static const int n[] = {5, 4};
	struct mha_search s;
	int top[MHA_CONFIRM_TOP] = {17, 3, 11}, first_again = -1;

	make_space(2, n, NULL);
	for (int c = 0; c < sp.ncands; ++c)
		fk.t[c] = 1e-3 * (2 + uniform());
	for (int j = 0; j < MHA_CONFIRM_TOP; ++j)
		fk.t[top[j]] = 1e-3 * (1 + 0.1 * j);
	cr_assert_eq(search(&s, "exhaustive", 1e6, 0), 0);
	cr_assert_eq(s.again, RESERVE);
	for (int i = 0; i < fk.ncalls; ++i)
		if (fk.calls[i].again) {
			first_again = i;
			break;
		}
	cr_assert_eq(first_again, sp.ncands, "measured again before the end");
	cr_assert_eq(fk.ncalls, sp.ncands + RESERVE);
	for (int r = 0; r < MHA_CONFIRM_ROUNDS; ++r) {
		const struct call *c = &fk.calls[first_again +
		                                 r * (MHA_CONFIRM_TOP + 1)];
		cr_assert(c[0].again && c[0].is_default && c[0].cand == 0);
		for (int j = 0; j < MHA_CONFIRM_TOP; ++j) {
			cr_assert(c[1 + j].again && !c[1 + j].is_default);
			cr_assert_eq(c[1 + j].cand, top[j], "round %d: %d, not %d", r,
			             c[1 + j].cand, top[j]);
		}
	}
	cr_assert_eq(cands[0].nts, 1 + MHA_CONFIRM_ROUNDS);
	cr_assert_eq(cands[top[0]].nts, 1 + MHA_CONFIRM_ROUNDS);
	/* the median of equal measurements is that one, exactly */
	cr_assert_eq(cands[top[0]].t, fk.t[top[0]]);
	cr_assert_eq(mha_search_best(&sp), top[0]);
}

/* No measurements again when the default failed, or when nothing was
 * measured now (everything known from before). */
Test(search, confirm_needs_default_and_news)
{
	static const int n[] = {4, 3};
	struct mha_search s;

	make_space(2, n, NULL);
	fk.status[0] = MHA_MEASURE_FAILED;
	search(&s, "exhaustive", 1e6, 0);
	cr_assert_eq(s.again, 0);
	cr_assert_eq(fk.ncalls, sp.ncands);

	make_space(2, n, NULL);
	for (int c = 0; c < sp.ncands; ++c) {
		cands[c].state = 1;
		mha_cand_add_time(&cands[c], 1e-3 + 1e-6 * c, 1e6);
	}
	search(&s, "exhaustive", 1e6, 1);
	cr_assert_eq(fk.ncalls, 0);
	cr_assert_eq(s.measured, 0);
}

/* Budgets in measurements (of COST fake seconds each). */
static const double budgets[] = {RESERVE + 2, RESERVE + 5.5, 20, 37.25, 60};

ParameterizedTestParameters(search, deadline_honoured)
{
	return params_index(COUNT(budgets));
}

/* The search proper ends where the measurements again still fit: every
 * measurement of it ends by then, and one more would not; the measurements
 * again end by the deadline.  The budget is used, not overrun. */
ParameterizedTest(int *i, search, deadline_honoured)
{
	static const int n[] = {8, 8, 4};
	static const char *const hows[] = {"exhaustive", "descent"};
	const double deadline = budgets[*i] * COST;
	/* whole and quarter seconds add up exactly; eps only guards that */
	const double end = deadline - RESERVE * COST, eps = 1e-9;

	for (size_t h = 0; h < COUNT(hows); ++h) {
		struct mha_search s;
		double last = 0;
		make_space(3, n, NULL);
		for (int c = 0; c < sp.ncands; ++c)
			fk.t[c] = 1e-3 * (1 + uniform());
		cr_assert_eq(search(&s, hows[h], deadline, 0), 0);
		for (int j = 0; j < fk.ncalls; ++j)
			if (!fk.calls[j].again) {
				last = fk.calls[j].at + COST;
				cr_assert_leq(last, end + eps, "%s: a measurement ends at "
				              "%g s, past %g s", hows[h], last, end);
			}
		cr_assert_gt(last + COST, end + eps, "%s: stopped at %g s, before "
		             "%g s", hows[h], last, end);
		cr_assert_leq(clock_now, deadline + eps, "%s: ended at %g s of %g",
		              hows[h], clock_now, deadline);
		cr_assert_gt(s.again, 0);
		cr_assert_not(s.interrupted);
	}
}

/* ---- interruption and errors */

/* The stop flag (SIGINT) ends the search before the next measurement and
 * skips the measurements again; so does a callback interrupted. */
Test(search, interrupted)
{
	static const int n[] = {6, 6};
	static const char *const hows[] = {"exhaustive", "descent"};

	for (size_t h = 0; h < COUNT(hows); ++h) {
		struct mha_search s;
		make_space(2, n, NULL);
		fk.stop_after = 5;
		cr_assert_eq(search(&s, hows[h], 1e6, 0), 0);
		cr_assert(s.interrupted);
		cr_assert_eq(fk.ncalls, 5);
		cr_assert_eq(s.again, 0);

		make_space(2, n, NULL);
		fk.stop_call = 7;
		cr_assert_eq(search(&s, hows[h], 1e6, 0), 0);
		cr_assert(s.interrupted);
		cr_assert_eq(fk.ncalls, 7);
		cr_assert_eq(s.measured, 6);
		cr_assert_eq(s.again, 0);
	}
	/* interrupted in the default: no search chosen */
	{
		struct mha_search s;
		make_space(2, n, NULL);
		fk.stop_call = 1;
		cr_assert_eq(search(&s, "auto", 1e6, 0), 0);
		cr_assert(s.interrupted);
		cr_assert_null(s.how);
		cr_assert_eq(fk.ncalls, 1);
	}
}

/* A callback's error ends the search at once with -1. */
Test(search, error_stops)
{
	static const int n[] = {6, 6};
	static const char *const hows[] = {"exhaustive", "descent"};

	for (size_t h = 0; h < COUNT(hows); ++h) {
		struct mha_search s;
		make_space(2, n, NULL);
		fk.error_call = 4;
		cr_assert_eq(search(&s, hows[h], 1e6, 0), -1);
		cr_assert_eq(fk.ncalls, 4);
		cr_assert_not(s.interrupted);
	}
}

/* ---- bookkeeping */

/* A candidate's time is the median of its measurements. */
Test(search, cand_time_is_median)
{
	struct mha_cand c;

	memset(&c, 0, sizeof c);
	mha_cand_add_time(&c, 3e-3, 1e6);
	cr_assert_eq(c.t, 3e-3);
	mha_cand_add_time(&c, 1e-3, 1e6);
	cr_assert_eq(c.t, 2e-3);
	mha_cand_add_time(&c, 9e-3, 1e6);
	cr_assert_eq(c.t, 3e-3);
	/* ts keeps the order they came in */
	cr_assert(c.ts[0] == 3e-3 && c.ts[1] == 1e-3 && c.ts[2] == 9e-3);
	/* 1e6 flops in 3 ms: exact in binary to well within 1e-12 */
	cr_assert(fabs(c.gflops - 1e6 / 3e-3 * 1e-9) < 1e-12);
}

/* The estimate leaves out the first measurement (it also computes the
 * reference outputs); the search's end leaves room for the measurements
 * again once the estimate rests on a second. */
Test(search, estimate_and_end)
{
	static const int n[] = {3};
	struct mha_search s;

	make_space(1, n, NULL);
	mha_search_init(&s, &sp, 100, measure, measured, &fk);
	cr_assert_eq(mha_search_estimate(&s), 1.0);
	cr_assert_eq(mha_search_end(&s), 100);
	s.cost = 5, s.costn = 1, s.first = 5;
	cr_assert_eq(mha_search_estimate(&s), 5);
	cr_assert_eq(mha_search_end(&s), 100);
	s.cost = 9, s.costn = 3;
	cr_assert_eq(mha_search_estimate(&s), 2);
	cr_assert_eq(mha_search_end(&s), 100 - RESERVE * 2);
}

/* ---- progress */

/* Searches of every kind: how, budget in measurements, known default,
 * refused points, failing candidates, a stop after some calls. */
struct progress_case {
	const char *how;
	double budget;
	int have_default;
	int hole[4];
	int fail;             /* a candidate that fails, 0: none */
	int stop_after;
};

static const struct progress_case progress_cases[] = {
	{"exhaustive", 1e6, 0, {-1}, 0, 0},
	{"exhaustive", 1e6, 0, {3, 7, 8, -1}, 5, 0},
	{"exhaustive", 1e6, 1, {-1}, 0, 0},
	{"descent", RESERVE + 6, 0, {-1}, 0, 0},
	{"descent", RESERVE + 20, 0, {2, 9, -1}, 4, 0},
	{"descent", 1e6, 0, {-1}, 0, 0},
	{"auto", RESERVE + 3.5, 0, {-1}, 0, 0},
	{"auto", 1e6, 0, {-1}, 0, 9},
};

ParameterizedTestParameters(search, progress_fixed_totals)
{
	return params_index(COUNT(progress_cases));
}

/* Progress per phase, as each measured callback sees it: the phases come
 * in order (default, measure, re-measure), each once; a phase's total is
 * fixed from its first visit to its last, its count goes 1, 2, 3... and
 * never passes the total; the default's total is 1, the re-measure's the
 * rounds times the variants measured again.  Every progress line gives
 * one measurement's ms beside that measurement's GFLOP/s. */
ParameterizedTest(int *i, search, progress_fixed_totals)
{
	static const int n[] = {4, 3, 3};
	const struct progress_case *k = &progress_cases[*i];
	struct mha_search s;
	int last = -1, ok = 0;

	make_space(3, n, k->hole);
	fk.vary_again = 1;
	for (int c = 0; c < sp.ncands; ++c)
		fk.t[c] = 1e-3 * (1 + uniform());
	if (k->fail)
		fk.status[k->fail] = MHA_MEASURE_FAILED;
	fk.stop_after = k->stop_after;
	if (k->have_default) {
		cands[0].state = 1;
		mha_cand_add_time(&cands[0], fk.t[0], 1e6);
	}
	cr_assert_eq(search(&s, k->how, COST * k->budget, k->have_default), 0);
	cr_assert_gt(fk.nnotes, 0);
	for (int c = 1; c < sp.ncands; ++c)
		ok += cands[c].state == 1;
	for (int j = 0; j < fk.nnotes; ++j) {
		const struct seen *v = &fk.seen[j];
		if (v->phase != last) {
			cr_assert_gt(v->phase, last, "call %d: phase %d after %d", j,
			             v->phase, last);
			cr_assert_eq(v->done, 1, "call %d: a phase starts at 1", j);
			last = v->phase;
		} else {
			cr_assert_eq(v->total, fk.seen[j - 1].total,
			             "call %d: the total moved from %d to %d", j,
			             fk.seen[j - 1].total, v->total);
			cr_assert_eq(v->done, fk.seen[j - 1].done + 1, "call %d", j);
		}
		cr_assert_leq(v->done, v->total, "call %d: %d of %d", j, v->done,
		              v->total);
		if (v->phase == MHA_PHASE_DEFAULT)
			cr_assert_eq(v->total, 1);
		if (v->phase == MHA_PHASE_MEASURE)
			cr_assert_leq(v->total, sp.ncands - 1);
		if (v->phase == MHA_PHASE_REMEASURE)
			cr_assert_eq(v->total, MHA_CONFIRM_ROUNDS * (1 + (ok < MHA_CONFIRM_TOP
			             ? ok : MHA_CONFIRM_TOP)), "re-measure total %d",
			             v->total);
	}
	cr_assert_eq(fk.seen[0].phase, k->have_default ? MHA_PHASE_MEASURE
	                                               : MHA_PHASE_DEFAULT);
	cr_assert(fk.lines_consistent, "a progress line: %s", fk.bad_line);
}

/* The speedup's spread: the least and greatest ratio of one measurement
 * of each; one measurement each has none. */
Test(search, speedup_spread)
{
	static const double d[] = {2.0e-3, 2.2e-3, 1.9e-3}, b[] = {1.0e-3, 1.1e-3};
	double dlo, dhi, blo, bhi;
	char buf[128];

	mha_range(d, 3, &dlo, &dhi);
	mha_range(b, 2, &blo, &bhi);
	cr_assert(dlo == 1.9e-3 && dhi == 2.2e-3 && blo == 1.0e-3 && bhi == 1.1e-3);
	mha_fmt_speedup(buf, sizeof buf, 2.0e-3, dlo, dhi, 3, 1.05e-3, blo, bhi, 2);
	cr_assert_str_eq(buf, "1.90x (1.73x to 2.20x over 3 and 2 measurements)");
	mha_fmt_speedup(buf, sizeof buf, 2.0e-3, 2e-3, 2e-3, 1, 1e-3, 1e-3, 1e-3, 1);
	cr_assert_str_eq(buf, "2.00x (one measurement each: no spread)");
}
