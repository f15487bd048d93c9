/* Kernel generation: a sandboxed Lua state renders the templates for a
 * finished spec. */
#ifndef MHAGEN_GEN_H
#define MHAGEN_GEN_H

#include <stddef.h>

#include "spec.h"

#define MHAGEN_VERSION "0.1.0"

/* One template file built into the binary. */
struct mhagen_file {
	const char *path; /* "templates/..." */
	const char *text;
	size_t len;
};

extern const struct mhagen_file mhagen_templates[];
extern const size_t mhagen_ntemplates;

/* Render what ("kernel", "exp", "header", or "plan": the knobs in effect as
 * one line) for spec s with templates from template_dir, or the embedded
 * ones when it is NULL.
 * On success *out is a malloc'd string of *len bytes and 0 is returned;
 * otherwise -1 with a one-line message in err (MHAGEN_ERR bytes). */
int mhagen_generate(const struct mha_spec *s, const char *what,
                    const char *template_dir, char **out, size_t *len,
                    char *err);

/* The hash that ties tuning records to templates: FNV-1a 64 over the path
 * and text of every template (from template_dir, or the embedded ones), as
 * "fnv1a64:" and 16 hex digits into out (size n).  0 or -1 with err. */
int mhagen_template_hash(const char *template_dir, char *out, size_t n,
                         char *err);

#endif
