/* libFuzzer harness for the spec parser: flags and spec files.
 *
 * An input is argument lines (separated by '\n'), then optionally a NUL
 * and spec-file text.  The lines go through mhagen_parse_args, with the
 * value of every --spec replaced by a file holding the text; the text also
 * goes through mha_spec_parse_text directly.  Whatever parses must finish,
 * name itself, and round-trip: the flags mha_spec_command writes parse back
 * to the same canonical name.  Small finished specs are also rendered with
 * the built-in templates.  Every failure must be one non-empty line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../generator/gen.h"
#include "../generator/cli.h"
#include "../generator/spec.h"

#define MAXARG 64

static char spec_path[64];

/* Stop the fuzzer when a message is not one non-empty line. */
static void one_line(const char *err)
{
	if (!err[0] || strchr(err, '\n')) {
		fprintf(stderr, "bad message: '%s'\n", err);
		abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(spec_path, sizeof spec_path, "/tmp/mhagen-fuzz-%ld.spec",
	         (long)getpid());
	return 0;
}

/* The flags of finished spec s parse back to the same name. */
static void round_trip(const struct mha_spec *s)
{
	char cmd[1024], err[MHAGEN_ERR];
	char *argv[MAXARG];
	struct mhagen_cli back;
	int argc = 0;

	mha_spec_command(s, cmd, sizeof cmd);
	for (char *t = strtok(cmd, " "); t && argc < MAXARG; t = strtok(NULL, " "))
		argv[argc++] = t;
	if (mhagen_parse_args(&back, argc, argv, err)) {
		fprintf(stderr, "round trip of '%s' rejected: %s\n", s->name, err);
		abort();
	}
	if (strcmp(back.spec.name, s->name) != 0) {
		fprintf(stderr, "round trip: '%s' came back as '%s'\n", s->name,
		        back.spec.name);
		abort();
	}
}

/* Render small finished specs; failures must be one line. */
static void render(const struct mha_spec *s)
{
	char err[MHAGEN_ERR];
	char *out;
	size_t len;

	if (s->h * s->dk > 256 || s->dv > 64)
		return;
	if (mhagen_generate(s, "kernel", NULL, &out, &len, err) == 0)
		free(out);
	else
		one_line(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *text = NULL;
	char *argv[MAXARG + 1] = {"mhagen"};
	char err[MHAGEN_ERR];
	struct mhagen_cli cli;
	struct mha_spec s;
	int argc = 1;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (strlen(buf) < size)
		text = buf + strlen(buf) + 1;
	/* the spec text alone */
	if (text) {
		FILE *f = fopen(spec_path, "wb");
		if (f) {
			fputs(text, f);
			fclose(f);
		}
		mha_spec_init(&s);
		if (mha_spec_parse_text(&s, text, "fuzz.spec", err) ||
		    mha_spec_finish(&s, err))
			one_line(err);
		else
			round_trip(&s);
	}
	/* the argument lines */
	for (char *p = buf; argc < MAXARG;) {
		char *nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		argv[argc++] = p;
		if (argc > 2 && strcmp(argv[argc - 2], "--spec") == 0)
			argv[argc - 1] = spec_path;
		if (!nl)
			break;
		p = nl + 1;
	}
	if (mhagen_parse_args(&cli, argc, argv, err)) {
		one_line(err);
	} else if (!cli.help && !cli.version) {
		round_trip(&cli.spec);
		render(&cli.spec);
	}
	if (text)
		unlink(spec_path);
	free(buf);
	return 0;
}
