/* The tuning database: JSON Lines records, written, read back, queried. */
#include "tunedb.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/mha_time.h"
#include "fail.h"
#include "spec.h"

/* ---- writing */

/* Append s as a JSON string. */
static void put_str(char *buf, size_t n, const char *s)
{
	mha_append(buf, n, "\"");
	for (; *s; ++s) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			mha_append(buf, n, "\\%c", c);
		else if (c == '\n')
			mha_append(buf, n, "\\n");
		else if (c == '\t')
			mha_append(buf, n, "\\t");
		else if (c < 0x20)
			mha_append(buf, n, "\\u%04x", c);
		else
			mha_append(buf, n, "%c", c);
	}
	mha_append(buf, n, "\"");
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; ++s)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* A finite number as JSON (no NaN or inf in JSON: 0 instead). */
static void put_num(char *buf, size_t n, double x)
{
	mha_append(buf, n, "%.6g", isfinite(x) ? x : 0.0);
}

void mha_tunedb_format(const struct mha_tune_rec *r, char *buf, size_t n)
{
	buf[0] = '\0';
	mha_append(buf, n, "{\"spec\":");
	put_str(buf, n, r->spec);
	mha_append(buf, n, ",\"target\":");
	put_str(buf, n, r->target);
	mha_append(buf, n, ",\"knobs\":{");
	for (int i = 0; i < r->nknobs; ++i) {
		mha_append(buf, n, i ? "," : "");
		put_str(buf, n, r->knobs[i].key);
		mha_append(buf, n, ":");
		if (all_digits(r->knobs[i].val))
			mha_append(buf, n, "%s", r->knobs[i].val);
		else
			put_str(buf, n, r->knobs[i].val);
	}
	mha_append(buf, n, "},\"default\":%s,\"plan\":", r->is_default ? "true" : "false");
	put_str(buf, n, r->plan);
	mha_append(buf, n, ",\"cpu\":");
	put_str(buf, n, r->env.cpu);
	mha_append(buf, n, ",\"threads\":%d,\"cc\":", r->env.threads);
	put_str(buf, n, r->env.cc);
	mha_append(buf, n, ",\"cc_version\":");
	put_str(buf, n, r->env.cc_version);
	mha_append(buf, n, ",\"cflags\":");
	put_str(buf, n, r->env.cflags);
	mha_append(buf, n, ",\"mhagen\":");
	put_str(buf, n, r->version);
	mha_append(buf, n, ",\"templates\":");
	put_str(buf, n, r->env.templates);
	mha_append(buf, n, ",\"median_s\":");
	put_num(buf, n, r->median);
	mha_append(buf, n, ",\"min_s\":");
	put_num(buf, n, r->min);
	mha_append(buf, n, ",\"max_s\":");
	put_num(buf, n, r->max);
	mha_append(buf, n, ",\"runs\":%d,\"gflops\":", r->runs);
	put_num(buf, n, r->gflops);
	mha_append(buf, n, ",\"status\":\"%s\",\"reason\":", r->ok ? "ok" : "failed");
	put_str(buf, n, r->reason);
	mha_append(buf, n, "}\n");
}

int mha_tunedb_append(int fd, const struct mha_tune_rec *r)
{
	char line[4096];
	const char *p = line;
	size_t len;

	mha_tunedb_format(r, line, sizeof line);
	len = strlen(line);
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return fsync(fd);
}

/* ---- reading: flat objects of strings, numbers and booleans, and one
 * object of knobs, as written above */

struct parser {
	const char *p;
	int bad;
};

static void ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r')
		++ps->p;
}

static int eat(struct parser *ps, char c)
{
	ws(ps);
	if (*ps->p != c)
		return 0;
	++ps->p;
	return 1;
}

/* A JSON string into out (size n, truncated); 0 or -1. */
static int get_str(struct parser *ps, char *out, size_t n)
{
	size_t k = 0;

	if (!eat(ps, '"'))
		return -1;
	while (*ps->p && *ps->p != '"') {
		char c = *ps->p++;
		if (c == '\\') {
			c = *ps->p++;
			if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'u') {
				unsigned v = 0;
				for (int i = 0; i < 4; ++i) {
					if (!isxdigit((unsigned char)*ps->p))
						return -1;
					v = v * 16 + (unsigned)(isdigit((unsigned char)*ps->p)
					    ? *ps->p - '0' : (tolower((unsigned char)*ps->p) - 'a' + 10));
					++ps->p;
				}
				c = v < 0x80 ? (char)v : '?';
			} else if (c != '"' && c != '\\' && c != '/')
				return -1;
		}
		if (k + 1 < n)
			out[k++] = c;
	}
	if (n)
		out[k] = '\0';
	return eat(ps, '"') ? 0 : -1;
}

static int get_num(struct parser *ps, double *x)
{
	char *end;

	ws(ps);
	errno = 0;
	*x = strtod(ps->p, &end);
	if (end == ps->p || errno == ERANGE || !isfinite(*x))
		return -1;
	ps->p = end;
	return 0;
}

static int get_bool(struct parser *ps, int *b)
{
	ws(ps);
	if (strncmp(ps->p, "true", 4) == 0) {
		ps->p += 4;
		*b = 1;
		return 0;
	}
	if (strncmp(ps->p, "false", 5) == 0) {
		ps->p += 5;
		*b = 0;
		return 0;
	}
	return -1;
}

static int get_knobs(struct parser *ps, struct mha_tune_rec *r)
{
	r->nknobs = 0;
	if (!eat(ps, '{'))
		return -1;
	if (eat(ps, '}'))
		return 0;
	do {
		struct mha_knob *k;
		if (r->nknobs == MHA_KNOBS_MAX)
			return -1;
		k = &r->knobs[r->nknobs++];
		if (get_str(ps, k->key, sizeof k->key) || !eat(ps, ':'))
			return -1;
		ws(ps);
		if (*ps->p == '"') {
			if (get_str(ps, k->val, sizeof k->val))
				return -1;
		} else {
			double x;
			if (get_num(ps, &x) || x != floor(x) || x < 0 || x > 1e9)
				return -1;
			snprintf(k->val, sizeof k->val, "%.0f", x);
		}
	} while (eat(ps, ','));
	return eat(ps, '}') ? 0 : -1;
}

/* Fields every record has; a line missing one is malformed. */
enum { F_SPEC, F_TARGET, F_KNOBS, F_DEFAULT, F_PLAN, F_CPU, F_THREADS, F_CC,
	F_CCV, F_CFLAGS, F_MHAGEN, F_TEMPLATES, F_MEDIAN, F_MIN, F_MAX, F_RUNS,
	F_GFLOPS, F_STATUS, F_REASON, NFIELDS };
static const char *const fields[NFIELDS] = {"spec", "target", "knobs",
	"default", "plan", "cpu", "threads", "cc", "cc_version", "cflags",
	"mhagen", "templates", "median_s", "min_s", "max_s", "runs", "gflops",
	"status", "reason"};

static int parse_line(const char *line, struct mha_tune_rec *r)
{
	struct parser ps = {line, 0};
	unsigned seen = 0;
	char status[16] = "";

	memset(r, 0, sizeof *r);
	if (!eat(&ps, '{'))
		return -1;
	do {
		char key[32];
		double x = 0;
		int f, rc = 0;
		if (get_str(&ps, key, sizeof key) || !eat(&ps, ':'))
			return -1;
		for (f = 0; f < NFIELDS; ++f)
			if (strcmp(key, fields[f]) == 0)
				break;
		if (f == NFIELDS || (seen & (1u << f)))
			return -1;
		seen |= 1u << f;
		switch (f) {
		case F_SPEC: rc = get_str(&ps, r->spec, sizeof r->spec); break;
		case F_TARGET: rc = get_str(&ps, r->target, sizeof r->target); break;
		case F_KNOBS: rc = get_knobs(&ps, r); break;
		case F_DEFAULT: rc = get_bool(&ps, &r->is_default); break;
		case F_PLAN: rc = get_str(&ps, r->plan, sizeof r->plan); break;
		case F_CPU: rc = get_str(&ps, r->env.cpu, sizeof r->env.cpu); break;
		case F_CC: rc = get_str(&ps, r->env.cc, sizeof r->env.cc); break;
		case F_CCV:
			rc = get_str(&ps, r->env.cc_version, sizeof r->env.cc_version);
			break;
		case F_CFLAGS:
			rc = get_str(&ps, r->env.cflags, sizeof r->env.cflags);
			break;
		case F_MHAGEN: rc = get_str(&ps, r->version, sizeof r->version); break;
		case F_TEMPLATES:
			rc = get_str(&ps, r->env.templates, sizeof r->env.templates);
			break;
		case F_STATUS: rc = get_str(&ps, status, sizeof status); break;
		case F_REASON: rc = get_str(&ps, r->reason, sizeof r->reason); break;
		default:
			rc = get_num(&ps, &x);
			if (f == F_MEDIAN) r->median = x;
			else if (f == F_MIN) r->min = x;
			else if (f == F_MAX) r->max = x;
			else if (f == F_GFLOPS) r->gflops = x;
			else if (f == F_RUNS || f == F_THREADS) {
				if (x != floor(x) || x < 0 || x > 1e6)
					return -1;
				if (f == F_RUNS)
					r->runs = (int)x;
				else
					r->env.threads = (int)x;
			}
		}
		if (rc)
			return -1;
	} while (eat(&ps, ','));
	if (!eat(&ps, '}'))
		return -1;
	ws(&ps);
	if (*ps.p != '\0' && *ps.p != '\n')
		return -1;
	if (seen != (1u << NFIELDS) - 1)
		return -1;
	if (strcmp(status, "ok") == 0)
		r->ok = 1;
	else if (strcmp(status, "failed") != 0)
		return -1;
	if (r->ok && !(r->median > 0))
		return -1;
	return 0;
}

int mha_tunedb_load(struct mha_tunedb *db, const char *path, char *err)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t got;

	memset(db, 0, sizeof *db);
	if (!f) {
		if (errno == ENOENT)
			return 0;
		return mhagen_fail(err, "cannot read '%s': %s", path,
		                   strerror(errno));
	}
	while ((got = getline(&line, &cap, f)) >= 0) {
		if (got == 0 || line[0] == '\n')
			continue;
		if (db->n == alloc) {
			size_t na = alloc ? alloc * 2 : 64;
			struct mha_tune_rec *nr = realloc(db->recs, na * sizeof *nr);
			if (!nr) {
				mhagen_fail(err, "out of memory reading '%s'", path);
				free(line);
				fclose(f);
				mha_tunedb_free(db);
				return -1;
			}
			db->recs = nr;
			alloc = na;
		}
		if (parse_line(line, &db->recs[db->n]) == 0)
			++db->n;
		else
			++db->malformed;
	}
	free(line);
	if (ferror(f)) {
		mhagen_fail(err, "cannot read '%s': %s", path,
		            strerror(errno));
		fclose(f);
		mha_tunedb_free(db);
		return -1;
	}
	fclose(f);
	return 0;
}

void mha_tunedb_free(struct mha_tunedb *db)
{
	free(db->recs);
	memset(db, 0, sizeof *db);
}

int mha_tune_env_equal(const struct mha_tune_env *a,
                       const struct mha_tune_env *b)
{
	return strcmp(a->cpu, b->cpu) == 0 && a->threads == b->threads &&
	       strcmp(a->cc, b->cc) == 0 &&
	       strcmp(a->cc_version, b->cc_version) == 0 &&
	       strcmp(a->cflags, b->cflags) == 0 &&
	       strcmp(a->templates, b->templates) == 0;
}

void mha_knobs_flags(const struct mha_knob *k, int n, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < n; ++i)
		mha_append(buf, len, "%s--%s %s", i ? " " : "", k[i].key, k[i].val);
}

int mha_knobs_equal(const struct mha_knob *a, int na,
                    const struct mha_knob *b, int nb)
{
	if (na != nb)
		return 0;
	for (int i = 0; i < na; ++i)
		if (strcmp(a[i].key, b[i].key) || strcmp(a[i].val, b[i].val))
			return 0;
	return 1;
}

/* 1 when r's knobs hold every setting of want. */
static int has_knobs(const struct mha_tune_rec *r, const struct mha_knob *want,
                     int nwant)
{
	for (int i = 0; i < nwant; ++i) {
		int found = 0;
		for (int j = 0; j < r->nknobs && !found; ++j)
			found = strcmp(r->knobs[j].key, want[i].key) == 0 &&
			        strcmp(r->knobs[j].val, want[i].val) == 0;
		if (!found)
			return 0;
	}
	return 1;
}

/* 1 when a and b measure the same variant in the same environment. */
static int same_variant(const struct mha_tune_rec *a,
                        const struct mha_tune_rec *b)
{
	return strcmp(a->spec, b->spec) == 0 && strcmp(a->target, b->target) == 0 &&
	       strcmp(a->plan, b->plan) == 0 && a->is_default == b->is_default &&
	       mha_tune_env_equal(&a->env, &b->env);
}

double mha_tunedb_variant_time(const struct mha_tunedb *db,
                               const struct mha_tune_rec *r)
{
	double t[64];
	size_t n = 0;

	for (size_t i = 0; i < db->n; ++i) {
		const struct mha_tune_rec *o = &db->recs[i];
		if (!same_variant(o, r))
			continue;
		if (!o->ok)
			return 0;
		if (n < sizeof t / sizeof t[0])
			t[n++] = o->median;
	}
	return mha_median(t, n); /* 0 when none */
}

int mha_tunedb_variant_range(const struct mha_tunedb *db,
                             const struct mha_tune_rec *r, double *lo,
                             double *hi)
{
	int n = 0;

	*lo = *hi = 0;
	for (size_t i = 0; i < db->n; ++i) {
		const struct mha_tune_rec *o = &db->recs[i];
		if (!same_variant(o, r) || !o->ok)
			continue;
		if (n == 0 || o->median < *lo)
			*lo = o->median;
		if (n == 0 || o->median > *hi)
			*hi = o->median;
		++n;
	}
	return n;
}

/* The word of plan that starts with tag and goes on with digits (or, for
 * tag NULL, the first word) into buf of size n; "" when none. */
static void plan_word(const char *plan, const char *tag, char *buf, size_t n)
{
	size_t tl = tag ? strlen(tag) : 0;

	buf[0] = '\0';
	for (const char *p = plan; *p;) {
		size_t len = strcspn(p, " ");
		if (!tag || (len > tl && strncmp(p, tag, tl) == 0 &&
		             isdigit((unsigned char)p[tl]))) {
			snprintf(buf, n, "%.*s", (int)len, p);
			return;
		}
		p += len;
		p += strspn(p, " ");
	}
}

/* 1 when plan and def_plan have different words for tag ("" in both is
 * the same). */
static int word_differs(const char *plan, const char *def_plan,
                        const char *tag)
{
	char a[32], b[32];

	plan_word(plan, tag, a, sizeof a);
	plan_word(def_plan, tag, b, sizeof b);
	return strcmp(a, b) != 0 || !a[0];
}

int mha_knobs_differing(const struct mha_knob *k, int n, const char *plan,
                        const char *def_plan, struct mha_knob *out)
{
	int m = 0, algo = word_differs(plan, def_plan, NULL);

	for (int i = 0; i < n; ++i) {
		int id = mha_knob_find(k[i].key), differs = 1;
		if (algo)
			differs = 1; /* the default says nothing of the other's */
		else if (id == MHA_KNOB_ALGO)
			differs = 0;
		else if (id == MHA_KNOB_UNROLL_MAX)
			differs = word_differs(plan, def_plan, "uk") ||
			          word_differs(plan, def_plan, "uv");
		else if (id >= 0 && mha_knob_table[id].plan &&
		         !mha_knob_table[id].words)
			differs = word_differs(plan, def_plan, mha_knob_table[id].tag);
		if (differs)
			out[m++] = k[i];
	}
	return m;
}

const struct mha_tune_rec *mha_tunedb_best(const struct mha_tunedb *db,
	const char *spec, const char *target, const char *cpu,
	const char *templates, const struct mha_knob *want, int nwant,
	size_t *other, double *time)
{
	const struct mha_tune_rec *best = NULL;
	double bt = 0;

	*other = 0;
	for (size_t i = 0; i < db->n; ++i) {
		const struct mha_tune_rec *r = &db->recs[i];
		double t;
		if (strcmp(r->spec, spec) || strcmp(r->target, target))
			continue;
		if (strcmp(r->env.cpu, cpu) || strcmp(r->env.templates, templates)) {
			++*other;
			continue;
		}
		if (!r->ok || !has_knobs(r, want, nwant))
			continue;
		t = mha_tunedb_variant_time(db, r);
		if (t > 0 && (!best || t < bt)) {
			best = r;
			bt = t;
		}
	}
	*time = bt;
	return best;
}

void mha_tunedb_cpus(const struct mha_tunedb *db, const char *spec,
                     const char *target, const char *templates,
                     const char *except, char *buf, size_t n)
{
	buf[0] = '\0';
	for (size_t i = 0; i < db->n; ++i) {
		const struct mha_tune_rec *r = &db->recs[i];
		int seen = 0;
		if (!r->ok || strcmp(r->spec, spec) || strcmp(r->target, target) ||
		    strcmp(r->env.templates, templates) ||
		    strcmp(r->env.cpu, except) == 0)
			continue;
		for (size_t j = 0; j < i && !seen; ++j)
			seen = db->recs[j].ok && strcmp(db->recs[j].env.cpu,
			                                r->env.cpu) == 0 &&
			       strcmp(db->recs[j].spec, spec) == 0 &&
			       strcmp(db->recs[j].target, target) == 0 &&
			       strcmp(db->recs[j].env.templates, templates) == 0;
		if (!seen)
			mha_append(buf, n, "%s'%s'", buf[0] ? ", " : "", r->env.cpu);
	}
}

int mha_knobs_of_spec(const struct mha_spec *s, struct mha_knob *k)
{
	int n = 0;

	for (int i = 0; i < MHA_KNOB_N; ++i) {
		const char *key = mha_knob_table[i].key;
		if (!mha_knob_tuned(i) || !mha_spec_is_set(s, key))
			continue;
		snprintf(k[n].key, sizeof k[n].key, "%s", key);
		mha_knob_text(s, i, k[n].val, sizeof k[n].val);
		++n;
	}
	return n;
}

/* The algorithm, then in the table's order the tag and value of each
 * number the plan reports for it, with unroll-max as what it decides.
 * Databases hold these lines: a change here (a tag, an order) orphans
 * their records. */
void mha_tunedb_plan(const struct mha_plan *p, char *buf, size_t n)
{
	buf[0] = '\0';
	mha_append(buf, n, "%s", mha_algo_names[p->algo]);
	for (int k = 0; k < MHA_KNOB_N; ++k) {
		const struct mha_knob_def *d = &mha_knob_table[k];
		if (!(d->algos & MHA_ALGO_BIT(p->algo)))
			continue;
		if (k == MHA_KNOB_UNROLL_MAX)
			mha_append(buf, n, " uk%d uv%d", p->unroll_k, p->unroll_v);
		else if (d->plan && !d->words)
			mha_append(buf, n, " %s%ld", d->tag, p->v[k]);
	}
}
