/* `mhagen tune`: measure the kernel variants of a spec (or of a grid of
 * specs) on this machine and keep the results in a tuning database. */
#ifndef MHAGEN_TUNE_H
#define MHAGEN_TUNE_H

/* Run the tune command; argv[0] is "tune".  Returns the exit status: 0,
 * 2 on an error (one "mhagen: " line on stderr), 130 when interrupted. */
int mhagen_tune_main(int argc, char **argv);

#endif
