/* File helpers shared by the tests: whole files, trees, temporary
 * directories.  All but files_read fail the running Criterion test when
 * they cannot do their job. */
#ifndef MHA_TEST_FILES_H
#define MHA_TEST_FILES_H

#include <stddef.h>

/* The whole file at path, NUL-terminated, its length in *n (when n is not
 * NULL); NULL when it cannot be read.  Free with free(). */
char *files_read(const char *path, size_t *n);

/* files_read that must succeed. */
char *files_slurp(const char *path, size_t *n);

/* Write len bytes to path (mode "wb", or "ab" to append). */
void files_write(const char *path, const char *mode, const void *p,
                 size_t len);

/* Replace the first `from` in the file at path by `to`; the test fails
 * when the file has no `from`. */
void files_patch(const char *path, const char *from, const char *to);

/* A fresh directory /tmp/mhagen-NAME-XXXXXX into buf (short, so that
 * Lua's chunk names of templates in it stay whole). */
void files_tmpdir(char *buf, size_t n, const char *name);

/* Visit the tree at path: each directory before (FILES_DIR_IN) and after
 * (FILES_DIR_OUT) its entries, each other entry once (FILES_FILE). */
enum files_visit { FILES_DIR_IN, FILES_FILE, FILES_DIR_OUT };
typedef void files_visit_fn(const char *path, enum files_visit v, void *ctx);
void files_walk(const char *path, files_visit_fn *fn, void *ctx);

/* Copy the tree at src into the existing directory dst. */
void files_copy_tree(const char *src, const char *dst);

/* Remove the tree at path (nothing when it does not exist). */
void files_remove_tree(const char *path);

#endif
