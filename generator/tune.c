/* `mhagen tune`: the command, its sessions, and tuning one spec. */
#include "tune.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/mha_abi.h"
#include "../runtime/mha_cpu.h"
#include "../runtime/mha_time.h"
#include "fail.h"
#include "cli.h"
#include "gen.h"
#include "spec.h"
#include "tunedb.h"
#include "tuneopts.h"
#include "tuneprogress.h"
#include "tunereport.h"
#include "tunerun.h"
#include "tunesearch.h"
#include "tunespace.h"
#include "tunesweep.h"

#define MAXRUNNERS 4       /* compiler flag sets open at once */
#define TIMED_SECONDS 0.25 /* timed runs of one variant */

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

/* Everything about tuning one spec: the context of the search's
 * callbacks. */
struct tuning {
	struct session *ss;
	struct mha_runner *r;
	struct mha_space sp;            /* the spec, its knobs, candidates */
	struct mha_search se;           /* the search and most counts */
	char key[512];                  /* mha_spec_tuning_key */
	int from_db, other_env;         /* the other counts for the summary */
	double t0;
	/* the variant being measured, from measure to measured */
	struct mha_knob k[MHA_KNOBS_MAX];
	int nk;
	char flags[256];                /* its knobs as flags */
	struct mha_result res;
	char why[MHAGEN_ERR];           /* why the generator refused it */
	int shown, shown_phase;         /* the terminal's bar: drawn, phase */
};

/* SIGINT and SIGTERM: stop, keeping what was measured. */
static void on_signal(int sig)
{
	(void)sig;
	mha_tune_stop = 1;
}

/* ---- measuring */

/* The session's runner for cflags, opened on first use; NULL with err. */
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
	if (mha_runner_open(r, cc, cflags, ss->o->threads, ss->o->run_wrapper,
	                    err)) {
		mha_runner_close(r);
		return NULL;
	}
	++ss->nrunners;
	return r;
}

/* The progress display after a visit: the line on stderr, or on a
 * terminal the bar redrawn (a phase's last bar stays on its own line). */
static void progress(struct tuning *t, const char *line)
{
	const struct mha_search *se = &t->se;
	int best = mha_search_best(&t->sp);
	char bt[32], bar[256];

	if (!t->ss->tty) {
		fprintf(stderr, "mhagen: %s\n", line);
		return;
	}
	if (t->shown && t->shown_phase != (int)se->phase)
		fputc('\n', stderr);
	t->shown = 1;
	t->shown_phase = (int)se->phase;
	if (best >= 0)
		mha_fmt_time(bt, sizeof bt, t->sp.cands[best].t);
	mha_progress_bar(bar, sizeof bar, se, best >= 0 ? bt : NULL, mha_now());
	fprintf(stderr, "\r\033[K%s", bar);
}

/* The record of the variant just measured, candidate c, into the
 * database; 0 or -1 with err. */
static int record(const struct tuning *t, const struct mha_cand *c,
                  int is_default, char *err)
{
	const struct session *ss = t->ss;
	const struct mha_runner *r = t->r;
	const struct mha_result *res = &t->res;
	struct mha_tune_rec rec;

	memset(&rec, 0, sizeof rec);
	snprintf(rec.spec, sizeof rec.spec, "%s", t->key);
	snprintf(rec.target, sizeof rec.target, "%s", t->sp.spec.target);
	memcpy(rec.knobs, t->k, (size_t)t->nk * sizeof *t->k);
	rec.nknobs = t->nk;
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

/* The search's measure callback: generate candidate ci's kernel (the
 * default variant's when is_default) and measure it with the runner. */
static int measure(void *ctx, int ci, int is_default, int again,
                   struct mha_measurement *m, char *err)
{
	struct tuning *t = ctx;
	const struct mha_cand *c = &t->sp.cands[ci];
	struct mha_spec s;
	char *text;
	size_t len;
	double t0;

	(void)again;
	(void)err;
	t->nk = mha_space_knobs(&t->sp, is_default ? NULL : &t->sp.pts[c->point],
	                        t->k);
	mha_knobs_flags(t->k, t->nk, t->flags, sizeof t->flags);
	if (mha_space_spec(&t->sp, t->k, t->nk, &s, t->why) ||
	    mha_space_render(&t->sp, &s, "kernel", &text, &len, t->why)) {
		m->status = MHA_MEASURE_REFUSED;
		return MHA_SEARCH_DONE;
	}
	t0 = mha_now();
	if (mha_runner_measure(t->r, &s, text, len, TIMED_SECONDS, &t->res)) {
		free(text);
		return MHA_SEARCH_STOP;
	}
	free(text);
	m->cost = mha_now() - t0;
	m->status = t->res.ok ? MHA_MEASURE_OK : MHA_MEASURE_FAILED;
	m->median = t->res.median;
	m->min = t->res.min;
	m->max = t->res.max;
	m->flops = t->res.flops;
	return MHA_SEARCH_DONE;
}

/* The search's callback once it took in the measurement of candidate ci:
 * its record into the database, and a line of progress. */
static int measured(void *ctx, int ci, int is_default, int again,
                    const struct mha_measurement *m, char *err)
{
	struct tuning *t = ctx;
	const struct mha_cand *c = &t->sp.cands[ci];
	char line[1200], what[300];

	(void)again; /* the phase says so */

	if (m->status != MHA_MEASURE_REFUSED && record(t, c, is_default, err))
		return MHA_SEARCH_ERROR;
	if (is_default && t->nk)
		snprintf(what, sizeof what, "default (%s)", t->flags);
	else
		snprintf(what, sizeof what, "%s", is_default ? "default" : t->flags);
	if (m->status == MHA_MEASURE_OK && c->state != 1) {
		/* this run went well, an earlier one of the variant failed */
		struct mha_measurement f = *m;
		f.status = MHA_MEASURE_FAILED;
		mha_progress_line(line, sizeof line, &t->se, c, what, &f,
		                  "an earlier measurement failed");
	} else {
		mha_progress_line(line, sizeof line, &t->se, c, what, m,
		                  m->status == MHA_MEASURE_REFUSED ? t->why
		                                                   : t->res.reason);
	}
	progress(t, line);
	return MHA_SEARCH_DONE;
}

/* Fill candidates from records of the database made in this environment;
 * the default's record is looked for by its knobs. */
static void from_db(struct tuning *t, int *have_default)
{
	const struct session *ss = t->ss;
	struct mha_tune_env e;

	session_env(ss, t->r, &e);
	*have_default = 0;
	for (size_t i = 0; i < ss->db.n; ++i) {
		const struct mha_tune_rec *rec = &ss->db.recs[i];
		if (strcmp(rec->spec, t->key) ||
		    strcmp(rec->target, t->sp.spec.target))
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
				++t->se.failed;
			cd->state = rec->ok ? 1 : 2;
			if (rec->ok)
				mha_cand_add_time(cd, rec->median,
				                  rec->gflops * rec->median * 1e9);
		}
	}
}

/* The summary of tuning t: one line on stderr, with the knobs of the
 * best variant that differ from the default's and the speedup's spread;
 * and the best variant's flags, all of them, on stdout. */
static void summary(const struct tuning *t)
{
	const struct mha_search *se = &t->se;
	const struct mha_cand *cands = t->sp.cands;
	char dt[32] = "-", bt[32] = "-", flags[256] = "", diff[256] = "";
	char speed[128] = "";
	struct mha_knob k[MHA_KNOBS_MAX], d[MHA_KNOBS_MAX];
	int nk, nd, tried = 0, best = mha_search_best(&t->sp);

	for (int c = 1; c < t->sp.ncands; ++c)
		tried += cands[c].state != 0;
	nk = mha_space_knobs(&t->sp, best > 0 ? &t->sp.pts[cands[best].point]
	                                      : NULL, k);
	mha_knobs_flags(k, nk, flags, sizeof flags);
	if (best > 0) {
		nd = mha_knobs_differing(k, nk, cands[best].plan, cands[0].plan, d);
		mha_knobs_flags(d, nd, diff, sizeof diff);
	}
	if (cands[0].state == 1)
		mha_fmt_time(dt, sizeof dt, cands[0].t);
	if (best >= 0)
		mha_fmt_time(bt, sizeof bt, cands[best].t);
	if (best > 0 && cands[0].state == 1) {
		double dlo, dhi, blo, bhi;
		mha_range(cands[0].ts, cands[0].nts, &dlo, &dhi);
		mha_range(cands[best].ts, cands[best].nts, &blo, &bhi);
		snprintf(speed, sizeof speed, ", ");
		mha_fmt_speedup(speed + 2, sizeof speed - 2, cands[0].t, dlo, dhi,
		                cands[0].nts, cands[best].t, blo, bhi,
		                cands[best].nts);
	}
	fprintf(stderr, "mhagen: tuned %s%s: %d of %d variants "
	        "known (%d measured now, %d from the database, %d failed, %d "
	        "refused; %d measurements again), search %s, %.0f s; "
	        "default %s, best %s%s%s%s\n",
	        t->key, t->ss->interrupted ? " (interrupted)" : "",
	        tried + (cands[0].state != 0), t->sp.ncands, se->measured,
	        t->from_db, se->failed, se->refused, se->again,
	        se->how ? se->how : "none",
	        mha_now() - t->t0, dt, bt, best > 0 ? " with " : "",
	        best > 0 ? (diff[0] ? diff : "the default's plan")
	                 : best == 0 ? " (the default)" : "", speed);
	if (best >= 0)
		printf("%s%s%s\n", t->key, nk ? " " : "", flags);
	fflush(stdout);
}

/* Whether the tuner refuses spec (the harness cannot run its kernels):
 * 0, or -1 with err.  Checked for every spec before the database is
 * opened, so a refused command leaves no file behind. */
static int refused(const struct mha_spec *spec, char *err)
{
	/* the harness (runtime/harness) passes q, k and v (f32, or f16/bf16
	 * keys and values), the lengths, kv_len and one bias through NAME_args
	 * and checks against a reference without score modifiers */
	if (spec->softcap > 0.0 || spec->alibi || spec->max_bias > 0.0 ||
	    spec->sinks)
		return mhagen_fail(err, "tune: --softcap, --alibi, --max-bias and "
		                   "--sinks kernels cannot be tuned yet; tune the "
		                   "spec without them and use its knobs");
	if ((spec->mask & (MHA_MASK_BOOL | MHA_MASK_KEYS)) || spec->mask_dims)
		return mhagen_fail(err, "tune: boolean and key masks and --mask-dims "
		                   "cannot be tuned yet (the harness passes one "
		                   "[seq_q][seq_kv] bias); tune the spec with --mask "
		                   "bias in their place and use its knobs");
	if (spec->varlen)
		return mhagen_fail(err, "tune: --varlen kernels cannot be tuned "
		                   "yet (the harness passes no per-sequence lengths); tune "
		                   "the spec without --varlen and use its knobs");
	if (strchr(spec->target, ','))
		return mhagen_fail(err, "tune: --target %s: one target at a time "
		                   "(tune each, then generate the list)",
		                   spec->target);
	return 0;
}

/* Tune one finished spec within deadline.  0, 1 when interrupted, -1 on
 * an error. */
static int tune_spec(struct session *ss, const struct mha_spec *spec,
                     double deadline, char *err)
{
	struct tuning t;
	struct mhagen_target tt[MHAGEN_TARGETS_MAX];
	const struct mhagen_target *tg;
	char cflags[256];
	const char *cc = ss->o->cc ? ss->o->cc : getenv("CC");
	int have_default, rc = -1;
	size_t nt;

	err[0] = '\0';
	if (refused(spec, err))
		return -1;
	memset(&t, 0, sizeof t);
	t.ss = ss;
	t.t0 = mha_now();
	if (!cc || !*cc)
		cc = "clang";
	tg = mhagen_targets(ss->template_dir, tt, MHAGEN_TARGETS_MAX, &nt, err)
	     ? NULL : mhagen_target_find(tt, nt, spec->target);
	if (!tg)
		return err[0] ? -1 : mhagen_fail(err, "--target: unknown target "
		                                 "'%s'", spec->target);
	/* a wrapper runs variants elsewhere: that machine decides */
	if (!ss->o->run_wrapper && !mha_cpu_has(tg->cpu))
		return mhagen_fail(err, "tune: this CPU cannot run target '%s' "
		                   "kernels (it needs %s)", spec->target, tg->cpu);
	if (spec->threads == 0 && ss->o->threads > 1)
		return mhagen_fail(err, "tune: --threads %d needs kernels generated "
		                   "with OpenMP: add --threads openmp to the spec",
		                   ss->o->threads);
	/* the default flags: -O2 and those the target's kernels need */
	snprintf(cflags, sizeof cflags, "%s", ss->o->cflags ? ss->o->cflags : "-O2");
	if (!ss->o->cflags && tg->cflags[0])
		mha_append(cflags, sizeof cflags, " %s", tg->cflags);
	t.r = runner_for(ss, cc, cflags, err);
	if (!t.r)
		return -1;
	mha_spec_tuning_key(spec, t.key, sizeof t.key);
	if (mha_space_make(&t.sp, spec, tg->width, ss->template_dir, err))
		goto done;
	mha_search_init(&t.se, &t.sp, deadline, measure, measured, &t);
	t.se.stop = &mha_tune_stop;
	from_db(&t, &have_default);
	if (t.other_env)
		fprintf(stderr, "mhagen: %s: %d records from another CPU, compiler, "
		        "flags, thread count or template hash are not used\n",
		        t.key, t.other_env);
	if (mha_search_run(&t.se, ss->o->search, have_default, err))
		goto done;
	if (t.se.interrupted)
		ss->interrupted = 1;
	if (t.shown)
		fputc('\n', stderr);
	summary(&t);
	rc = ss->interrupted ? 1 : 0;
done:
	mha_space_free(&t.sp);
	return rc;
}

/* ---- the command */

/* Open what the specs of one command share: the template hash, the CPU,
 * the database as read; 0, or -1 with err. */
static int open_session(struct session *ss, const struct mha_tune_opts *o,
                        const char *template_dir, char *err)
{
	memset(ss, 0, sizeof *ss);
	ss->o = o;
	ss->fd = -1;
	ss->template_dir = template_dir;
	ss->tty = isatty(2);
	snprintf(ss->cpu, sizeof ss->cpu, "%s",
	         o->tuning_cpu ? o->tuning_cpu : mha_cpu_model());
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

/* Close the runners (removing their directories) and the database. */
static void close_session(struct session *ss)
{
	for (int i = 0; i < ss->nrunners; ++i)
		mha_runner_close(&ss->runners[i]);
	if (ss->fd >= 0)
		close(ss->fd);
	mha_tunedb_free(&ss->db);
}

/* The options, the specs (one, or a sweep's, each checked first), each
 * tuned within its share of the budget, then the report. */
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
		mhagen_fail(err, "tune: give spec flags (--h N --dk N ...), --sweep, "
		            "or --report/--plot");
		goto fail;
	}
	if (o.sweep) {
		if (mha_sweep_parse(&sw, o.sweep, err))
			goto fail;
		for (int k = 0; k < sw.nkeys; ++k)
			npoints *= sw.nvals[k];
		/* every point must make a valid spec before anything runs */
		for (int p = 0; p < npoints; ++p)
			if (mha_sweep_spec(&o, &sw, p, &spec, err) || refused(&spec, err))
				goto fail;
	} else if (tuning) {
		struct mhagen_cli cli;
		if (mhagen_parse_args(&cli, o.spec_argc, (char **)o.spec_argv, err) ||
		    refused(&cli.spec, err))
			goto fail;
		if (cli.spec.embed) {
			mhagen_fail(err, "--embed: mhagen tune measures attention "
			            "kernels, not layers (tune the layer's attention "
			            "as --h H --dk E/h)");
			goto fail;
		}
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
