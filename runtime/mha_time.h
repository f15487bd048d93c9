/* Timing helpers for benchmarks and tuning: monotonic clock, medians. */
#ifndef MHA_TIME_H
#define MHA_TIME_H

#include <stddef.h>

/* Seconds from an arbitrary fixed point, monotonic. */
double mha_now(void);

/* The calling thread's CPU seconds (time it waits descheduled is not
 * counted), from an arbitrary fixed point. */
double mha_cpu_now(void);

/* Median of n samples (sorts them in place); 0 when n is 0. */
double mha_median(double *t, size_t n);

/* Pin the calling thread to one CPU; 0 on success. */
int mha_pin_cpu(int cpu);

#endif
