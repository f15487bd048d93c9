/* Kernel generation: a sandboxed Lua state renders the templates for a
 * finished spec. */
#ifndef MHAGEN_GEN_H
#define MHAGEN_GEN_H

#include <stddef.h>

#include "knobs.h"
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

/* When set, called with the path of each template file read from a
 * --template-dir (the files --depfile lists); NULL by default. */
extern void (*mhagen_on_read)(const char *path);

/* Render what ("kernel", "exp", "header", or "registry": one X-macro line
 * for tests/registry.h) for spec s with templates from template_dir, or
 * the embedded ones when it is NULL.
 * On success *out is a malloc'd string of *len bytes and 0 is returned;
 * otherwise -1 with a one-line message in err (MHAGEN_ERR bytes). */
int mhagen_generate(const struct mha_spec *s, const char *what,
                    const char *template_dir, char **out, size_t *len,
                    char *err);

/* The knobs in effect for the finished spec s, as the templates plan them
 * (main.lua's plan), into *p.  0, or -1 with a one-line message in err
 * when the templates refuse the spec. */
int mhagen_plan(const struct mha_spec *s, const char *template_dir,
                struct mha_plan *p, char *err);

/* What the C side knows of a target: the facts of its table
 * (templates/targets/NAME.lua) that decide where its kernels build and
 * run.  Read at run time, so a table added under --template-dir is a target
 * with no C change. */
#define MHAGEN_TARGETS_MAX 32
struct mhagen_target {
	char name[16];
	long width;       /* floats per vector */
	long rank;        /* native picks the supported target of highest rank */
	char arch[16];    /* the architecture (uname -m) it builds for, "" any */
	char guard[64];   /* the C condition of that architecture, "" any */
	char cpu[128];    /* CPU features it needs, blank separated */
	char cflags[128]; /* compiler flags its kernels need */
	char defaults[160]; /* its knob defaults, for --help */
};

/* Every target table, by name, from template_dir or the embedded
 * templates; *n of them (at most max).  0 or -1 with err. */
int mhagen_targets(const char *template_dir, struct mhagen_target *t,
                   size_t max, size_t *n, char *err);

/* The target called name among t[0..n-1], or NULL. */
const struct mhagen_target *mhagen_target_find(const struct mhagen_target *t,
                                               size_t n, const char *name);

/* The target native picks among t[0..n-1]: the highest-ranked one whose
 * CPU features this machine has (the first of equals), or NULL. */
const struct mhagen_target *mhagen_target_native(const struct mhagen_target *t,
                                                 size_t n);

/* Resolve s->target when it is unset or "native": the highest-ranked
 * target this CPU runs.  Other names are left to generation, which refuses
 * an unknown one.  0 or -1 with err. */
int mhagen_resolve_target(struct mha_spec *s, const char *template_dir,
                          char *err);

/* The hash that ties tuning records to templates: FNV-1a 64 over the path
 * and text of every template (from template_dir, or the embedded ones), as
 * "fnv1a64:" and 16 hex digits into out (size n).  0 or -1 with err. */
int mhagen_template_hash(const char *template_dir, char *out, size_t n,
                         char *err);

#endif
