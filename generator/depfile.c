/* --depfile: the files a generation read, as a Make rule for its outputs. */
#include "depfile.h"

#include <stdlib.h>
#include <string.h>

#include "fail.h"

void mhagen_deps_add(struct mhagen_deps *d, const char *path)
{
	char *copy;

	for (size_t i = 0; i < d->n; ++i)
		if (strcmp(d->path[i], path) == 0)
			return;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		char **np = realloc(d->path, cap * sizeof *np);
		if (!np) {
			d->oom = 1;
			return;
		}
		d->path = np;
		d->cap = cap;
	}
	copy = strdup(path);
	if (!copy) {
		d->oom = 1;
		return;
	}
	d->path[d->n++] = copy;
}

/* Append path to buf (at *at, room for it checked by the caller) with
 * Make's escapes: "\ " for a blank, "\#", "$$". */
static void put_path(char *buf, size_t *at, const char *path)
{
	for (const char *p = path; *p; ++p) {
		if (*p == ' ' || *p == '\t' || *p == '#')
			buf[(*at)++] = '\\';
		else if (*p == '$')
			buf[(*at)++] = '$';
		buf[(*at)++] = *p;
	}
}

char *mhagen_deps_rule(const struct mhagen_deps *d, const char *const *t,
                       size_t nt, size_t *len, char *err)
{
	size_t cap = 16, at = 0;
	char *buf;

	if (d->oom) {
		mhagen_fail(err, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < nt + d->n; ++i) {
		const char *p = i < nt ? t[i] : d->path[i - nt];
		if (strchr(p, '\n')) {
			mhagen_fail(err, "--depfile: cannot name '%s' in a Make rule "
			            "(it holds a newline)", p);
			return NULL;
		}
		/* each byte escaped at worst, twice for prerequisites */
		cap += 2 * (4 * strlen(p) + 8);
	}
	buf = malloc(cap);
	if (!buf) {
		mhagen_fail(err, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < nt; ++i) {
		if (i)
			buf[at++] = ' ';
		put_path(buf, &at, t[i]);
	}
	buf[at++] = ':';
	for (size_t i = 0; i < d->n; ++i) {
		memcpy(buf + at, " \\\n ", 4);
		at += 4;
		put_path(buf, &at, d->path[i]);
	}
	buf[at++] = '\n';
	for (size_t i = 0; i < d->n; ++i) {
		buf[at++] = '\n';
		put_path(buf, &at, d->path[i]);
		buf[at++] = ':';
		buf[at++] = '\n';
	}
	buf[at] = '\0';
	*len = at;
	return buf;
}

void mhagen_deps_free(struct mhagen_deps *d)
{
	for (size_t i = 0; i < d->n; ++i)
		free(d->path[i]);
	free(d->path);
	memset(d, 0, sizeof *d);
}
