/* generated/ is what `make generate` writes today: every kernel in the
 * manifest is byte-identical to a fresh generation, the registry lists each,
 * and no stray kernel file lies around. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../generator/gen.h"
#include "../generator/cli.h"
#include "../generator/spec.h"
#include "files.h"


Test(generated, up_to_date)
{
	size_t mlen, rlen, count = 0, files = 0;
	char *manifest = files_read("generated/MANIFEST", &mlen);
	char *registry = files_read("generated/kernels.inc", &rlen);
	char *line, *save;
	DIR *d;
	struct dirent *e;

	cr_assert_not_null(manifest, "generated/MANIFEST is missing");
	cr_assert_not_null(registry, "generated/kernels.inc is missing");
	for (line = strtok_r(manifest, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *argv[64], *tok, *s2, err[MHAGEN_ERR], path[512];
		int argc = 1;
		struct mhagen_cli cli;
		char *text, *have, needle[256];
		size_t len, hlen;
		if (line[0] == '#' || line[0] == '\0')
			continue;
		argv[0] = "mhagen";
		for (tok = strtok_r(line, " ", &s2); tok && argc < 63;
		     tok = strtok_r(NULL, " ", &s2))
			argv[argc++] = tok;
		argv[argc] = NULL;
		cr_assert(mhagen_parse_args(&cli, argc, argv, err) == 0, "%s", err);
		cr_assert(mhagen_generate(&cli.spec, "kernel", NULL, &text, &len,
		                          err) == 0, "%s", err);
		snprintf(path, sizeof path, "generated/%s.c", cli.spec.name);
		have = files_read(path, &hlen);
		cr_assert_not_null(have, "%s is missing; run make generate", path);
		cr_assert(hlen == len && memcmp(have, text, len) == 0,
		          "%s is stale; run make generate", path);
		snprintf(needle, sizeof needle, "(%s, ", cli.spec.name);
		cr_assert_not_null(strstr(registry, needle),
		                   "generated/kernels.inc lacks %s; run make generate",
		                   cli.spec.name);
		free(text);
		free(have);
		++count;
	}
	cr_assert_geq(count, 8, "the manifest lists only %zu kernels", count);
	d = opendir("generated");
	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		files += n > 2 && strcmp(e->d_name + n - 2, ".c") == 0;
	}
	closedir(d);
	cr_assert_eq(files, count, "generated/ holds %zu kernels, the manifest "
	             "%zu; run make generate", files, count);
	free(manifest);
	free(registry);
}
