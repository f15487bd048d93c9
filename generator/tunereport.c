/* Tuning reports: a CSV table and a gnuplot chart from the database. */
#include "tunereport.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fail.h"

extern char **environ;

/* One row: the default and the best "ok" records of a group. */
struct row {
	const struct mha_tune_rec *first, *def, *best;
	double dt, bt;          /* their variants' times (medians of records) */
	double dg, bg;          /* and GFLOP/s at those times */
	int ok, failed;         /* records */
};

static int same_group(const struct mha_tune_rec *a, const struct mha_tune_rec *b)
{
	return strcmp(a->spec, b->spec) == 0 && strcmp(a->target, b->target) == 0 &&
	       mha_tune_env_equal(&a->env, &b->env);
}

/* A short label for a spec key: "--h 8 --dk 64 --seq 128 --mask causal"
 * becomes "h8 dk64 s128 causal". */
static void label(const char *spec, char *buf, size_t n)
{
	char copy[512], *save = NULL, *key;
	size_t len = 0;

	snprintf(copy, sizeof copy, "%s", spec);
	buf[0] = '\0';
	for (key = strtok_r(copy, " ", &save); key;
	     key = strtok_r(NULL, " ", &save)) {
		char *val = strtok_r(NULL, " ", &save);
		const char *k = key + 2;
		if (!val)
			break;
		if (len + 1 >= n)
			break;
		if (strcmp(k, "target") == 0)
			continue; /* in the title, or added when they differ */
		if (strcmp(k, "mask") == 0 || strcmp(k, "layout") == 0 ||
		    strcmp(k, "exp") == 0 || strcmp(k, "threads") == 0 ||
		    strcmp(k, "causal-align") == 0)
			snprintf(buf + len, n - len, "%s%s", len ? " " : "", val);
		else if (strcmp(k, "seq") == 0)
			snprintf(buf + len, n - len, "%ss%s", len ? " " : "", val);
		else if (strcmp(k, "seq-kv") == 0)
			snprintf(buf + len, n - len, "%skv%s", len ? " " : "", val);
		else
			snprintf(buf + len, n - len, "%s%s%s", len ? " " : "", k, val);
		len = strlen(buf);
	}
}

/* s as one CSV field. */
static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; ++s) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* The rows as CSV: per spec the default's and the best's times, the
 * speedup and its spread (the least and greatest ratio of the medians of
 * one record of each), the best's knobs that differ from the default's. */
static int write_csv(const char *path, const struct mha_tunedb *db,
                     const struct row *rows, int n, char *err)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		return mhagen_fail(err, "cannot write '%s': %s", path,
		                   strerror(errno));
	}
	fputs("spec,target,cc,cflags,threads,default_ms,default_gflops,"
	      "tuned_ms,tuned_gflops,speedup,speedup_min,speedup_max,"
	      "tuned_knobs,records_ok,records_failed\n", f);
	for (int i = 0; i < n; ++i) {
		const struct row *r = &rows[i];
		struct mha_knob d[MHA_KNOBS_MAX];
		char knobs[256];
		double dlo, dhi, blo, bhi;
		int nd = mha_knobs_differing(r->best->knobs, r->best->nknobs,
		                             r->best->plan, r->def->plan, d);
		mha_knobs_flags(d, nd, knobs, sizeof knobs);
		mha_tunedb_variant_range(db, r->def, &dlo, &dhi);
		mha_tunedb_variant_range(db, r->best, &blo, &bhi);
		csv_field(f, r->def->spec);
		fputc(',', f);
		csv_field(f, r->def->target);
		fputc(',', f);
		csv_field(f, r->def->env.cc);
		fputc(',', f);
		csv_field(f, r->def->env.cflags);
		fprintf(f, ",%d,%.6g,%.6g,%.6g,%.6g,%.4f,%.4f,%.4f,",
		        r->def->env.threads, r->dt * 1e3, r->dg, r->bt * 1e3, r->bg,
		        r->dt / r->bt, dlo / bhi, dhi / blo);
		csv_field(f, r->best->is_default ? "(default)" : knobs);
		fprintf(f, ",%d,%d\n", r->ok, r->failed);
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		mhagen_fail(err, "cannot write '%s': %s", path,
		            strerror(errno));
		remove(tmp);
		return -1;
	}
	return 0;
}

/* Run gnuplot on script; 0 or -1 with err. */
static int gnuplot(const char *script, char *err)
{
	char *argv[] = {"gnuplot", (char *)script, NULL};
	pid_t pid;
	int st, rc;

	rc = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
	if (rc != 0) {
		return mhagen_fail(err, "--plot needs gnuplot: %s", strerror(rc));
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			return mhagen_fail(err, "gnuplot: %s", strerror(errno));
		}
	if (!WIFEXITED(st) || WEXITSTATUS(st) == 127) {
		return mhagen_fail(err, "--plot needs gnuplot (not found or "
		                   "failed)");
	}
	if (WEXITSTATUS(st) != 0) {
		return mhagen_fail(err, "gnuplot failed with status %d",
		                   WEXITSTATUS(st));
	}
	return 0;
}

static int write_svg(const char *path, const struct row *rows, int n,
                     const char *cpu, char *err)
{
	const char *tmpdir = getenv("TMPDIR");
	char dir[512], data[600], script[600], out[4096];
	FILE *f;
	int rc = -1, width = 260 + 110 * n;
	char threads[32];

	snprintf(dir, sizeof dir, "%s/mhagen-plot.XXXXXX",
	         tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(dir)) {
		return mhagen_fail(err, "cannot make a temporary directory: %s",
		                   strerror(errno));
	}
	snprintf(data, sizeof data, "%s/data", dir);
	snprintf(script, sizeof script, "%s/plot.gp", dir);
	snprintf(out, sizeof out, "%s.tmp.%ld", path, (long)getpid());
	if (strchr(path, '\'') || strchr(dir, '\'')) {
		mhagen_fail(err, "--plot: a path with a quote");
		goto done;
	}
	f = fopen(data, "w");
	if (!f)
		goto io;
	for (int i = 0; i < n; ++i) {
		char lab[160];
		label(rows[i].def->spec, lab, sizeof lab);
		if (strcmp(rows[i].def->target, rows[0].def->target) ||
		    strcmp(rows[i].def->env.cflags, rows[0].def->env.cflags) ||
		    strcmp(rows[i].def->env.cc, rows[0].def->env.cc))
			snprintf(lab + strlen(lab), sizeof lab - strlen(lab), " %s %s",
			         rows[i].def->target, rows[i].def->env.cc);
		fprintf(f, "\"%s\" %.6g %.6g %.4f\n", lab, rows[i].dg, rows[i].bg,
		        rows[i].dt / rows[i].bt);
	}
	if (fclose(f) != 0)
		goto io;
	f = fopen(script, "w");
	if (!f)
		goto io;
	if (width < 640)
		width = 640;
	snprintf(threads, sizeof threads, "%d thread%s", rows[0].def->env.threads,
	         rows[0].def->env.threads == 1 ? "" : "s");
	fprintf(f,
	        "set terminal svg size %d,560 dynamic font 'sans,13' background '#ffffff'\n"
	        "set output '%s'\n"
	        "set title \"GFLOP/s per spec, default knobs vs tuned: %s, batch 1, %s\\n%s, %s %s\" noenhanced\n"
	        "set ylabel 'GFLOP/s (useful work, higher is better)'\n"
	        "set style data histograms\n"
	        "set style histogram clustered gap 1\n"
	        "set style fill solid 0.9 border rgb '#333333'\n"
	        "set boxwidth 0.9\n"
	        "set grid ytics lc rgb '#dddddd'\n"
	        "set yrange [0:*]\n"
	        "set xrange [-0.6:%d.6]\n"
	        "set offsets 0, 0, graph 0.12, 0\n"
	        "set key outside right top reverse Left\n"
	        "set xtics rotate by 30 right noenhanced nomirror\n"
	        "set bmargin 8\n"
	        "set datafile separator whitespace\n"
	        "plot '%s' using 2:xtic(1) title 'default knobs' lc rgb '#a0a0a0', \\\n"
	        "     '' using 3 title 'tuned' lc rgb '#2b6cb0', \\\n"
	        "     '' using ($0 + 0.17):3:(sprintf('%%.2fx', $4)) with labels "
	        "offset 0,0.8 font 'sans,11' notitle\n",
	        width, out, rows[0].def->target, threads, cpu,
	        rows[0].def->env.cc, rows[0].def->env.cflags, n - 1, data);
	if (fclose(f) != 0)
		goto io;
	if (gnuplot(script, err))
		goto done;
	if (rename(out, path) != 0)
		goto io;
	rc = 0;
	goto done;
io:
	mhagen_fail(err, "cannot write '%s': %s", path, strerror(errno));
done:
	remove(out);
	remove(data);
	remove(script);
	rmdir(dir);
	return rc;
}

int mha_tune_report(const struct mha_tunedb *db, const char *cpu,
                    const char *templates, const char *csv, const char *svg,
                    char *err)
{
	struct row *rows = calloc(db->n + 1, sizeof *rows);
	int n = 0, complete = 0, rc = -1;

	if (!rows) {
		return mhagen_fail(err, "out of memory");
	}
	for (size_t i = 0; i < db->n; ++i) {
		const struct mha_tune_rec *r = &db->recs[i];
		double t;
		int g;
		if (strcmp(r->env.cpu, cpu) || strcmp(r->env.templates, templates))
			continue;
		for (g = 0; g < n; ++g)
			if (same_group(rows[g].first, r))
				break;
		if (g == n)
			rows[n++].first = r;
		if (!r->ok) {
			++rows[g].failed;
			continue;
		}
		++rows[g].ok;
		t = mha_tunedb_variant_time(db, r);
		if (t <= 0)
			continue; /* another record of its variant failed */
		if (r->is_default && !rows[g].def) {
			rows[g].def = r;
			rows[g].dt = t;
			rows[g].dg = r->gflops * r->median / t;
		}
		if (!rows[g].best || t < rows[g].bt) {
			rows[g].best = r;
			rows[g].bt = t;
			rows[g].bg = r->gflops * r->median / t;
		}
	}
	/* only groups with a measured default make rows */
	for (int g = 0; g < n; ++g)
		if (rows[g].def)
			rows[complete++] = rows[g];
	if (complete == 0) {
		mhagen_fail(err, "no tuned spec with a measured default on "
		            "this CPU and templates in the database");
		goto done;
	}
	if (csv && write_csv(csv, db, rows, complete, err))
		goto done;
	if (svg && write_svg(svg, rows, complete, cpu, err))
		goto done;
	rc = complete;
done:
	free(rows);
	return rc;
}
