/* --depfile: the files a generation read, as a Make rule for its outputs. */
#ifndef MHAGEN_DEPFILE_H
#define MHAGEN_DEPFILE_H

#include <stddef.h>

/* The files read so far, each once, in the order first read. */
struct mhagen_deps {
	char **path;
	size_t n, cap;
	int oom; /* a path could not be kept */
};

/* Note that path was read (a copy is kept; repeats are ignored). */
void mhagen_deps_add(struct mhagen_deps *d, const char *path);

/* The Make rule "T1 T2: P1 P2 ..." for the nt targets t, then an empty
 * rule per prerequisite (as gcc -MP writes, so that a deleted file is not
 * an error), as a malloc'd string of *len bytes.  Blanks, '#' and '$' are
 * escaped; a path holding a newline is refused.  NULL with err on
 * failure. */
char *mhagen_deps_rule(const struct mhagen_deps *d, const char *const *t,
                       size_t nt, size_t *len, char *err);

void mhagen_deps_free(struct mhagen_deps *d);

#endif
