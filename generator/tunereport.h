/* Tuning reports: a CSV table and a gnuplot picture of default against
 * tuned GFLOP/s per spec, from the records of a tuning database. */
#ifndef MHAGEN_TUNEREPORT_H
#define MHAGEN_TUNEREPORT_H

#include "tunedb.h"

/* Write csv and/or svg (either may be NULL) from the records of db made on
 * cpu with templates; one row per spec, target, compiler, flags and thread
 * count that has an "ok" default record.  Returns the number of rows, or
 * -1 with err filled. */
int mha_tune_report(const struct mha_tunedb *db, const char *cpu,
                    const char *templates, const char *csv, const char *svg,
                    char *err);

#endif
