/* File helpers shared by the tests. */
#ifndef MHA_TEST_FILES_H
#define MHA_TEST_FILES_H

#include <stddef.h>

/* The whole file at path, NUL-terminated, its length in *n (when n is not
 * NULL); NULL when it cannot be read.  Free with free(). */
char *files_read(const char *path, size_t *n);

#endif
