/* The tuner's search over a knob space, measuring through callbacks. */
#include "tunesearch.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../runtime/mha_time.h"

const char *const mha_phase_names[MHA_PHASE_N] = {"default", "measure",
                                                  "re-measure"};

/* Start phase ph of total visits. */
static void phase(struct mha_search *s, enum mha_phase ph, int total)
{
	s->phase = ph;
	s->phase_done = 0;
	s->phase_total = total;
}

/* Every count zero, the clock mha_now, no stop flag. */
void mha_search_init(struct mha_search *s, struct mha_space *sp,
                     double deadline, mha_measure_fn measure,
                     mha_measured_fn measured, void *ctx)
{
	memset(s, 0, sizeof *s);
	s->sp = sp;
	s->deadline = deadline;
	s->measure = measure;
	s->on_measured = measured;
	s->ctx = ctx;
	s->now = mha_now;
}

/* The average of the measurements after the first (which also computed
 * the reference outputs), else the first's, else a second. */
double mha_search_estimate(const struct mha_search *s)
{
	if (s->costn > 1)
		return (s->cost - s->first) / (s->costn - 1);
	return s->costn > 0 ? s->cost : 1.0;
}

/* The end of the budget less the time the measurements again will take
 * (known once a variant besides the first was measured). */
double mha_search_end(const struct mha_search *s)
{
	if (s->costn < 2)
		return s->deadline;
	return s->deadline - MHA_CONFIRM_ROUNDS * (MHA_CONFIRM_TOP + 1) *
	       mha_search_estimate(s);
}

int mha_search_best(const struct mha_space *sp)
{
	int best = -1;

	for (int c = 0; c < sp->ncands; ++c)
		if (sp->cands[c].state == 1 &&
		    (best < 0 || sp->cands[c].t < sp->cands[best].t))
			best = c;
	return best;
}

void mha_cand_add_time(struct mha_cand *c, double median, double flops)
{
	double v[MHA_CAND_TIMES];

	if (c->nts < MHA_CAND_TIMES)
		c->ts[c->nts++] = median;
	memcpy(v, c->ts, (size_t)c->nts * sizeof *v);
	c->t = mha_median(v, (size_t)c->nts);
	c->flops = flops;
	c->gflops = flops / c->t * 1e-9;
}

/* Measure candidate ci (the default variant when is_default) unless it is
 * known or this is not a measurement again; honours the deadline unless
 * forced.  MHA_SEARCH_DONE, MHA_SEARCH_STOP (out of time, or interrupted:
 * s->interrupted says which) or MHA_SEARCH_ERROR. */
static int visit(struct mha_search *s, int ci, int is_default, int force,
                 int again, char *err)
{
	struct mha_cand *c = &s->sp->cands[ci];
	struct mha_measurement m;
	int rc;

	if (c->state && !is_default && !again)
		return MHA_SEARCH_DONE;
	if (s->stop && *s->stop) {
		s->interrupted = 1;
		return MHA_SEARCH_STOP;
	}
	if (!force && s->now() + mha_search_estimate(s) > mha_search_end(s))
		return MHA_SEARCH_STOP;
	memset(&m, 0, sizeof m);
	rc = s->measure(s->ctx, ci, is_default, again, &m, err);
	if (rc == MHA_SEARCH_STOP)
		s->interrupted = 1;
	if (rc != MHA_SEARCH_DONE)
		return rc == MHA_SEARCH_STOP ? rc : MHA_SEARCH_ERROR;
	++s->phase_done;
	++s->done;
	if (m.status == MHA_MEASURE_REFUSED) {
		c->state = 3;
		++s->refused;
	} else {
		if (s->costn == 0)
			s->first = m.cost;
		s->cost += m.cost;
		s->costn += 1;
		s->untried -= !is_default && !again;
		if (!again)
			++s->measured;
		else
			++s->again;
		if (m.status == MHA_MEASURE_OK && c->state != 2) {
			c->state = 1;
			mha_cand_add_time(c, m.median, m.flops);
		} else {
			if (c->state != 2)
				++s->failed;
			c->state = 2;
		}
	}
	if (s->on_measured &&
	    s->on_measured(s->ctx, ci, is_default, again, &m, err))
		return MHA_SEARCH_ERROR;
	return MHA_SEARCH_DONE;
}

/* The candidate at point p with dim i of its algo set to value v; -1 if
 * no such point (refused by the generator). */
static int neighbour(const struct mha_space *sp, const struct mha_point *p,
                     int algo, int i, int v)
{
	for (int q = 0; q < sp->npts; ++q) {
		const struct mha_point *o = &sp->pts[q];
		int same = o->algo == algo;
		for (int d = 0; same && d < sp->ndims[algo]; ++d)
			same = o->idx[d] == (d == i ? v : algo == p->algo ? p->idx[d]
			                                                   : o->idx[d]);
		if (same)
			return o->cand;
	}
	return -1;
}

/* Candidate c's time when measured ok, else infinite. */
static double cand_time(const struct mha_space *sp, int c)
{
	return c >= 0 && sp->cands[c].state == 1 ? sp->cands[c].t : INFINITY;
}

/* Coordinate descent from candidate start: each pass tries every value of
 * every knob (and the other algorithm) with the rest fixed, moving to the
 * best after each knob, until a pass improves nothing. */
static int descend(struct mha_search *s, int start, char *err)
{
	const struct mha_space *sp = s->sp;
	int cur = start, improved = 1;

	while (improved) {
		improved = 0;
		for (int algo = 0; algo < 2; ++algo) {
			const struct mha_point *p = &sp->pts[sp->cands[cur].point];
			int nd = algo == p->algo ? sp->ndims[algo] : 1;
			for (int i = 0; i < nd; ++i) {
				int best = cur;
				const struct mha_dim *d = &sp->dims[algo][i];
				if (d->fixed && algo == p->algo)
					continue;
				for (int v = 0; v < d->n; ++v) {
					/* across algorithms: the other's point nearest
					 * its first values, block-kv kept when it can be */
					int c = algo == p->algo ? neighbour(sp, p, algo, i, v)
					                        : -1;
					int rc;
					if (algo != p->algo) {
						for (int q = 0; q < sp->npts && c < 0; ++q)
							if (sp->pts[q].algo == algo)
								c = sp->pts[q].cand;
						v = d->n;
					}
					if (c < 0)
						continue;
					rc = visit(s, c, 0, 0, 0, err);
					if (rc)
						return rc;
					if (cand_time(sp, c) < cand_time(sp, best))
						best = c;
				}
				if (best != cur) {
					cur = best;
					improved = 1;
					p = &sp->pts[sp->cands[cur].point];
					if (p->algo != algo)
						break;
				}
			}
		}
	}
	return MHA_SEARCH_DONE;
}

/* Every candidate in order, until one does not end in MHA_SEARCH_DONE. */
static int exhaustive(struct mha_search *s, char *err)
{
	int e = MHA_SEARCH_DONE;

	for (int c = 1; c < s->sp->ncands && e == MHA_SEARCH_DONE; ++c)
		e = visit(s, c, 0, 0, 0, err);
	return e;
}

/* Descent from the default, then from random untried candidates, until
 * every candidate is known or the descent stops. */
static int restarts(struct mha_search *s, char *err)
{
	const struct mha_space *sp = s->sp;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int start = 0, e;

	while ((e = descend(s, start, err)) == MHA_SEARCH_DONE) {
		int left = 0, pick;
		for (int c = 1; c < sp->ncands; ++c)
			left += !sp->cands[c].state;
		if (left == 0)
			break;
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		pick = (int)((seed >> 33) % (uint64_t)left);
		for (start = 1; start < sp->ncands; ++start)
			if (!sp->cands[start].state && pick-- == 0)
				break;
		if ((e = visit(s, start, 0, 0, 0, err)) != MHA_SEARCH_DONE)
			break;
	}
	return e;
}

/* The default and the MHA_CONFIRM_TOP fastest other candidates measured
 * again, alternating, past the deadline. */
static int confirm(struct mha_search *s, char *err)
{
	const struct mha_space *sp = s->sp;
	int top[MHA_CONFIRM_TOP], ntop = 0, e = MHA_SEARCH_DONE;

	for (int c = 1; c < sp->ncands; ++c) {
		int at;
		if (sp->cands[c].state != 1)
			continue;
		for (at = ntop; at > 0 && sp->cands[top[at - 1]].t > sp->cands[c].t;
		     --at)
			if (at < MHA_CONFIRM_TOP)
				top[at] = top[at - 1];
		if (at < MHA_CONFIRM_TOP) {
			top[at] = c;
			if (ntop < MHA_CONFIRM_TOP)
				++ntop;
		}
	}
	if (ntop)
		phase(s, MHA_PHASE_REMEASURE, MHA_CONFIRM_ROUNDS * (ntop + 1));
	for (int round = 0; ntop && round < MHA_CONFIRM_ROUNDS && !e; ++round) {
		e = visit(s, 0, 1, 1, 1, err);
		for (int i = 0; i < ntop && !e; ++i)
			e = visit(s, top[i], 0, 1, 1, err);
	}
	return e;
}

/* The default, the search proper, the measurements again. */
int mha_search_run(struct mha_search *s, const char *how, int have_default,
                   char *err)
{
	const struct mha_space *sp = s->sp;
	int untried = 0, e;
	double est;

	for (int c = 1; c < sp->ncands; ++c)
		untried += !sp->cands[c].state;

	/* the default first, always, even past the budget: reports compare
	 * against it */
	if (!have_default) {
		phase(s, MHA_PHASE_DEFAULT, 1);
		if (visit(s, 0, 1, 1, 0, err) == MHA_SEARCH_ERROR)
			return -1;
		if (s->interrupted)
			return 0;
	}
	est = mha_search_estimate(s);
	s->exhaustive = strcmp(how, "exhaustive") == 0 ||
	                (strcmp(how, "auto") == 0 &&
	                 s->now() + (untried + MHA_CONFIRM_ROUNDS *
	                             (MHA_CONFIRM_TOP + 1)) * est <= s->deadline);
	s->how = s->exhaustive ? "exhaustive" : "descent";
	s->untried = untried;
	phase(s, MHA_PHASE_MEASURE, untried);
	e = s->exhaustive ? exhaustive(s, err) : restarts(s, err);
	if (e == MHA_SEARCH_ERROR)
		return -1;
	if (!s->interrupted && s->measured > 0 && sp->cands[0].state == 1 &&
	    confirm(s, err) == MHA_SEARCH_ERROR)
		return -1;
	return 0;
}
