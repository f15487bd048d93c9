/* make bench: a few generated kernels of one x86 target, BENCH_TARGET
 * (this machine's native one unless set; bench/bench.mk lists their
 * shapes), each checked against the reference once, then timed pinned to one
 * core and on two OpenMP threads, against the runtime reference, against
 * attention composed from OpenBLAS, and against this machine's own FMA peak
 * and read bandwidth measured in the same run.  Prints a table, writes CSV.
 *
 *   bench CSVFILE
 *
 * Exits 1 when a kernel or the OpenBLAS baseline differs from the reference,
 * before timing it: no speed is reported for a wrong result. */
#define _GNU_SOURCE
#include <cblas.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../runtime/mha_buf.h"
#include "../runtime/mha_cpu.h"
#include "../runtime/mha_ref.h"
#include "../runtime/mha_time.h"
#include "bench.h"
#include "job.h"

#define MIN_RUNS 11     /* timed runs of a kernel or of OpenBLAS, at least */
#define MAX_RUNS 201    /* ... and at most, for short calls */
#define RUN_BUDGET 0.3  /* seconds of timed runs to aim for, per column */
#define REF_SLOW 0.1    /* a reference call this slow gets REF_FEW runs */
#define REF_FEW 3
#define BW_FLOATS ((size_t)64 << 20) /* 256 MiB read per bandwidth run */
#define LLC_FLOATS ((size_t)1 << 20) /* 4 MiB: past L2, in the last-level cache */
#define LLC_DROP 0.05 /* a shape's LLC read this far below the run's marks it */
#define LLC_SHAPE_MAX ((double)(32 << 20)) /* ... when its tensors fit in this */
_Static_assert(MIN_RUNS >= BENCH_PEAK_RUNS, "a peak sample per run at most");

/* The kernels: one `mhagen --emit registry` line each, in kernels.inc. */
#define MHA_KERNEL BENCH_PROTO
#include "kernels.inc"
#undef MHA_KERNEL

#define MHA_KERNEL BENCH_SHAPE
static const struct shape shapes[] = {
#include "kernels.inc"
};
#undef MHA_KERNEL
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* The batch of the shapes timed with more than one item (bench/bench.mk's
 * BENCH_BATCH_x); every other shape runs batch 1. */
struct batch {
	const char *name;
	size_t n;
};
#define BENCH_BATCH(k, n) {#k, n},
static const struct batch batches[] = {
#include "batches.inc"
	{NULL, 0},
};
#undef BENCH_BATCH

static size_t batch_of(const struct shape *sh)
{
	for (const struct batch *b = batches; b->name; ++b)
		if (strcmp(b->name, sh->name) == 0)
			return b->n;
	return 1;
}

/* Median clang -O2 compile seconds and object bytes of each kernel, measured
 * by tools/time-cc.sh, in compile.inc. */
struct build {
	const char *name;
	double seconds;
	long bytes;
};

#define BENCH_BUILD(name, seconds, bytes) {#name, seconds, bytes},
static const struct build builds[] = {
#include "compile.inc"
};
#undef BENCH_BUILD

/* Variants (grouped-query heads, a bias) and the plain shape each is
 * compared with, from bench.mk's BENCH_PLAIN_x, in pairs.inc. */
struct pair {
	const char *variant, *plain;
};

#define BENCH_PAIR(variant, plain) {#variant, #plain},
static const struct pair pairs[] = {
#include "pairs.inc"
	{NULL, NULL}
};
#undef BENCH_PAIR

/* What was measured for one shape; times in seconds, 0 when not measured. */
struct result {
	char label[64];
	double flops, bytes;     /* useful flops; K and V bytes read */
	double bw;               /* decode: 1-core read GB/s over as many bytes */
	double t1, t2;           /* kernel on 1 thread, on 2 threads */
	double peak;             /* FMA GFLOP/s sampled between t1's runs */
	double peak2;            /* the same on 2 threads between t2's runs */
	double llc;              /* 4 MiB read GB/s sampled between t1's runs */
	double tensor_bytes;     /* Q, K, V and the output */
	double tref, tblas;
	size_t ref_runs;
	double err, err_blas, tol;
	const struct build *build;
};

/* The machine's figures, measured in the same run. */
struct machine {
	double peak, peak_end; /* 1-core FMA GFLOP/s, before and after */
	double llc, llc_end;   /* 1-core 4 MiB read GB/s, before and after */
	double bw;             /* 1-core read GB/s */
	double others;         /* CPUs other processes kept busy, on average */
};

static cpu_set_t all_cpus; /* the affinity the bench started with */

/* How many timed runs for a call that took t seconds: MIN_RUNS at least,
 * more for short calls, up to about RUN_BUDGET seconds. */
static size_t runs_for(double t)
{
	double n = RUN_BUDGET / (t > 1e-9 ? t : 1e-9);

	return n < MIN_RUNS ? MIN_RUNS : n > MAX_RUNS ? MAX_RUNS : (size_t)n;
}

/* Median seconds of n runs of the job; first holds a time already taken
 * (counted as one of the n) or is negative. */
static double median_time(const struct job *j, size_t n, double first)
{
	double t[MAX_RUNS];
	size_t i = 0;

	if (first >= 0.0)
		t[i++] = first;
	while (i < n)
		t[i++] = job_run(j);
	return mha_median(t, n);
}

static float *llc_buf; /* LLC_FLOATS, read by llc_one */

/* One sample of the calling core's read bandwidth from the last-level
 * cache: GB/s of 4 MiB read three times more after a read that brings back
 * what a kernel evicted, the fastest.  A neighbour that leaves the core
 * alone but reads or evicts through the shared cache slows it and the
 * kernels, not the FMA loop (on the Zen 4 guest, h8 dk64 s128 batch 8 at
 * 55-65% of the peak while such a read on its own took 87-95 GB/s, 78-80%
 * while it took 100-102). */
static double llc_one(void)
{
	float sink;
	double best = 0.0;

	bench_read_gbs(llc_buf, LLC_FLOATS, &sink);
	for (int i = 0; i < 3; ++i) {
		double g = bench_read_gbs(llc_buf, LLC_FLOATS, &sink);
		best = g > best ? g : best;
	}
	return best;
}

/* One sample of the FMA peak on the calling thread. */
static double fma_one(void)
{
	return job_fma(BENCH_WIDTH);
}

#ifdef _OPENMP
/* One sample of the FMA peak of two OpenMP threads running the loop at
 * once: their GFLOP/s summed.  Below twice one core's when the two CPUs
 * do not both belong to the bench (the host runs something else on one, or
 * a virtual machine's two CPUs share a core for a while: 2T x read
 * 1.55-1.96x for h8 dk64 s128 on a guest whose CPU 0 alone stayed quiet). */
static double fma_two(void)
{
	double g = 0.0;

#pragma omp parallel num_threads(2) reduction(+ : g)
	g += job_fma(BENCH_WIDTH);
	return g;
}
#endif

/* Median seconds of n (>= BENCH_PEAK_RUNS) runs of the job, with
 * BENCH_PEAK_RUNS samples of the FMA peak (fma: fma_one, or fma_two for a
 * 2-thread job) spread between them, and as many of the last-level cache's
 * read bandwidth (llc_one) unless llc is NULL; their medians in *peak and
 * *llc: the peak in
 * the same seconds as the runs, under the same load and clock (between
 * runs whole seconds apart, a run's start and end peaks read 166-181
 * GFLOP/s on one core while h16 dk128 s1024 causal held at 31.3-31.5 ms). */
static double median_time_peak(const struct job *j, size_t n, double *peak,
                               double (*fma)(void), double *llc)
{
	double t[MAX_RUNS], g[BENCH_PEAK_RUNS], c[BENCH_PEAK_RUNS];
	size_t k = 0;

	for (size_t i = 0; i < n; ++i) {
		t[i] = job_run(j);
		/* after runs n/P - 1, 2n/P - 1, ...: the last after the last run */
		if (k < BENCH_PEAK_RUNS && (i + 1) * BENCH_PEAK_RUNS >= (k + 1) * n) {
			g[k] = fma();
			c[k++] = llc ? llc_one() : 0.0;
		}
	}
	*peak = mha_median(g, BENCH_PEAK_RUNS);
	if (llc)
		*llc = mha_median(c, BENCH_PEAK_RUNS);
	return mha_median(t, n);
}

/* Exit 1, before any time of it is reported, when what differs from the
 * reference beyond tol. */
static void verify(const char *what, const struct result *r, double err)
{
	if (err <= r->tol)
		return;
	fprintf(stderr, "bench: %s on %s differs from the reference: "
	        "max|err| %.3g > tolerance %.3g\n", what, r->label, err,
	        r->tol);
	exit(1);
}

/* Start the OpenMP runtime and its second thread while every CPU is
 * allowed: libomp gives the threads it starts the affinity of the moment,
 * and the benchmark pins itself to CPU 0 right after.  Leaves 1 thread. */
static void start_threads(void)
{
#ifdef _OPENMP
	omp_set_num_threads(2);
#pragma omp parallel
	{
		(void)omp_get_thread_num();
	}
	omp_set_num_threads(1);
#endif
}

/* The build facts of kernel name, or NULL. */
static const struct build *find_build(const char *name)
{
	for (size_t i = 0; i < sizeof builds / sizeof builds[0]; ++i)
		if (strcmp(builds[i].name, name) == 0)
			return &builds[i];
	return NULL;
}

/* CPU seconds the whole machine spent busy (steal included) since boot,
 * less what this process used: the load of everything else.  -1 when
 * /proc/stat cannot be read. */
static double others_seconds(void)
{
	unsigned long long f[8] = {0};
	struct rusage ru;
	FILE *p = fopen("/proc/stat", "r");
	int n;

	if (!p)
		return -1.0;
	n = fscanf(p, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0],
	           &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7]);
	fclose(p);
	if (n != 8 || getrusage(RUSAGE_SELF, &ru))
		return -1.0;
	/* user nice system [idle iowait] irq softirq steal */
	return (double)(f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) /
	       (double)sysconf(_SC_CLK_TCK) -
	       ((double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	        (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6);
}

/* Median 1-core read GB/s over n floats (rounded up to 64), read again and
 * again like a decode kernel reads K and V: the same bytes, warm the same
 * way.  A large last-level cache holds them, so this is the bandwidth a
 * decode kernel can reach, which the 256 MiB figure may not be.  0 when out
 * of memory. */
static double measure_bandwidth_of(size_t n)
{
	double g[BENCH_PEAK_RUNS];
	float *a, sink = 0.0f;

	n = (n + 63) / 64 * 64;
	a = mha_alloc(n);
	if (!a)
		return 0.0;
	for (size_t i = 0; i < n; ++i)
		a[i] = 1.0f;
	bench_read_gbs(a, n, &sink);
	for (int r = 0; r < BENCH_PEAK_RUNS; ++r)
		g[r] = bench_read_gbs(a, n, &sink);
	mha_free(a);
	return sink == (float)n ? mha_median(g, BENCH_PEAK_RUNS) : 0.0;
}

/* Median single-core read GB/s over a 256 MiB array, after one warm-up. */
static double measure_bandwidth(void)
{
	return measure_bandwidth_of(BW_FLOATS);
}

/* Median of BENCH_PEAK_RUNS llc_one samples in a row. */
static double measure_llc(void)
{
	double c[BENCH_PEAK_RUNS];

	for (int r = 0; r < BENCH_PEAK_RUNS; ++r)
		c[r] = llc_one();
	return mha_median(c, BENCH_PEAK_RUNS);
}

/* Call the job once into the poisoned, guarded output and compare with ref;
 * exit when it differs or wrote outside its output.  Seconds taken. */
static double check(const struct job *j, struct mha_guarded *out,
                    const float *ref, const char *what, struct result *r)
{
	double t, err;

	mha_guarded_poison(out);
	t = job_run(j);
	job_out_floats(j, out->data, out->n);
	err = mha_guarded_intact(out) ? job_max_err(out->data, ref, out->n)
	                              : INFINITY;
	verify(what, r, err);
	if (j->impl == OPENBLAS)
		r->err_blas = err;
	else if (r->err < err)
		r->err = err;
	return t;
}

/* Kernel on 1 thread pinned to CPU 0 (then, with OpenMP, on 2 threads
 * over every CPU): check once (the warm-up), then time. */
static void measure_kernel(const struct job *j, struct mha_guarded *out,
                           const float *ref, struct result *r)
{
	double t = check(j, out, ref, j->sh->name, r);

	r->t1 = median_time_peak(j, runs_for(t), &r->peak, fma_one, &r->llc);
#ifdef _OPENMP
	fprintf(stderr, " kernel-2T");
	sched_setaffinity(0, sizeof all_cpus, &all_cpus);
	omp_set_num_threads(2);
	t = check(j, out, ref, "the kernel on 2 threads", r);
	r->t2 = median_time_peak(j, runs_for(t), &r->peak2, fma_two, NULL);
	omp_set_num_threads(1);
	mha_pin_cpu(0);
#endif
}

/* Every column of one shape; progress on stderr.  -1 when out of memory
 * or for a mask the benchmark does not pass arguments for. */
static int measure_shape(const struct shape *sh, struct result *r,
                         size_t index)
{
	const size_t batch = batch_of(sh);
	struct inputs in;
	struct job j;
	struct mha_guarded out = {0};
	double tref;

	if (job_inputs(&in, &j, sh, batch, 0x6d686167656eull + index))
		return -1;
	/* at the inputs' page offset, as an allocator places buffers of
	 * their size (README "What the figures count") */
	if (mha_guarded_init_at(&out, in.no, in.q)) {
		fprintf(stderr, "bench: out of memory\n");
		job_inputs_free(&in);
		return -1;
	}
	job_label(r->label, sizeof r->label, sh, batch);
	r->flops = job_flops(sh, batch);
	r->bytes = (double)in.kvbytes;
	r->tensor_bytes = (double)in.kvbytes + sizeof(float) * (double)(in.no +
	                  batch * sh->seq_q * sh->attn.h * sh->attn.dk);
	r->build = find_build(sh->name);
	r->tol = in.tol;

	fprintf(stderr, "bench: [%zu/%zu] %s (%s): reference", index + 1,
	        NSHAPES, r->label, sh->name);
	tref = job_run(&j);
	fprintf(stderr, " kernel-1T");
	j.impl = KERNEL;
	j.out = out.data;
	measure_kernel(&j, &out, in.ref, r);

	fprintf(stderr, " OpenBLAS");
	j.impl = OPENBLAS;
	r->tblas = median_time(&j, runs_for(check(&j, &out, in.ref,
	                       "the OpenBLAS baseline", r)), -1.0);

	if (sh->seq_q == 1) {
		fprintf(stderr, " bandwidth");
		r->bw = measure_bandwidth_of(in.kvbytes / sizeof(float));
	}
	r->ref_runs = tref > REF_SLOW ? REF_FEW : MIN_RUNS;
	fprintf(stderr, " reference-x%zu\n", r->ref_runs);
	j.impl = REFERENCE;
	j.out = in.ref;
	/* a slow reference's check call counts as a run; else it warmed up */
	r->tref = median_time(&j, r->ref_runs, tref > REF_SLOW ? tref : -1.0);

	job_inputs_free(&in);
	mha_guarded_free(&out);
	return 0;
}

/* A shape's % of the FMA peak: against the peak sampled between its own
 * 1-thread runs (median_time_peak), not the run's start and end figures (a
 * run whose first measurement fell in a busy minute read 63.5 GFLOP/s
 * against 95.1 after, and every AVX2 shape at 112-119% of it). */
static double pct_peak(const struct result *r)
{
	return 100.0 * r->flops / r->t1 * 1e-9 / r->peak;
}

/* The highest FMA peak read in the run: at its start, its end, or between
 * any shape's runs. */
static double run_peak(const struct result *res, const struct machine *m)
{
	double p = m->peak > m->peak_end ? m->peak : m->peak_end;

	for (size_t i = 0; i < NSHAPES; ++i)
		if (res[i].peak > p)
			p = res[i].peak;
	return p;
}

/* Whether the shape's LLC read tells of neighbours: its tensors take
 * LLC_SHAPE_MAX bytes or less.  A kernel whose lines overflow the
 * last-level cache slows the read after it by itself (on the Zen 4 guest,
 * 32 MiB of L3: h32 dk128 s2048 causal, 128 MiB, read 68.9-84.7 GB/s in
 * six runs at 79.6-87.7% of the peak, where the smaller shapes of the
 * quiet runs read 98.9-100.6).  h16 dk128 s1024 causal, 32 MiB, still
 * tells: 98.8-100.7 in its quiet runs at 84-87%, 82.0-83.6 in two runs at
 * 72.0% (AVX2) and 79.3% (AVX-512), 94.3 in one at its usual 83.3%. */
static int llc_tells(const struct result *r)
{
	return r->tensor_bytes <= LLC_SHAPE_MAX;
}

/* The highest last-level cache read of the run between the runs of any
 * shape it tells of (not at the run's start or end: read in a row, with no
 * kernel's lines to write back between them, those came up to 1% higher on
 * a quiet machine, 100.7-100.9 GB/s against 99.2-100.5). */
static double run_llc(const struct result *res)
{
	double c = 0.0;

	for (size_t i = 0; i < NSHAPES; ++i)
		if (llc_tells(&res[i]) && res[i].llc > c)
			c = res[i].llc;
	return c;
}

/* Whether the core ran slow during the shape's runs: its peak then 5% or
 * more below the run's highest (something else shared the core), or its
 * last-level cache read, where it tells, LLC_DROP or more below the run's
 * highest llc (something else shared the cache or memory). */
static int slowed(const struct result *r, double top, double llc)
{
	return r->peak < 0.95 * top ||
	       (llc_tells(r) && r->llc < (1.0 - LLC_DROP) * llc);
}

/* Whether the two CPUs were not both the bench's during the shape's 2T
 * runs: the 2-thread FMA peak then 5% or more below twice the run's highest
 * 1-core figure. */
static int slowed2(const struct result *r, double top)
{
	return r->t2 > 0.0 && r->peak2 < 0.95 * 2.0 * top;
}

/* The "%peak" cell: % of the FMA peak, or for decode of read bandwidth. */
static void pct_cell(char *buf, size_t size, const struct shape *sh,
                     const struct result *r, double top, double llc)
{
	if (sh->seq_q == 1)
		snprintf(buf, size, "%.1f%% bw",
		         100.0 * r->bytes / r->t1 * 1e-9 / r->bw);
	else
		snprintf(buf, size, "%.1f%%%s", pct_peak(r),
		         slowed(r, top, llc) ? "~" : "");
}

/* The table on stdout. */
static void print_table(const struct result *res, const struct machine *m)
{
	const double top = run_peak(res, m), llc = run_llc(res);
	int omp = 0;

#ifdef _OPENMP
	omp = 1;
#endif
	printf("\nmhagen bench: %s, %ld CPUs; 1 core: %s FMA peak %.1f GFLOP/s "
	       "(%.1f after the kernels), read bandwidth %.1f GB/s, 4 MiB "
	       "read %.1f GB/s (%.1f after; medians of %d, this run)\n",
	       mha_cpu_model(), sysconf(_SC_NPROCESSORS_ONLN), BENCH_TARGET,
	       m->peak, m->peak_end, m->bw, m->llc, m->llc_end,
	       BENCH_PEAK_RUNS);
	printf("kernels: mhagen --target %s%s, clang -O2 %s%s; "
	       "%s, core %s, 1 thread\n\n", BENCH_TARGET,
	       omp ? " --threads openmp" : "", BENCH_KFLAGS,
	       omp ? " -fopenmp" : "", openblas_get_config(),
	       openblas_get_corename());
	printf("%-27s %9s %9s %6s %8s %9s %6s %6s %8s %7s %8s %8s %9s %7s\n", "shape",
	       "ms 1T", "ms 2T", "2T x", "GFLOP/s", "%peak", "peak", "LLC", "x ref", "x BLAS",
	       "max|err|", "BLAS err", "compile s", "obj KiB");
	for (size_t i = 0; i < NSHAPES; ++i) {
		const struct result *r = &res[i];
		char t2[16] = "-", sp[16] = "-", pct[24], xr[16], lc[16];
		if (r->t2 > 0.0) {
			snprintf(t2, sizeof t2, "%.3f", r->t2 * 1e3);
			snprintf(sp, sizeof sp, "%.2f%s", r->t1 / r->t2,
			         slowed2(r, top) ? "~" : "");
		}
		pct_cell(pct, sizeof pct, &shapes[i], r, top, llc);
		snprintf(lc, sizeof lc, llc_tells(r) ? "%.1f" : "(%.1f)", r->llc);
		snprintf(xr, sizeof xr, "%.1f%s", r->tref / r->t1,
		         r->ref_runs < MIN_RUNS ? "*" : "");
		printf("%-27s %9.3f %9s %6s %8.2f %9s %6.1f %6s %8s %7.2f %8.1e "
		       "%8.1e %9.2f %7.1f\n", r->label, r->t1 * 1e3, t2, sp,
		       r->flops / r->t1 * 1e-9, pct, r->peak, lc, xr,
		       r->tblas / r->t1,
		       r->err, r->err_blas, r->build ? r->build->seconds : NAN,
		       r->build ? (double)r->build->bytes / 1024.0 : NAN);
	}
	printf("\nms: median of >= %d runs after a warm-up; 1T pinned to CPU 0, "
	       "2T two OpenMP threads on all CPUs (\"-\": kernels built without "
	       "OpenMP); 2T x: 1T time / 2T time (\"~\": the FMA peak of two "
	       "threads, sampled %d times between the 2T runs, read 5%% or more "
	       "below twice %.1f: a CPU was shared, the figure unreliable).\n",
	       MIN_RUNS, BENCH_PEAK_RUNS, top);
	printf("GFLOP/s: useful flops (4 h dk per visible query-key pair) per "
	       "second at 1T; %%peak of peak, the FMA GFLOP/s of CPU 0 sampled "
	       "%d times between the kernel's 1T runs (median), LLC the GB/s of a "
	       "4 MiB read from the last-level cache sampled with it, in () for a "
	       "shape whose tensors take more than %.0f MiB, whose own lines slow "
	       "it (\"~\": peak 5%% or more below the run's highest, %.1f, or LLC "
	       "not in () %.0f%% or more below %.1f: the core, or the cache or "
	       "memory, was shared, the figure unreliable); \"bw\": K+V bytes read "
	       "per second, %% of the 1-core read bandwidth over as many bytes "
	       "(measured after the kernel; a large cache may hold them).\n",
	       BENCH_PEAK_RUNS, LLC_SHAPE_MAX / (1 << 20), top, 100.0 * LLC_DROP,
	       llc);
	printf("x ref, x BLAS: reference or OpenBLAS-composed time / kernel 1T "
	       "time; * reference timed over %d runs (slow), else %d.\n",
	       REF_FEW, MIN_RUNS);
	printf("max|err|, BLAS err: against the reference (tolerance 1e-4 "
	       "max|v|); compile s: median of 3 clang -O2 compiles.\n");
}

/* The index of the shape whose kernel is called name. */
static size_t shape_index(const char *name)
{
	size_t i = 0;

	while (i < NSHAPES && strcmp(shapes[i].name, name) != 0)
		++i;
	return i;
}

/* Each variant's 1-thread time against its plain shape's, same run. */
static void print_pairs(const struct result *res)
{
	if (!pairs[0].variant)
		return;
	printf("\n%-32s %-27s %9s %9s %9s\n", "variant", "plain", "ms 1T",
	       "plain ms", "x plain");
	for (const struct pair *p = pairs; p->variant; ++p) {
		size_t v = shape_index(p->variant), b = shape_index(p->plain);
		if (v == NSHAPES || b == NSHAPES)
			continue;
		printf("%-32s %-27s %9.3f %9.3f %9.3f\n", res[v].label,
		       res[b].label, res[v].t1 * 1e3, res[b].t1 * 1e3,
		       res[v].t1 / res[b].t1);
	}
	printf("x plain: variant time / plain time, 1 thread (below 1: the "
	       "variant is faster).\n");
}

/* Say so when something else used the CPU during the run. */
static void warn_shared(const struct result *res, const struct machine *m)
{
	const double top = run_peak(res, m), llc = run_llc(res);
	int moved = fabs(m->peak_end - m->peak) > 0.05 * m->peak;
	size_t slow = 0, slow2 = 0;

	for (size_t i = 0; i < NSHAPES; ++i) {
		slow += shapes[i].seq_q > 1 && slowed(&res[i], top, llc);
		slow2 += slowed2(&res[i], top);
	}
	if (slow)
		printf("warning: %zu shape%s ran while CPU 0's FMA peak read 5%% "
		       "or more below the run's highest, or its 4 MiB read %.0f%% "
		       "(%%peak marked ~).\n", slow, slow == 1 ? "" : "s",
		       100.0 * LLC_DROP);
	if (slow2)
		printf("warning: %zu shape%s ran on 2 threads while their FMA "
		       "peak read 5%% or more below twice one core's (2T x "
		       "marked ~).\n", slow2, slow2 == 1 ? "" : "s");
	if (moved)
		printf("warning: the FMA peak moved from %.1f to %.1f GFLOP/s "
		       "during the run.\n", m->peak, m->peak_end);
	if (m->others > 0.05)
		printf("warning: other processes kept %.2f CPUs busy on "
		       "average during the run.\n", m->others);
	if (moved || slow || slow2 || m->others > 0.05)
		printf("warning: the CPU was shared, so these figures are "
		       "unreliable (2T most of all); run again on a quiet "
		       "machine.\n");
}

/* One CSV field: a number, or empty when v is 0 (not measured). */
static void csv_num(FILE *f, double v)
{
	if (v != 0.0)
		fprintf(f, ",%.6g", v);
	else
		fputs(",", f);
}

/* The CSV: one row per shape, the machine's figures (the FMA peak measured
 * before and after the kernels) repeated on each, the peak sampled between
 * the shape's own runs last. */
static int write_csv(const char *path, const struct result *res,
                     const struct machine *m)
{
	FILE *f = fopen(path, "w");
	int omp = 0;

#ifdef _OPENMP
	omp = 1;
#endif
	if (!f) {
		perror(path);
		return -1;
	}
	fputs("shape,kernel,h,kv_heads,dk,dv,seq_q,seq_kv,causal,ms_1t,ms_2t,"
	      "speedup_2t,gflops_1t,gflops_2t,pct_fma_peak,read_gbs_1t,"
	      "pct_read_bw,read_bw_same_bytes_gbs,ms_ref,ref_runs,x_ref,ms_openblas,x_openblas,"
	      "err_kernel,err_openblas,tol,compile_s,object_bytes,cpu,"
	      "fma_peak_gflops,fma_peak_end_gflops,read_bw_gbs,other_cpus,openmp,batch,"
	      "fma_peak_runs_gflops,fma_peak_2t_runs_gflops,llc_read_gbs,"
	      "llc_read_end_gbs,llc_read_runs_gbs\n", f);
	for (size_t i = 0; i < NSHAPES; ++i) {
		const struct shape *sh = &shapes[i];
		const struct result *r = &res[i];
		int decode = sh->seq_q == 1;
		fprintf(f, "%s,%s,%zu,%zu,%zu,%zu,%zu,%zu,%d,%.6g", r->label,
		        sh->name, sh->attn.h, sh->attn.kv_heads, sh->attn.dk,
		        sh->attn.dv, sh->seq_q, sh->seq_kv,
		        !!(sh->attn.mask & MHA_MASK_CAUSAL), r->t1 * 1e3);
		csv_num(f, r->t2 * 1e3);
		csv_num(f, r->t2 > 0.0 ? r->t1 / r->t2 : 0.0);
		fprintf(f, ",%.6g", r->flops / r->t1 * 1e-9);
		csv_num(f, r->t2 > 0.0 ? r->flops / r->t2 * 1e-9 : 0.0);
		fprintf(f, ",%.4g", pct_peak(r));
		csv_num(f, decode ? r->bytes / r->t1 * 1e-9 : 0.0);
		csv_num(f, decode ? 100.0 * r->bytes / r->t1 * 1e-9 / r->bw : 0.0);
		csv_num(f, decode ? r->bw : 0.0);
		fprintf(f, ",%.6g,%zu,%.4g,%.6g,%.4g,%.3g,%.3g,%.3g", r->tref * 1e3,
		        r->ref_runs, r->tref / r->t1, r->tblas * 1e3,
		        r->tblas / r->t1, r->err, r->err_blas, r->tol);
		if (r->build)
			fprintf(f, ",%.4g,%ld", r->build->seconds, r->build->bytes);
		else
			fputs(",,", f);
		fprintf(f, ",\"%s\",%.4g,%.4g,%.4g,%.3f,%d,%zu,%.4g",
		        mha_cpu_model(), m->peak, m->peak_end, m->bw, m->others,
		        omp, batch_of(sh), r->peak);
		csv_num(f, r->t2 > 0.0 ? r->peak2 : 0.0);
		fprintf(f, ",%.4g,%.4g,%.4g\n", m->llc, m->llc_end, r->llc);
	}
	return fclose(f) ? -1 : 0;
}

int main(int argc, char **argv)
{
	static struct result res[NSHAPES];
	struct machine m;
	double t0 = mha_now(), others = others_seconds();

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: bench CSVFILE (make bench runs it; see README \"Speed\")\n");
		return 2;
	}
	openblas_set_num_threads(1);
	sched_getaffinity(0, sizeof all_cpus, &all_cpus);
	start_threads();
	mha_pin_cpu(0);

	fprintf(stderr, "bench: FMA peak and read bandwidth of CPU 0\n");
	m.peak = job_peak(BENCH_WIDTH, NULL);
	m.bw = measure_bandwidth();
	llc_buf = mha_alloc(LLC_FLOATS);
	for (size_t i = 0; llc_buf && i < LLC_FLOATS; ++i)
		llc_buf[i] = 1.0f;
	m.llc = llc_buf ? measure_llc() : 0.0;
	if (!(m.peak > 0.0) || !(m.bw > 0.0) || !(m.llc > 0.0)) {
		fprintf(stderr, "bench: peak measurement failed\n");
		return 1;
	}
	for (size_t i = 0; i < NSHAPES; ++i)
		if (measure_shape(&shapes[i], &res[i], i))
			return 1;
	fprintf(stderr, "bench: FMA peak and 4 MiB read of CPU 0 again\n");
	m.peak_end = job_peak(BENCH_WIDTH, NULL);
	m.llc_end = measure_llc();
	mha_free(llc_buf);
	m.others = others < 0.0 ? 0.0 : (others_seconds() - others) /
	                                (mha_now() - t0);
	print_table(res, &m);
	print_pairs(res);
	warn_shared(res, &m);
	if (write_csv(argv[1], res, &m))
		return 1;
	printf("wrote %s\n", argv[1]);
	return 0;
}
