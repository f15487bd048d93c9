/* Sweeps of `mhagen tune`: parsing a grid of spec keys, each point's spec. */
#include "tunesweep.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fail.h"

/* Parse "h=8,12 dk=64,128 mask=none,causal+padding"; 0 or -1. */
int mha_sweep_parse(struct mha_sweep *sw, const char *text, char *err)
{
	char buf[2048], *save = NULL;

	memset(sw, 0, sizeof *sw);
	if (strlen(text) >= sizeof buf)
		return mhagen_fail(err, "--sweep: too long");
	strcpy(buf, text);
	for (char *w = strtok_r(buf, " \t", &save); w;
	     w = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(w, '='), *vsave = NULL;
		int k = sw->nkeys;
		if (!eq || eq == w || !eq[1])
			return mhagen_fail(err, "--sweep: expected key=value,value... , "
			                   "got '%s'", w);
		*eq = '\0';
		if (k == MHA_SWEEP_KEYS)
			return mhagen_fail(err, "--sweep: at most %d keys",
			                   MHA_SWEEP_KEYS);
		for (int j = 0; j < k; ++j)
			if (strcmp(sw->keys[j], w) == 0)
				return mhagen_fail(err, "--sweep: key '%s' is given twice", w);
		if (strcmp(w, "name") == 0)
			return mhagen_fail(err, "--sweep: 'name' cannot be swept");
		snprintf(sw->keys[k], sizeof sw->keys[k], "%s", w);
		for (char *v = strtok_r(eq + 1, ",", &vsave); v;
		     v = strtok_r(NULL, ",", &vsave)) {
			struct mha_spec scratch;
			char sub[MHAGEN_ERR];
			if (sw->nvals[k] == MHA_SWEEP_VALS)
				return mhagen_fail(err, "--sweep: at most %d values per "
				                   "key", MHA_SWEEP_VALS);
			for (char *p = v; *p; ++p)
				if (*p == '+')
					*p = ','; /* mask=causal+padding */
			mha_spec_init(&scratch);
			if (mha_spec_set(&scratch, w, v, sub)) {
				if (strncmp(sub, "unknown setting", 15) == 0)
					return mhagen_fail(err, "--sweep: unknown spec key "
					                   "'%s' (keys are the spec flags "
					                   "without --: h, dk, seq, mask, ...)",
					                   w);
				return mhagen_fail(err, "--sweep: %s", sub);
			}
			snprintf(sw->vals[k][sw->nvals[k]++], 64, "%s", v);
		}
		if (!sw->nvals[k])
			return mhagen_fail(err, "--sweep: key '%s' has no values", w);
		++sw->nkeys;
	}
	if (!sw->nkeys)
		return mhagen_fail(err, "--sweep: no keys");
	return 0;
}

/* The spec of sweep point idx (mixed radix over the keys); 0 or -1. */
int mha_sweep_spec(const struct mha_tune_opts *o, const struct mha_sweep *sw,
                   int idx, struct mha_spec *s, char *err)
{
	const char *argv[MHA_TUNE_MAXARGV + 2 * MHA_SWEEP_KEYS];
	char flags[MHA_SWEEP_KEYS][40];
	struct mhagen_cli cli;
	int argc = 0;

	for (int i = 0; i < o->spec_argc; ++i)
		argv[argc++] = o->spec_argv[i];
	for (int k = 0; k < sw->nkeys; ++k) {
		snprintf(flags[k], sizeof flags[k], "--%s", sw->keys[k]);
		for (int i = 1; i < o->spec_argc; ++i)
			if (strcmp(o->spec_argv[i], flags[k]) == 0)
				return mhagen_fail(err, "--sweep: %s is also given as a "
				                   "flag", sw->keys[k]);
		argv[argc++] = flags[k];
		argv[argc++] = sw->vals[k][idx % sw->nvals[k]];
		idx /= sw->nvals[k];
	}
	argv[argc] = NULL;
	if (mhagen_parse_args(&cli, argc, (char **)argv, err))
		return -1;
	*s = cli.spec;
	return 0;
}
