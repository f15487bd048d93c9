/* The tuner's progress lines and bar, from the search's counts. */
#include "tuneprogress.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Append to buf of size n (as spec.c's mha_append, which would link the
 * spec parser into the search's tests). */
static void add(char *buf, size_t n, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len + 1 >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, n - len, fmt, ap);
	va_end(ap);
}

void mha_fmt_time(char *buf, size_t n, double s)
{
	if (s >= 1.0)
		snprintf(buf, n, "%.3g s", s);
	else
		snprintf(buf, n, "%.4g ms", s * 1e3);
}

/* "measure 12/392 (descent)", "re-measure 3/8", "default 1/1". */
static void head(char *buf, size_t n, const struct mha_search *s)
{
	snprintf(buf, n, "%s %d/%d", mha_phase_names[s->phase], s->phase_done,
	         s->phase_total);
	if (s->phase == MHA_PHASE_MEASURE && s->how)
		add(buf, n, " (%s)", s->how);
}

void mha_progress_line(char *buf, size_t n, const struct mha_search *s,
                       const struct mha_cand *c, const char *what,
                       const struct mha_measurement *m, const char *why)
{
	char h[64], md[32], lo[32], hi[32];

	head(h, sizeof h, s);
	snprintf(buf, n, "tune %s: %s: ", h, what);
	if (m->status == MHA_MEASURE_REFUSED) {
		add(buf, n, "refused by the generator: %s", why);
		return;
	}
	if (m->status != MHA_MEASURE_OK) {
		add(buf, n, "failed: %s", why);
		return;
	}
	mha_fmt_time(md, sizeof md, m->median);
	mha_fmt_time(lo, sizeof lo, m->min);
	mha_fmt_time(hi, sizeof hi, m->max);
	/* "0.41 ms" to "0.41" when both ends are in the same unit */
	if (strcmp(lo + strcspn(lo, " "), hi + strcspn(hi, " ")) == 0)
		lo[strcspn(lo, " ")] = '\0';
	add(buf, n, "%s (%s to %s), %.1f GFLOP/s", md, lo, hi,
	           m->flops / m->median * 1e-9);
	if (s->phase == MHA_PHASE_REMEASURE && c->state == 1 && c->nts > 1) {
		mha_fmt_time(md, sizeof md, c->t);
		add(buf, n, "; median of its %d: %s, %.1f GFLOP/s", c->nts,
		           md, c->flops / c->t * 1e-9);
	}
}

void mha_progress_bar(char *buf, size_t n, const struct mha_search *s,
                      const char *best, double now)
{
	char h[64], bar[31];
	int fill = s->phase_total ? 30 * s->phase_done / s->phase_total : 30;
	double left = (s->phase_total - s->phase_done) * mha_search_estimate(s);
	int eta;

	/* the search proper stops at its end of the budget */
	if (s->phase == MHA_PHASE_MEASURE && now + left > mha_search_end(s))
		left = mha_search_end(s) - now;
	eta = left > 0 ? (int)(left + 0.5) : 0;
	for (int i = 0; i < 30; ++i)
		bar[i] = i < fill ? '#' : '.';
	bar[30] = '\0';
	head(h, sizeof h, s);
	snprintf(buf, n, "%s [%s]  best %s  ETA %d:%02d", h, bar,
	         best ? best : "-", eta / 60, eta % 60);
}

void mha_fmt_speedup(char *buf, size_t n, double dt, double dlo, double dhi,
                     int nd, double bt, double blo, double bhi, int nb)
{
	snprintf(buf, n, "%.2fx", dt / bt);
	if (nd < 2 && nb < 2)
		add(buf, n, " (one measurement each: no spread)");
	else
		add(buf, n, " (%.2fx to %.2fx over %d and %d measurements)",
		    dlo / bhi, dhi / blo, nd, nb);
}

void mha_range(const double *v, int n, double *lo, double *hi)
{
	*lo = *hi = n > 0 ? v[0] : 0;
	for (int i = 1; i < n; ++i) {
		if (v[i] < *lo)
			*lo = v[i];
		if (v[i] > *hi)
			*hi = v[i];
	}
}
