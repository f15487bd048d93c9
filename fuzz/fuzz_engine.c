/* libFuzzer harness for the template engine: each input is a template,
 * rendered by templates/engine.lua in the real sandboxed Lua state (through
 * mhagen_generate and --template-dir), with the spec and a few names in
 * reach.  Any result is fine but a crash, a leak, undefined behaviour, a
 * hang, or a failure whose message is not one line naming a template. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../generator/gen.h"
#include "../generator/spec.h"

static char dir[64];
static char tpl[96];
static struct mha_spec spec;

/* Write len bytes to path; exit when it cannot (the harness is broken). */
static void put(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* Remove the template directory at exit. */
static void cleanup(void)
{
	static const char *const files[] = {"engine.lua", "main.lua", "fuzz.c.in"};
	char path[128];

	for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i) {
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char main_lua[] =
		"local engine = mhagen.compile(mhagen.source(\"templates/engine.lua\"),\n"
		"                              \"templates/engine.lua\", _ENV)()\n"
		"local vars = {n = 3, word = \"row\", hexf = function(x)\n"
		"\treturn string.format(\"%a\", x) .. \"f\" end}\n"
		"return function(spec, what)\n"
		"\tvars.S = spec\n"
		"\treturn engine.render(\"templates/fuzz.c.in\", vars)\n"
		"end\n";
	char path[128], err[MHAGEN_ERR];
	const struct mhagen_file *engine = NULL;

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof dir, "/tmp/mhagen-fuzz-XXXXXX");
	if (!mkdtemp(dir)) {
		perror(dir);
		exit(1);
	}
	atexit(cleanup);
	for (size_t i = 0; i < mhagen_ntemplates; ++i)
		if (strcmp(mhagen_templates[i].path, "templates/engine.lua") == 0)
			engine = &mhagen_templates[i];
	if (!engine)
		exit(1);
	snprintf(path, sizeof path, "%s/engine.lua", dir);
	put(path, engine->text, engine->len);
	snprintf(path, sizeof path, "%s/main.lua", dir);
	put(path, main_lua, sizeof main_lua - 1);
	snprintf(tpl, sizeof tpl, "%s/fuzz.c.in", dir);
	mha_spec_init(&spec);
	if (mha_spec_set(&spec, "h", "8", err) ||
	    mha_spec_set(&spec, "dk", "64", err) ||
	    mha_spec_set(&spec, "target", "avx2", err) ||
	    mha_spec_finish(&spec, err)) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[MHAGEN_ERR];
	char *out;
	size_t len;

	put(tpl, (const char *)data, size);
	if (mhagen_generate(&spec, "kernel", dir, &out, &len, err) == 0) {
		free(out);
	} else if (!err[0] || strchr(err, '\n')) {
		fprintf(stderr, "bad message: '%s'\n", err);
		abort();
	}
	return 0;
}
