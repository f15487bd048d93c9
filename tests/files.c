/* File helpers shared by the tests: whole files, trees, temporary
 * directories. */
#include "files.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *files_read(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1))) {
		if (fread(buf, 1, (size_t)len, f) == (size_t)len) {
			buf[len] = '\0';
			if (n)
				*n = (size_t)len;
		} else {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

char *files_slurp(const char *path, size_t *n)
{
	char *buf = files_read(path, n);

	cr_assert_not_null(buf, "cannot read %s", path);
	return buf;
}

void files_write(const char *path, const char *mode, const void *p,
                 size_t len)
{
	FILE *f = fopen(path, mode);

	cr_assert_not_null(f, "cannot write %s", path);
	cr_assert_eq(fwrite(p, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

void files_patch(const char *path, const char *from, const char *to)
{
	size_t n, nf = strlen(from), nt = strlen(to);
	char *text = files_slurp(path, &n), *at = strstr(text, from), *out;

	cr_assert_not_null(at, "%s has no '%s'", path, from);
	out = malloc(n - nf + nt + 1);
	cr_assert_not_null(out);
	memcpy(out, text, (size_t)(at - text));
	memcpy(out + (at - text), to, nt);
	memcpy(out + (at - text) + nt, at + nf, n - (size_t)(at - text) - nf + 1);
	files_write(path, "wb", out, n - nf + nt);
	free(out);
	free(text);
}

void files_tmpdir(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "/tmp/mhagen-%s-XXXXXX", name);
	cr_assert_not_null(mkdtemp(buf), "cannot make %s", buf);
}

void files_walk(const char *path, files_visit_fn *fn, void *ctx)
{
	struct stat st;
	struct dirent *e;
	DIR *d;

	cr_assert_eq(lstat(path, &st), 0, "cannot stat %s", path);
	if (!S_ISDIR(st.st_mode)) {
		fn(path, FILES_FILE, ctx);
		return;
	}
	fn(path, FILES_DIR_IN, ctx);
	d = opendir(path);
	cr_assert_not_null(d, "cannot list %s", path);
	while ((e = readdir(d))) {
		char sub[512];
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
		files_walk(sub, fn, ctx);
	}
	closedir(d);
	fn(path, FILES_DIR_OUT, ctx);
}

/* Copy one entry: ctx holds the source root and the destination root. */
static void copy_one(const char *path, enum files_visit v, void *ctx)
{
	const char *const *roots = ctx;
	char dst[512];

	snprintf(dst, sizeof dst, "%s%s", roots[1], path + strlen(roots[0]));
	if (v == FILES_DIR_IN && strcmp(path, roots[0]) != 0) {
		cr_assert_eq(mkdir(dst, 0700), 0, "cannot make %s", dst);
	} else if (v == FILES_FILE) {
		size_t len;
		char *text = files_slurp(path, &len);
		files_write(dst, "wb", text, len);
		free(text);
	}
}

void files_copy_tree(const char *src, const char *dst)
{
	const char *roots[2] = {src, dst};

	files_walk(src, copy_one, roots);
}

/* Remove files on the way in, directories on the way out. */
static void remove_one(const char *path, enum files_visit v, void *ctx)
{
	(void)ctx;
	if (v == FILES_FILE)
		cr_assert_eq(unlink(path), 0, "cannot remove %s", path);
	else if (v == FILES_DIR_OUT)
		cr_assert_eq(rmdir(path), 0, "cannot remove %s", path);
}

void files_remove_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0) {
		cr_assert_eq(errno, ENOENT, "cannot stat %s", path);
		return;
	}
	files_walk(path, remove_one, NULL);
}
