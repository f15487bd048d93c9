#include "tune.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/mha_cpu.h"
#include "../runtime/mha_time.h"
#include "fail.h"
#include "gen.h"
#include "spec.h"
#include "tunedb.h"
#include "tuneopts.h"
#include "tunereport.h"
#include "tunerun.h"
#include "tunespace.h"
#include "tunesweep.h"

#define MAXRUNNERS 4       /* compiler flag sets open at once */
#define TIMED_SECONDS 0.25 /* timed runs of one variant */
/* After the search, the default and the CONFIRM_TOP fastest variants are
 * measured again CONFIRM_ROUNDS times, alternating: the fastest of many
 * single measurements is biased low by noise. */
#define CONFIRM_TOP 3
#define CONFIRM_ROUNDS 2

/* Everything about tuning one spec. */
struct tuning {
	struct mha_space sp;            /* the spec, its knobs, candidates */
	char key[512];                  /* mha_spec_tuning_key */
	int def;                        /* the default variant's cand */
	/* counts for the summary */
	int measured, failed, from_db, refused, other_env;
	int again;                      /* measurements of known variants */
	double cost, costn;             /* seconds per measured variant */
	double first;                   /* the first one's (it computes the
	                                   reference outputs too) */
	int untried;                    /* variants not yet known */
	int exhaustive;
	double deadline;                /* the end of this spec's budget */
	int total;                      /* variants the progress bar expects */
	int done;
	double t0;
	const char *search;             /* "exhaustive" or "descent" */
};

/* What all specs of one command share. */
struct session {
	const struct mha_tune_opts *o;
	const char *template_dir;
	struct mha_tunedb db;
	int fd;                         /* the database, open for appending */
	char cpu[128], templates[32];
	struct mha_runner runners[MAXRUNNERS];
	int nrunners;
	int tty;
	int interrupted;
};

static void on_signal(int sig)
{
	(void)sig;
	mha_tune_stop = 1;
}

/* ---- measuring */

static struct mha_runner *runner_for(struct session *ss, const char *cc,
                                     const char *cflags, char *err)
{
	struct mha_runner *r;

	for (int i = 0; i < ss->nrunners; ++i)
		if (strcmp(ss->runners[i].cflags, cflags) == 0)
			return &ss->runners[i];
	if (ss->nrunners == MAXRUNNERS) {
		mhagen_fail(err, "tune: too many different --cflags in one run");
		return NULL;
	}
	r = &ss->runners[ss->nrunners];
	if (mha_runner_open(r, cc, cflags, ss->o->threads, err)) {
		mha_runner_close(r);
		return NULL;
	}
	++ss->nrunners;
	return r;
}

static double estimate(const struct tuning *t);

/* When the search must stop: the end of the budget less the time the
 * measurements again will take (known once a variant besides the first,
 * which also computed the reference outputs, was measured). */
static double search_end(const struct tuning *t)
{
	if (t->costn < 2)
		return t->deadline;
	return t->deadline - CONFIRM_ROUNDS * (CONFIRM_TOP + 1) * estimate(t);
}

/* Seconds one more measurement will take: the average of those after the
 * first (which also computed the reference outputs), else the first. */
static double estimate(const struct tuning *t)
{
	if (t->costn > 1)
		return (t->cost - t->first) / (t->costn - 1);
	return t->costn > 0 ? t->cost : 1.0;
}

static void fmt_time(char *buf, size_t n, double s)
{
	if (s >= 1.0)
		snprintf(buf, n, "%.3g s", s);
	else
		snprintf(buf, n, "%.4g ms", s * 1e3);
}

/* The progress display after variant i finished (line: its description). */
static void progress(struct session *ss, struct tuning *t, const char *line)
{
	const struct mha_cand *best = NULL;
	char bt[32] = "-";
	double left;
	int eta;

	for (int c = 0; c < t->sp.ncands; ++c)
		if (t->sp.cands[c].state == 1 && (!best || t->sp.cands[c].t < best->t))
			best = &t->sp.cands[c];
	if (best)
		fmt_time(bt, sizeof bt, best->t);
	if (t->total < t->done)
		t->total = t->done;
	if (!ss->tty) {
		fprintf(stderr, "mhagen: tune [%d/%d] %s\n", t->done, t->total, line);
		return;
	}
	left = (t->total - t->done) * estimate(t);
	if (mha_now() + left > search_end(t))
		left = search_end(t) - mha_now();
	eta = left > 0 ? (int)(left + 0.5) : 0;
	{
		char bar[31];
		int fill = t->total ? 30 * t->done / t->total : 30;
		for (int i = 0; i < 30; ++i)
			bar[i] = i < fill ? '#' : '.';
		bar[30] = '\0';
		fprintf(stderr, "\r\033[K[%s] %d/%d  best %s  ETA %d:%02d", bar,
		        t->done, t->total, bt, eta / 60, eta % 60);
	}
}

/* The record of a measured variant into the database; 0 or -1. */
static int record(struct session *ss, struct tuning *t, const struct mha_cand *c,
                  const struct mha_knob *k, int nk, int is_default,
                  const struct mha_runner *r, const struct mha_result *res,
                  char *err)
{
	struct mha_tune_rec rec;

	memset(&rec, 0, sizeof rec);
	snprintf(rec.spec, sizeof rec.spec, "%s", t->key);
	snprintf(rec.target, sizeof rec.target, "%s", t->sp.spec.target);
	memcpy(rec.knobs, k, (size_t)nk * sizeof *k);
	rec.nknobs = nk;
	rec.is_default = is_default;
	snprintf(rec.plan, sizeof rec.plan, "%s", c->plan);
	snprintf(rec.env.cpu, sizeof rec.env.cpu, "%s", ss->cpu);
	rec.env.threads = ss->o->threads;
	snprintf(rec.env.cc, sizeof rec.env.cc, "%s", r->cc);
	snprintf(rec.env.cc_version, sizeof rec.env.cc_version, "%s",
	         r->cc_version);
	snprintf(rec.env.cflags, sizeof rec.env.cflags, "%s", r->cflags);
	snprintf(rec.env.templates, sizeof rec.env.templates, "%s",
	         ss->templates);
	snprintf(rec.version, sizeof rec.version, "%s", MHAGEN_VERSION);
	rec.ok = res->ok;
	rec.median = res->median;
	rec.min = res->min;
	rec.max = res->max;
	rec.runs = res->runs;
	rec.gflops = res->ok ? res->flops / res->median * 1e-9 : 0;
	snprintf(rec.reason, sizeof rec.reason, "%s", res->reason);
	if (mha_tunedb_append(ss->fd, &rec))
		return mhagen_fail(err, "cannot write '%s': %s", ss->o->db,
		            strerror(errno));
	return 0;
}

/* The environment records of this run must match to be reused. */
static void session_env(const struct session *ss, const struct mha_runner *r,
                        struct mha_tune_env *e)
{
	memset(e, 0, sizeof *e);
	snprintf(e->cpu, sizeof e->cpu, "%s", ss->cpu);
	e->threads = ss->o->threads;
	snprintf(e->cc, sizeof e->cc, "%s", r->cc);
	snprintf(e->cc_version, sizeof e->cc_version, "%s", r->cc_version);
	snprintf(e->cflags, sizeof e->cflags, "%s", r->cflags);
	snprintf(e->templates, sizeof e->templates, "%s", ss->templates);
}

/* Add a measurement (median seconds) to candidate c; its time becomes the
 * median of all it has. */
static void add_time(struct mha_cand *c, double median, double flops)
{
	double v[16];

	if (c->nts < 16)
		c->ts[c->nts++] = median;
	memcpy(v, c->ts, (size_t)c->nts * sizeof *v);
	c->t = mha_median(v, (size_t)c->nts);
	c->flops = flops;
	c->gflops = flops / c->t * 1e-9;
}

enum { EVAL_DONE = 0, EVAL_STOP = 1, EVAL_ERROR = -1 };

/* Measure candidate c (the default variant when is_default) unless it is
 * known; honours the deadline unless forced.  EVAL_DONE, EVAL_STOP (out of
 * time or interrupted: ss->interrupted says which) or EVAL_ERROR. */
static int evaluate(struct session *ss, struct tuning *t,
                    struct mha_runner *r, int ci, int is_default, int force,
                    int again, char *err)
{
	struct mha_cand *c = &t->sp.cands[ci];
	struct mha_knob k[MHA_KNOBS_MAX];
	struct mha_result res;
	struct mha_spec s;
	char line[1024], flags[256], sub[MHAGEN_ERR], tm[32];
	char *text;
	size_t len;
	int nk;
	double t0;

	if (c->state && !is_default && !again)
		return EVAL_DONE;
	if (mha_tune_stop) {
		ss->interrupted = 1;
		return EVAL_STOP;
	}
	nk = mha_space_knobs(&t->sp, is_default ? NULL : &t->sp.pts[c->point], k);
	if (!force) {
		if (mha_now() + estimate(t) > search_end(t))
			return EVAL_STOP;
	}
	mha_knobs_flags(k, nk, flags, sizeof flags);
	if (mha_space_spec(&t->sp, k, nk, &s, sub) ||
	    mha_space_render(&t->sp, &s, "kernel", &text, &len, sub)) {
		c->state = 3;
		++t->refused;
		++t->done;
		snprintf(line, sizeof line, "%s: refused by the generator: %s",
		         flags, sub);
		progress(ss, t, line);
		return EVAL_DONE;
	}
	t0 = mha_now();
	if (mha_runner_measure(r, &s, text, len, TIMED_SECONDS, &res)) {
		free(text);
		ss->interrupted = 1;
		return EVAL_STOP;
	}
	free(text);
	if (t->costn == 0)
		t->first = mha_now() - t0;
	t->cost += mha_now() - t0;
	t->costn += 1;
	t->untried -= !is_default && !again;
	if (!t->exhaustive) {
		/* what fits the rest of the budget */
		double fit = (search_end(t) - mha_now()) / estimate(t);
		t->total = t->done + 1 + (fit < t->untried ? (fit > 0 ? (int)fit : 0)
		                                           : t->untried);
	}
	if (record(ss, t, c, k, nk, is_default, r, &res, err))
		return EVAL_ERROR;
	if (!again)
		++t->measured, ++t->done;
	else
		++t->again;
	if (res.ok && c->state != 2) {
		c->state = 1;
		add_time(c, res.median, res.flops);
		fmt_time(tm, sizeof tm, res.median);
		snprintf(line, sizeof line, "%s%s: %s, %.1f GFLOP/s",
		         is_default ? "default" : flags,
		         is_default && nk ? flags : "", tm, c->gflops);
	} else {
		if (c->state != 2)
			++t->failed;
		c->state = 2;
		snprintf(line, sizeof line, "%s: failed: %s",
		         is_default ? "default" : flags,
		         res.ok ? "an earlier measurement failed" : res.reason);
	}
	if (again) {
		char tagged[1100];
		snprintf(tagged, sizeof tagged, "again: %s", line);
		progress(ss, t, tagged);
	} else {
		progress(ss, t, line);
	}
	return EVAL_DONE;
}

/* Fill candidates from records of the database made in this environment;
 * the default's record is looked for by its knobs. */
static void from_db(struct session *ss, struct tuning *t,
                    const struct mha_runner *r, int *have_default)
{
	struct mha_tune_env e;

	session_env(ss, r, &e);
	*have_default = 0;
	for (size_t i = 0; i < ss->db.n; ++i) {
		const struct mha_tune_rec *rec = &ss->db.recs[i];
		if (strcmp(rec->spec, t->key) || strcmp(rec->target, t->sp.spec.target))
			continue;
		if (!mha_tune_env_equal(&rec->env, &e)) {
			++t->other_env;
			continue;
		}
		if (rec->is_default && mha_knobs_equal(rec->knobs, rec->nknobs,
		                                       t->sp.fixed, t->sp.nfixed))
			*have_default = 1;
		for (int c = 0; c < t->sp.ncands; ++c) {
			struct mha_cand *cd = &t->sp.cands[c];
			if (strcmp(cd->plan, rec->plan) != 0 || cd->state == 2)
				continue;
			if (!cd->state)
				++t->from_db;
			if (!rec->ok)
				++t->failed;
			cd->state = rec->ok ? 1 : 2;
			if (rec->ok)
				add_time(cd, rec->median, rec->gflops * rec->median * 1e9);
		}
	}
}

/* The candidate at point p with dim i of its algo set to value v; -1 if
 * no such point (refused by the generator). */
static int neighbour(const struct tuning *t, const struct mha_point *p, int algo,
                     int i, int v)
{
	for (int q = 0; q < t->sp.npts; ++q) {
		const struct mha_point *o = &t->sp.pts[q];
		int same = o->algo == algo;
		for (int d = 0; same && d < t->sp.ndims[algo]; ++d)
			same = o->idx[d] == (d == i ? v : algo == p->algo ? p->idx[d] : o->idx[d]);
		if (same)
			return o->cand;
	}
	return -1;
}

static double cand_time(const struct tuning *t, int c)
{
	return c >= 0 && t->sp.cands[c].state == 1 ? t->sp.cands[c].t : INFINITY;
}

/* Coordinate descent from candidate start: each pass tries every value of
 * every knob (and the other algorithm) with the rest fixed, moving to the
 * best after each knob, until a pass improves nothing. */
static int descend(struct session *ss, struct tuning *t, struct mha_runner *r,
                   int start, char *err)
{
	int cur = start, improved = 1;

	while (improved) {
		improved = 0;
		for (int algo = 0; algo < 2; ++algo) {
			const struct mha_point *p = &t->sp.pts[t->sp.cands[cur].point];
			int nd = algo == p->algo ? t->sp.ndims[algo] : 1;
			for (int i = 0; i < nd; ++i) {
				int best = cur;
				const struct mha_dim *d = &t->sp.dims[algo][i];
				if (d->fixed && algo == p->algo)
					continue;
				for (int v = 0; v < d->n; ++v) {
					/* across algorithms: the other's point nearest
					 * its first values, block-kv kept when it can be */
					int c = algo == p->algo ? neighbour(t, p, algo, i, v) : -1;
					int rc;
					if (algo != p->algo) {
						for (int q = 0; q < t->sp.npts && c < 0; ++q)
							if (t->sp.pts[q].algo == algo)
								c = t->sp.pts[q].cand;
						v = d->n;
					}
					if (c < 0)
						continue;
					rc = evaluate(ss, t, r, c, 0, 0, 0, err);
					if (rc)
						return rc;
					if (cand_time(t, c) < cand_time(t, best))
						best = c;
				}
				if (best != cur) {
					cur = best;
					improved = 1;
					p = &t->sp.pts[t->sp.cands[cur].point];
					if (p->algo != algo)
						break;
				}
			}
		}
	}
	return EVAL_DONE;
}

/* Tune one finished spec within deadline.  0, 1 when interrupted, -1 on
 * an error. */
static int tune_spec(struct session *ss, const struct mha_spec *spec,
                     double deadline, char *err)
{
	struct tuning t;
	struct mha_runner *r;
	char cflags[256];
	const char *cc = ss->o->cc ? ss->o->cc : getenv("CC");
	int have_default, rc = -1, untried = 0, best = -1;

	memset(&t, 0, sizeof t);
	t.deadline = deadline;
	t.t0 = mha_now();
	if (!cc || !*cc)
		cc = "clang";
	if (!mha_cpu_supports(spec->target))
		return mhagen_fail(err, "tune: this CPU cannot run target '%s' kernels",
		            spec->target);
	if (spec->threads == 0 && ss->o->threads > 1)
		return mhagen_fail(err, "tune: --threads %d needs kernels generated with "
		            "OpenMP: add --threads openmp to the spec",
		            ss->o->threads);
	snprintf(cflags, sizeof cflags, "%s", ss->o->cflags ? ss->o->cflags :
	         strcmp(spec->target, "avx512") == 0 ? "-O2 -mavx512f" :
	         strcmp(spec->target, "avx2") == 0 ? "-O2 -mavx2 -mfma" : "-O2");
	r = runner_for(ss, cc, cflags, err);
	if (!r)
		return -1;
	mha_spec_tuning_key(spec, t.key, sizeof t.key);
	if (mha_space_make(&t.sp, spec, ss->template_dir, err))
		goto done;
	from_db(ss, &t, r, &have_default);
	if (t.other_env)
		fprintf(stderr, "mhagen: %s: %d records from another CPU, compiler, "
		        "flags, thread count or template hash are not used\n",
		        t.key, t.other_env);
	for (int c = 1; c < t.sp.ncands; ++c)
		untried += !t.sp.cands[c].state;
	t.total = untried + !have_default;

	/* the default first, always, even past the budget: reports compare
	 * against it */
	if (!have_default) {
		int e = evaluate(ss, &t, r, 0, 1, 1, 0, err);
		if (e == EVAL_ERROR)
			goto done;
		if (ss->interrupted)
			goto summary;
	}
	{
		double est = estimate(&t);
		int exhaustive;
		exhaustive = strcmp(ss->o->search, "exhaustive") == 0 ||
		             (strcmp(ss->o->search, "auto") == 0 &&
		              mha_now() + (untried + CONFIRM_ROUNDS * (CONFIRM_TOP + 1)) *
		              est <= deadline);
		int e;
		t.search = exhaustive ? "exhaustive" : "descent";
		t.exhaustive = exhaustive;
		t.untried = untried;
		if (!exhaustive) {
			int fit = (int)((search_end(&t) - mha_now()) / est);
			t.total = t.done + (fit < untried ? (fit > 0 ? fit : 0) : untried);
		}
		if (exhaustive) {
			for (int c = 1; c < t.sp.ncands; ++c)
				if ((e = evaluate(ss, &t, r, c, 0, 0, 0, err)) != EVAL_DONE)
					break;
		} else {
			/* descent from the default, then from random points */
			uint64_t seed = 0x9e3779b97f4a7c15ull;
			int start = 0;
			while ((e = descend(ss, &t, r, start, err)) == EVAL_DONE) {
				int left = 0, pick;
				for (int c = 1; c < t.sp.ncands; ++c)
					left += !t.sp.cands[c].state;
				if (left == 0)
					break;
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				pick = (int)((seed >> 33) % (uint64_t)left);
				for (start = 1; start < t.sp.ncands; ++start)
					if (!t.sp.cands[start].state && pick-- == 0)
						break;
				if ((e = evaluate(ss, &t, r, start, 0, 0, 0, err)) != EVAL_DONE)
					break;
			}
		}
		if (e == EVAL_ERROR)
			goto done;
	}
	if (!ss->interrupted && t.measured > 0 && t.sp.cands[0].state == 1) {
		int top[CONFIRM_TOP], ntop = 0, e = EVAL_DONE;
		for (int c = 1; c < t.sp.ncands; ++c) {
			int at;
			if (t.sp.cands[c].state != 1)
				continue;
			for (at = ntop; at > 0 && t.sp.cands[top[at - 1]].t > t.sp.cands[c].t;
			     --at)
				if (at < CONFIRM_TOP)
					top[at] = top[at - 1];
			if (at < CONFIRM_TOP) {
				top[at] = c;
				if (ntop < CONFIRM_TOP)
					++ntop;
			}
		}
		for (int round = 0; ntop && round < CONFIRM_ROUNDS && !e; ++round) {
			e = evaluate(ss, &t, r, 0, 1, 1, 1, err);
			for (int i = 0; i < ntop && !e; ++i)
				e = evaluate(ss, &t, r, top[i], 0, 1, 1, err);
		}
		if (e == EVAL_ERROR)
			goto done;
	}
summary:
	if (ss->tty && t.done)
		fputc('\n', stderr);
	for (int c = 0; c < t.sp.ncands; ++c)
		if (t.sp.cands[c].state == 1 && (best < 0 || t.sp.cands[c].t < t.sp.cands[best].t))
			best = c;
	{
		char dt[32] = "-", bt[32] = "-", flags[256] = "";
		struct mha_knob k[MHA_KNOBS_MAX];
		int nk = 0, tried = 0;
		for (int c = 1; c < t.sp.ncands; ++c)
			tried += t.sp.cands[c].state != 0;
		nk = mha_space_knobs(&t.sp, best > 0 ?
		                     &t.sp.pts[t.sp.cands[best].point] : NULL, k);
		mha_knobs_flags(k, nk, flags, sizeof flags);
		if (t.sp.cands[0].state == 1)
			fmt_time(dt, sizeof dt, t.sp.cands[0].t);
		if (best >= 0)
			fmt_time(bt, sizeof bt, t.sp.cands[best].t);
		fprintf(stderr, "mhagen: tuned %s%s: %d of %d variants "
		        "known (%d measured now, %d from the database, %d failed, %d "
		        "refused; %d measurements again), search %s, %.0f s; "
		        "default %s, best %s%s%s",
		        t.key, ss->interrupted ? " (interrupted)" : "",
		        tried + (t.sp.cands[0].state != 0), t.sp.ncands, t.measured,
		        t.from_db, t.failed, t.refused, t.again,
		        t.search ? t.search : "none",
		        mha_now() - t.t0, dt, bt, best > 0 ? " with " : "",
		        best > 0 ? flags : best == 0 ? " (the default)" : "");
		if (best >= 0 && t.sp.cands[0].state == 1)
			fprintf(stderr, ", %.2fx\n", t.sp.cands[0].t / t.sp.cands[best].t);
		else
			fputc('\n', stderr);
		if (best >= 0)
			printf("%s%s%s\n", t.key, nk ? " " : "", flags);
		fflush(stdout);
	}
	rc = ss->interrupted ? 1 : 0;
done:
	mha_space_free(&t.sp);
	return rc;
}

/* ---- the command */

static int open_session(struct session *ss, const struct mha_tune_opts *o,
                        const char *template_dir, char *err)
{
	memset(ss, 0, sizeof *ss);
	ss->o = o;
	ss->fd = -1;
	ss->template_dir = template_dir;
	ss->tty = isatty(2);
	snprintf(ss->cpu, sizeof ss->cpu, "%s", mha_cpu_model());
	if (mhagen_template_hash(template_dir, ss->templates,
	                         sizeof ss->templates, err))
		return -1;
	if (mha_tunedb_load(&ss->db, o->db, err))
		return -1;
	if (ss->db.malformed)
		fprintf(stderr, "mhagen: %s: skipped %zu malformed line%s\n", o->db,
		        ss->db.malformed, ss->db.malformed == 1 ? "" : "s");
	return 0;
}

static void close_session(struct session *ss)
{
	for (int i = 0; i < ss->nrunners; ++i)
		mha_runner_close(&ss->runners[i]);
	if (ss->fd >= 0)
		close(ss->fd);
	mha_tunedb_free(&ss->db);
}

int mhagen_tune_main(int argc, char **argv)
{
	struct mha_tune_opts o;
	struct session ss;
	struct mha_sweep sw;
	struct mha_spec spec;
	struct sigaction sa;
	const char *template_dir = NULL;
	char err[MHAGEN_ERR];
	int npoints = 1, rc = 2, st = 0, tuning;
	double start = mha_now(), deadline;

	memset(&ss, 0, sizeof ss);
	ss.fd = -1;
	if (mha_tune_opts_parse(&o, argc, argv, err))
		goto fail;
	if (o.help) {
		fputs(mha_tune_usage, stdout);
		return 0;
	}
	for (int i = 1; i + 1 < o.spec_argc; ++i)
		if (strcmp(o.spec_argv[i], "--template-dir") == 0)
			template_dir = o.spec_argv[i + 1];
	tuning = o.any_spec || o.sweep;
	if (!tuning && !o.report && !o.plot) {
		mhagen_fail(err, "tune: give spec flags (--h N --dk N ...), --sweep, or "
		     "--report/--plot");
		goto fail;
	}
	if (o.sweep) {
		if (mha_sweep_parse(&sw, o.sweep, err))
			goto fail;
		for (int k = 0; k < sw.nkeys; ++k)
			npoints *= sw.nvals[k];
		/* every point must make a valid spec before anything runs */
		for (int p = 0; p < npoints; ++p)
			if (mha_sweep_spec(&o, &sw, p, &spec, err))
				goto fail;
	} else if (tuning) {
		struct mhagen_cli cli;
		if (mhagen_parse_args(&cli, o.spec_argc, (char **)o.spec_argv, err))
			goto fail;
		spec = cli.spec;
	}
	if (open_session(&ss, &o, template_dir, err))
		goto fail;
	if (tuning) {
		ss.fd = open(o.db, O_WRONLY | O_APPEND | O_CREAT, 0666);
		if (ss.fd < 0) {
			mhagen_fail(err, "cannot write '%s': %s", o.db, strerror(errno));
			goto fail;
		}
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		deadline = start + o.budget;
		for (int p = 0; p < npoints && !ss.interrupted; ++p) {
			double share;
			if (o.sweep && mha_sweep_spec(&o, &sw, p, &spec, err))
				goto fail;
			share = (deadline - mha_now()) / (npoints - p);
			if (o.sweep)
				fprintf(stderr, "mhagen: sweep point %d of %d, %.0f s\n",
				        p + 1, npoints, share > 0 ? share : 0);
			st = tune_spec(&ss, &spec, mha_now() + share, err);
			if (st < 0)
				goto fail;
			if (mha_tune_stop)
				ss.interrupted = 1;
		}
		if (o.sweep)
			fprintf(stderr, "mhagen: sweep of %d points took %.0f s (budget "
			        "%.0f s)%s\n", npoints, mha_now() - start, o.budget,
			        ss.interrupted ? ", interrupted" : "");
		if (ss.interrupted) {
			rc = 130;
			goto done;
		}
	}
	if (o.report || o.plot) {
		int rows;
		/* read again: this run's records are in the file now */
		mha_tunedb_free(&ss.db);
		if (mha_tunedb_load(&ss.db, o.db, err))
			goto fail;
		rows = mha_tune_report(&ss.db, ss.cpu, ss.templates, o.report, o.plot,
		                       err);
		if (rows < 0)
			goto fail;
		fprintf(stderr, "mhagen: report of %d spec%s from '%s' to %s%s%s\n",
		        rows, rows == 1 ? "" : "s", o.db, o.report ? o.report : "",
		        o.report && o.plot ? " and " : "", o.plot ? o.plot : "");
	}
	rc = 0;
	goto done;
fail:
	fprintf(stderr, "mhagen: %s\n", err);
	rc = mha_tune_stop ? 130 : 2;
done:
	close_session(&ss);
	return rc;
}
