/* The command line: flags and --spec files into a finished spec and the
 * output options. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "gen.h"

#define MAXFLAGS 64 /* spec flags: each key once */

/* The value of spec flag key among the n given so far, or NULL. */
static const char *given(const char *const *key, const char *const *val,
                         int n, const char *k)
{
	for (int i = 0; i < n; ++i)
		if (strcmp(key[i], k) == 0)
			return val[i];
	return NULL;
}

/* Read a whole file into a NUL-terminated buffer; NULL with err filled. */
static char *read_file(const char *path, char *err)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, got;

	if (!f) {
		mhagen_fail(err, "--spec: cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	do {
		if (cap - len < 4096) {
			char *nb;
			cap = cap ? cap * 2 : 8192;
			if (cap > (1u << 20) || !(nb = realloc(buf, cap))) {
				mhagen_fail(err, "--spec: '%s' is too large", path);
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len - 1, f);
		len += got;
	} while (got > 0);
	if (ferror(f)) {
		mhagen_fail(err, "--spec: cannot read '%s': %s", path, strerror(errno));
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[len] = '\0';
	if (strlen(buf) != len) {
		mhagen_fail(err, "--spec: '%s' is not a text file", path);
		free(buf);
		return NULL;
	}
	return buf;
}

int mhagen_parse_args(struct mhagen_cli *cli, int argc, char **argv,
                      char *err)
{
	struct mha_spec flags;              /* validates flags, finds repeats */
	const char *flag_key[MAXFLAGS];     /* each spec flag given, */
	const char *flag_val[MAXFLAGS];     /* and its value */
	int nflags = 0;

	memset(cli, 0, sizeof *cli);
	cli->help = argc < 2; /* no arguments: the usage */
	mha_spec_init(&flags);
	mha_spec_init(&cli->spec);
	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i];
		const char **dst = NULL;
		const char *val, *prev;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			cli->help = 1;
			continue;
		}
		if (strcmp(a, "--version") == 0) {
			cli->version = 1;
			continue;
		}
		if (strcmp(a, "--tuning-strict") == 0) {
			cli->tuning_strict = 1;
			continue;
		}
		if (strncmp(a, "--", 2) != 0 && strcmp(a, "-o") != 0)
			return mhagen_fail(err, "unexpected argument '%s' (see --help)", a);
		if (strcmp(a, "-o") == 0)
			dst = &cli->out;
		else if (strcmp(a, "--header") == 0)
			dst = &cli->header;
		else if (strcmp(a, "--template-dir") == 0)
			dst = &cli->template_dir;
		else if (strcmp(a, "--spec") == 0)
			dst = &cli->spec_file;
		else if (strcmp(a, "--emit") == 0)
			dst = &cli->emit;
		else if (strcmp(a, "--tuning-db") == 0)
			dst = &cli->tuning_db;
		else if (strcmp(a, "--depfile") == 0)
			dst = &cli->depfile;
		else if (strcmp(a, "--tuning-cpu") == 0)
			dst = &cli->tuning_cpu;
		else if (!mha_spec_is_key(a + 2))
			return mhagen_fail(err, "unknown flag '%s' (see --help)", a);
		if (!dst && mha_spec_is_switch(a + 2)) {
			/* a switch: alone it means true; true or false may follow */
			val = "true";
			if (i + 1 < argc && (strcmp(argv[i + 1], "true") == 0 ||
			                     strcmp(argv[i + 1], "false") == 0))
				val = argv[++i];
			if (mha_spec_set(&flags, a + 2, val, err))
				return -1;
			flag_key[nflags] = a + 2;
			flag_val[nflags++] = val;
			continue;
		}
		if (i + 1 >= argc)
			return mhagen_fail(err, "%s needs a value", a);
		val = argv[++i];
		if (dst) {
			if (*dst)
				return mhagen_fail(err, "%s is given twice ('%s', then '%s')",
				            a, *dst, val);
			if (!*val)
				return mhagen_fail(err, "%s needs a non-empty value", a);
			*dst = val;
		} else if ((prev = given(flag_key, flag_val, nflags, a + 2))) {
			return mhagen_fail(err, "%s is given twice ('%s', then '%s')", a,
			                   prev, val);
		} else if (mha_spec_set(&flags, a + 2, val, err)) {
			return -1;
		} else {
			flag_key[nflags] = a + 2;
			flag_val[nflags++] = val;
		}
	}
	if (!cli->emit)
		cli->emit = "kernel";
	if (strcmp(cli->emit, "kernel") && strcmp(cli->emit, "exp") &&
	    strcmp(cli->emit, "registry") && strcmp(cli->emit, "name") &&
	    strcmp(cli->emit, "cflags") && strcmp(cli->emit, "targets"))
		return mhagen_fail(err, "--emit: unknown value '%s' "
		            "(kernel, exp, registry, name, cflags, targets)",
		            cli->emit);
	if (cli->depfile && !cli->out && !cli->help && !cli->version)
		return mhagen_fail(err, "--depfile needs -o FILE (the target its "
		                   "rule names)");
	if ((cli->tuning_cpu || cli->tuning_strict) && !cli->tuning_db)
		return mhagen_fail(err, "%s needs --tuning-db FILE",
		                   cli->tuning_cpu ? "--tuning-cpu" : "--tuning-strict");
	/* the target tables need no spec */
	if (cli->help || cli->version || strcmp(cli->emit, "targets") == 0)
		return 0;
	if (cli->spec_file) {
		char *text = read_file(cli->spec_file, err);
		int rc;
		if (!text)
			return -1;
		rc = mha_spec_parse_text(&cli->spec, text, cli->spec_file, err);
		free(text);
		if (rc)
			return -1;
	}
	/* Flags override the spec file's settings: set them again on top. */
	for (int i = 0; i < nflags; ++i) {
		mha_spec_unset(&cli->spec, flag_key[i]);
		if (mha_spec_set(&cli->spec, flag_key[i], flag_val[i], err))
			return -1;
	}
	if (mhagen_resolve_target(&cli->spec, cli->template_dir, err))
		return -1;
	return mha_spec_finish(&cli->spec, err);
}
