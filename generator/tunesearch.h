/* The tuner's search: which candidates of a knob space to measure, in what
 * order, within a deadline.  The default first, then every candidate
 * (exhaustive) or coordinate descent from the default and from random
 * points; then the default and the fastest measured again.  Measuring is
 * the caller's, through callbacks: the search knows no compiler, runner,
 * database or display. */
#ifndef MHAGEN_TUNESEARCH_H
#define MHAGEN_TUNESEARCH_H

#include <signal.h>

#include "tunespace.h"

/* After the search, the default and the MHA_CONFIRM_TOP fastest variants
 * are measured again MHA_CONFIRM_ROUNDS times, alternating: the fastest of
 * many single measurements is biased low by noise. */
#define MHA_CONFIRM_TOP 3
#define MHA_CONFIRM_ROUNDS 2

/* The phases of a search, in the order they run: the default measured,
 * the search proper, the measurements again.  ORDER MHA_PHASE */
enum mha_phase { MHA_PHASE_DEFAULT, MHA_PHASE_MEASURE, MHA_PHASE_REMEASURE,
                 MHA_PHASE_N };

/* Their names in progress lines.  ORDER MHA_PHASE */
extern const char *const mha_phase_names[MHA_PHASE_N];

/* What the callbacks return. */
enum { MHA_SEARCH_DONE = 0, MHA_SEARCH_STOP = 1, MHA_SEARCH_ERROR = -1 };

/* What became of a candidate asked for (struct mha_measurement status). */
enum { MHA_MEASURE_OK, MHA_MEASURE_FAILED, MHA_MEASURE_REFUSED };

/* One measurement, as the measure callback reports it. */
struct mha_measurement {
	int status;        /* MHA_MEASURE_*: refused, the generator would not
	                      make it (nothing ran) */
	double median;     /* seconds per call, when ok */
	double min, max;   /* the fastest and slowest timed run, when ok */
	double flops;      /* useful flops per call, when ok */
	double cost;       /* seconds the measurement took, unless refused */
};

/* Measure candidate cand of the space: the default variant (the user's
 * knobs only) when is_default; again when it is measured once more.  Fill
 * *m and return MHA_SEARCH_DONE, or MHA_SEARCH_STOP when interrupted
 * (nothing measured), or MHA_SEARCH_ERROR with err. */
typedef int (*mha_measure_fn)(void *ctx, int cand, int is_default,
                              int again, struct mha_measurement *m,
                              char *err);

/* Called after each measurement (or refusal) m of cand, once the search
 * took it into the candidate and the counts: the caller keeps and shows
 * it.  MHA_SEARCH_DONE, or MHA_SEARCH_ERROR with err. */
typedef int (*mha_measured_fn)(void *ctx, int cand, int is_default,
                               int again, const struct mha_measurement *m,
                               char *err);

/* A search of one space; mha_search_init fills it. */
struct mha_search {
	struct mha_space *sp;
	mha_measure_fn measure;
	mha_measured_fn on_measured;    /* may be NULL */
	void *ctx;                      /* the callbacks' */
	double (*now)(void);            /* the clock: mha_now (tests: a fake) */
	const volatile sig_atomic_t *stop; /* when set: stop, interrupted */
	double deadline;                /* the end of the budget, on now */
	/* what the search did */
	const char *how;                /* "exhaustive", "descent"; NULL
	                                   until it chose (after the default) */
	int exhaustive;
	int interrupted;                /* stopped by *stop or the callback */
	int measured, failed, refused;  /* counts for the summary */
	int again;                      /* measurements of known variants */
	double cost, costn;             /* seconds per measured variant */
	double first;                   /* the first one's (it computes the
	                                   reference outputs too) */
	int untried;                    /* variants not yet known */
	int done;                       /* visits, all phases */
	/* progress: the phase running, and its visits done of a total that
	 * is fixed when the phase starts (measure: every untried variant,
	 * which descent may not reach within the budget; re-measure: rounds
	 * times the variants measured again); done never passes total */
	enum mha_phase phase;
	int phase_done, phase_total;
};

/* Start a search of sp ending at deadline (on mha_now's clock), calling
 * measure and then measured (unless NULL) with ctx.  Set s->stop to stop
 * on a flag (SIGINT), and s->now for another clock, before running it. */
void mha_search_init(struct mha_search *s, struct mha_space *sp,
                     double deadline, mha_measure_fn measure,
                     mha_measured_fn measured, void *ctx);

/* Search: the default first unless have_default (it is known), even past
 * the deadline; then how ("auto": exhaustive when every candidate fits
 * the budget, else "descent"; "exhaustive"; "descent") until the deadline
 * less the time the measurements again will take; then those.  0 when
 * done or stopped (s->interrupted says if by interruption), -1 on an
 * error of a callback (err). */
int mha_search_run(struct mha_search *s, const char *how, int have_default,
                   char *err);

/* Seconds one more measurement will take. */
double mha_search_estimate(const struct mha_search *s);

/* When the search proper must stop to leave time for the measurements
 * again. */
double mha_search_end(const struct mha_search *s);

/* The fastest candidate measured ok (the first of equals), -1 if none. */
int mha_search_best(const struct mha_space *sp);

/* Add a measurement (median seconds, flops per call) to candidate c; its
 * time becomes the median of all it has. */
void mha_cand_add_time(struct mha_cand *c, double median, double flops);

#endif
