/* The tuner's progress display: one line per visit when stderr is not a
 * terminal, else a bar redrawn in place; each names its phase and counts
 * against the phase's fixed total. */
#ifndef MHAGEN_TUNEPROGRESS_H
#define MHAGEN_TUNEPROGRESS_H

#include <stddef.h>

#include "tunesearch.h"

/* Seconds s as "1.23 s" or "0.4567 ms" into buf of size n. */
void mha_fmt_time(char *buf, size_t n, double s);

/* The line for a visit of candidate c (what: "default", or its knobs as
 * flags) that ended in m, with why when refused and reason when failed:
 * "tune measure 12/392 (descent): --nv 2: 0.4123 ms (0.41 to 0.45 ms),
 * 63.2 GFLOP/s".  Every figure is of the measurement m itself; a
 * measurement again adds the variant's median over its measurements and
 * the GFLOP/s at that median. */
void mha_progress_line(char *buf, size_t n, const struct mha_search *s,
                       const struct mha_cand *c, const char *what,
                       const struct mha_measurement *m, const char *why);

/* The bar after a visit, for a terminal: phase, count of the phase's
 * total, best time so far (NULL: none yet), the time left of the phase as
 * estimated at now. */
void mha_progress_bar(char *buf, size_t n, const struct mha_search *s,
                      const char *best, double now);

/* The speedup of the default (median dt, its measurements' medians from
 * dlo to dhi, nd of them) over the best (bt, blo, bhi, nb) with its spread
 * beside it: "1.07x (1.02x to 1.11x over 3 and 3 measurements)", the
 * least and greatest ratio of one measurement of each. */
void mha_fmt_speedup(char *buf, size_t n, double dt, double dlo, double dhi,
                     int nd, double bt, double blo, double bhi, int nb);

/* The least and greatest of the n values v into *lo and *hi. */
void mha_range(const double *v, int n, double *lo, double *hi);

#endif
