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

#define MIN_RUNS 11     /* timed runs of a kernel or of OpenBLAS, at least */
#define MAX_RUNS 201    /* ... and at most, for short calls */
#define RUN_BUDGET 0.3  /* seconds of timed runs to aim for, per column */
#define REF_SLOW 0.1    /* a reference call this slow gets REF_FEW runs */
#define REF_FEW 3
#define PEAK_RUNS 11
#define WARM_UP 0.3 /* seconds of FMA loop before measuring the peak */
#define BW_FLOATS ((size_t)64 << 20) /* 256 MiB read per bandwidth run */

/* The kernels: one `mhagen --emit registry` line each, in kernels.inc. */
#define MHA_KERNEL(name, tgt, cpu, sq, skv, plain, wts, lse, stack, ...)   \
	mha_args_fn name##_args;
#include "kernels.inc"
#undef MHA_KERNEL

struct shape {
	const char *name;
	mha_args_fn *fn;
	struct mha_attn attn;
	size_t seq_q, seq_kv; /* fixed by the spec */
};

#define MHA_KERNEL(name, tgt, cpu, sq, skv, plain, wts, lse, stack, ...)   \
	{#name, name##_args, {__VA_ARGS__}, sq, skv},
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
	double tref, tblas;
	size_t ref_runs;
	double err, err_blas, tol;
	const struct build *build;
};

/* The machine's figures, measured in the same run. */
struct machine {
	double peak, peak_end; /* 1-core FMA GFLOP/s, before and after */
	double bw;             /* 1-core read GB/s */
	double others;         /* CPUs other processes kept busy, on average */
};

enum impl { KERNEL, REFERENCE, OPENBLAS };

/* One implementation applied to one shape's buffers. */
struct job {
	const struct shape *sh;
	size_t batch;
	enum impl impl;
	const float *q, *k, *v;
	/* k and v as the kernel and the reference read them: k and v, or
	 * their f16 or bf16 bits (--kv-dtype; k and v then hold the stored
	 * values, for OpenBLAS) */
	const void *kx, *vx;
	/* q as the kernel reads it: q, or its f16 or bf16 bits (--dtype; q
	 * then holds the stored values, and the kernel writes 16-bit outputs
	 * at out's start) */
	const void *qx;
	float *out, *s; /* s: OpenBLAS workspace, seq_q * seq_kv floats */
	const float *bias; /* NULL unless the mask has bias */
	const uint8_t *bool_mask, *key_mask; /* NULL unless the mask has them */
};

static cpu_set_t all_cpus; /* the affinity the bench started with */

/* Run the job once; seconds taken. */
static double run_once(const struct job *j)
{
	const struct shape *sh = j->sh;
	/* --varlen kernels: the one sequence full, the plain kernel's work
	 * (the OpenBLAS baseline computes it as the plain shape) */
	const int32_t ql[1] = {(int32_t)sh->seq_q}, kl[1] = {(int32_t)sh->seq_kv};
	const int32_t cq[2] = {0, (int32_t)sh->seq_q};
	const int32_t ck[2] = {0, (int32_t)sh->seq_kv};
	struct mha_args x = {
		.q = j->impl == KERNEL ? j->qx : (const void *)j->q,
		.k = j->impl == OPENBLAS ? j->k : j->kx,
		.v = j->impl == OPENBLAS ? j->v : j->vx, .out = j->out,
		.batch = j->batch, .seq_q = sh->seq_q, .seq_kv = sh->seq_kv, .bias = j->bias,
		.bool_mask = j->bool_mask, .key_mask = j->key_mask,
		.kv_len = sh->attn.varlen == MHA_VARLEN_PADDED ? kl : NULL,
		.q_len = sh->attn.varlen == MHA_VARLEN_PADDED ? ql : NULL,
		.cu_seqlens_q = sh->attn.varlen == MHA_VARLEN_PACKED ? cq : NULL,
		.cu_seqlens_k = sh->attn.varlen == MHA_VARLEN_PACKED ? ck : NULL,
	};
	double t0 = mha_now();

	switch (j->impl) {
	case KERNEL:
		sh->fn(&x);
		break;
	case REFERENCE: {
		/* from the stored values as floats, into floats */
		struct mha_attn ar = sh->attn;
		ar.dtype = MHA_DTYPE_F32;
		mha_ref_attention(&ar, &x);
		break;
	}
	case OPENBLAS:
		if (blas_attention(&sh->attn, &x, j->s)) {
			fprintf(stderr, "\nbench: no OpenBLAS baseline for "
			        "%s (its mask or layout)\n", sh->name);
			exit(1);
		}
		break;
	}
	return mha_now() - t0;
}

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
		t[i++] = run_once(j);
	return mha_median(t, n);
}

/* Largest |x - y| over n floats; infinite when x holds a NaN (an output the
 * kernel did not write, or a wrong one). */
static double max_err(const float *x, const float *y, size_t n)
{
	double e = 0.0;

	for (size_t i = 0; i < n; ++i) {
		double d = fabs((double)x[i] - (double)y[i]);
		if (isnan(d))
			return INFINITY;
		e = d > e ? d : e;
	}
	return e;
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

/* The next state of a 64-bit LCG; its high bits are the random ones. */
static uint64_t rng_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s;
}

/* Uniform floats in [-1, 1) from the LCG. */
static void fill(float *x, size_t n, uint64_t *s)
{
	for (size_t i = 0; i < n; ++i)
		x[i] = (float)((double)(rng_next(s) >> 40) * 0x1p-23 - 1.0);
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

/* "h8 dk64 s512 causal", "decode h32 dk128 q1 kv2048 f16kv". */
static void label(char *buf, size_t size, const struct shape *sh)
{
	const struct mha_attn *a = &sh->attn;
	const size_t nb = batch_of(sh);
	int n = snprintf(buf, size, "%sh%zu", sh->seq_q == 1 ? "decode " : "",
	                 a->h);

	if (a->kv_heads != a->h)
		n += snprintf(buf + n, size - (size_t)n, " kv%zu", a->kv_heads);
	n += snprintf(buf + n, size - (size_t)n, " dk%zu", a->dk);
	if (a->dv != a->dk)
		n += snprintf(buf + n, size - (size_t)n, " dv%zu", a->dv);
	if (sh->seq_q == sh->seq_kv)
		n += snprintf(buf + n, size - (size_t)n, " s%zu", sh->seq_q);
	else
		n += snprintf(buf + n, size - (size_t)n, " q%zu kv%zu",
		              sh->seq_q, sh->seq_kv);
	if (a->mask & MHA_MASK_CAUSAL)
		n += snprintf(buf + n, size - (size_t)n, " causal");
	if (a->mask & MHA_MASK_BIAS)
		n += snprintf(buf + n, size - (size_t)n, " bias");
	if (a->mask & MHA_MASK_BOOL)
		n += snprintf(buf + n, size - (size_t)n, " bool");
	if (a->mask & MHA_MASK_KEYS)
		n += snprintf(buf + n, size - (size_t)n, " keys");
	if (a->varlen)
		n += snprintf(buf + n, size - (size_t)n, " varlen%s",
		              a->varlen == MHA_VARLEN_PACKED ? "packed" : "");
	if (a->mask_dims)
		n += snprintf(buf + n, size - (size_t)n, " dims%s%s",
		              a->mask_dims & MHA_DIMS_BATCH ? "b" : "",
		              a->mask_dims & MHA_DIMS_HEAD ? "h" : "");
	if (a->dtype)
		n += snprintf(buf + n, size - (size_t)n, " %s",
		              a->dtype == MHA_DTYPE_F16 ? "f16" : "bf16");
	if (a->kv_dtype && a->kv_dtype != a->dtype)
		n += snprintf(buf + n, size - (size_t)n, " %skv",
		              a->kv_dtype == MHA_DTYPE_F16 ? "f16" :
		              a->kv_dtype == MHA_DTYPE_BF16 ? "bf16" : "q8");
	if (nb > 1)
		snprintf(buf + n, size - (size_t)n, " batch%zu", nb);
}

/* Useful flops: 2 (dk + dv) per head and visible (query, key) pair. */
static double useful_flops(const struct shape *sh)
{
	double pairs = 0.0;

	for (size_t i = 0; i < sh->seq_q; ++i) {
		size_t lo, end = mha_ref_visible(&sh->attn, i, sh->seq_q,
		                                 sh->seq_kv, &lo);
		pairs += end > lo ? (double)(end - lo) : 0.0;
	}
	return 2.0 * (double)(sh->attn.dk + sh->attn.dv) *
	       (double)sh->attn.h * pairs * (double)batch_of(sh);
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

/* Median single-core FMA GFLOP/s, after WARM_UP seconds of warm-up (the
 * core takes a while to reach its full clock). */
static double measure_peak(void)
{
	double (*fma)(void) = BENCH_WIDTH == 16 ? bench_fma512_gflops
	                                        : bench_fma_gflops;
	double g[PEAK_RUNS], t0 = mha_now();

	while (mha_now() - t0 < WARM_UP)
		fma();
	for (int r = 0; r < PEAK_RUNS; ++r)
		g[r] = fma();
	return mha_median(g, PEAK_RUNS);
}

/* Median 1-core read GB/s over n floats (rounded up to 64), read again and
 * again like a decode kernel reads K and V: the same bytes, warm the same
 * way.  A large last-level cache holds them, so this is the bandwidth a
 * decode kernel can reach, which the 256 MiB figure may not be.  0 when out
 * of memory. */
static double measure_bandwidth_of(size_t n)
{
	double g[PEAK_RUNS];
	float *a, sink = 0.0f;

	n = (n + 63) / 64 * 64;
	a = mha_alloc(n);
	if (!a)
		return 0.0;
	for (size_t i = 0; i < n; ++i)
		a[i] = 1.0f;
	bench_read_gbs(a, n, &sink);
	for (int r = 0; r < PEAK_RUNS; ++r)
		g[r] = bench_read_gbs(a, n, &sink);
	mha_free(a);
	return sink == (float)n ? mha_median(g, PEAK_RUNS) : 0.0;
}

/* Median single-core read GB/s over a 256 MiB array, after one warm-up. */
static double measure_bandwidth(void)
{
	return measure_bandwidth_of(BW_FLOATS);
}

/* Call the job once into the poisoned, guarded output and compare with ref;
 * exit when it differs or wrote outside its output.  Seconds taken. */
static double check(const struct job *j, struct mha_guarded *out,
                    const float *ref, const char *what, struct result *r)
{
	double t, err;

	mha_guarded_poison(out);
	t = run_once(j);
	/* --dtype: the n 16-bit outputs at the start as floats, last first
	 * (float i overwrites 16-bit elements 2i and 2i + 1, already read) */
	for (size_t i = out->n; j->impl == KERNEL && j->sh->attn.dtype && i-- > 0;)
		out->data[i] = (float)mha_ref_elem(j->sh->attn.dtype, out->data, i);
	err = mha_guarded_intact(out) ? max_err(out->data, ref, out->n)
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

	r->t1 = median_time(j, runs_for(t), -1.0);
#ifdef _OPENMP
	fprintf(stderr, " kernel-2T");
	sched_setaffinity(0, sizeof all_cpus, &all_cpus);
	omp_set_num_threads(2);
	t = check(j, out, ref, "the kernel on 2 threads", r);
	r->t2 = median_time(j, runs_for(t), -1.0);
	omp_set_num_threads(1);
	mha_pin_cpu(0);
#endif
}

/* Every column of one shape; progress on stderr.  -1 when out of memory
 * or for a mask the benchmark does not pass arguments for. */
static int measure_shape(const struct shape *sh, struct result *r,
                         size_t index)
{
	const struct mha_attn *a = &sh->attn;
	const size_t batch = batch_of(sh);
	size_t nq = batch * sh->seq_q * a->h * a->dk;
	size_t nk = batch * sh->seq_kv * a->kv_heads * a->dk;
	size_t nv = batch * sh->seq_kv * a->kv_heads * a->dv;
	size_t no = batch * sh->seq_q * a->h * a->dv;
	float *q = mha_alloc(nq), *k = mha_alloc(nk), *v = mha_alloc(nv);
	float *ref = mha_alloc(no), *s = mha_alloc(sh->seq_q * sh->seq_kv);
	/* the bias's and boolean mask's planes (batch 1) */
	size_t nb = ((a->mask_dims & MHA_DIMS_HEAD) ? a->h : 1) * sh->seq_q *
	            sh->seq_kv;
	float *bias = a->mask & MHA_MASK_BIAS ? mha_alloc(nb) : NULL;
	uint8_t *bm = a->mask & MHA_MASK_BOOL ? malloc(nb) : NULL;
	uint8_t *km = a->mask & MHA_MASK_KEYS ? malloc(sh->seq_kv) : NULL;
	struct mha_guarded out = {0};
	/* --kv-dtype: k and v as stored, fewer bytes */
	const size_t kvbytes = mha_kv_bytes(a->kv_dtype, nk) +
	                       mha_kv_bytes(a->kv_dtype, nv);
	void *k16 = a->kv_dtype ? malloc(mha_kv_bytes(a->kv_dtype, nk) + 64) : NULL;
	void *v16 = a->kv_dtype ? malloc(mha_kv_bytes(a->kv_dtype, nv) + 64) : NULL;
	void *q16 = a->dtype ? malloc(mha_kv_bytes(a->dtype, nq) + 64) : NULL;
	struct job j = {sh, batch, REFERENCE, q, k, v, k, v, q, ref, s, bias, bm,
	                km};
	uint64_t seed = 0x6d686167656eull + index;
	double tref, vmax = 0.0;

	if (a->mask & ~(unsigned)(MHA_MASK_CAUSAL | MHA_MASK_BIAS |
	                          MHA_MASK_BOOL | MHA_MASK_KEYS)) {
		fprintf(stderr, "bench: %s: only masks causal, bias, bool and keys "
		        "are benchmarked\n", sh->name);
		return -1;
	}
	if (batch > 1 && ((a->mask & ~(unsigned)MHA_MASK_CAUSAL) || a->varlen)) {
		fprintf(stderr, "bench: %s: a batch of %zu is benchmarked only "
		        "with a causal mask or none, fixed lengths\n", sh->name, batch);
		return -1;
	}
	if (!q || !k || !v || !ref || !s || mha_guarded_init(&out, no) ||
	    ((a->mask & MHA_MASK_BIAS) && !bias) ||
	    ((a->mask & MHA_MASK_BOOL) && !bm) ||
	    ((a->mask & MHA_MASK_KEYS) && !km) ||
	    (a->kv_dtype && (!k16 || !v16)) || (a->dtype && !q16)) {
		fprintf(stderr, "bench: out of memory\n");
		return -1;
	}
	label(r->label, sizeof r->label, sh);
	r->flops = useful_flops(sh);
	r->bytes = (double)kvbytes;
	r->build = find_build(sh->name);
	fill(q, nq, &seed);
	fill(k, nk, &seed);
	fill(v, nv, &seed);
	if (a->kv_dtype) {
		mha_kv_store_back(a->kv_dtype, k, k16, nk);
		mha_kv_store_back(a->kv_dtype, v, v16, nv);
		j.kx = k16;
		j.vx = v16;
	}
	if (a->dtype) {
		mha_kv_store_back(a->dtype, q, q16, nq);
		j.qx = q16;
	}
	if (bias)
		fill(bias, nb, &seed);
	/* the boolean and key masks hide about one key in eight: the same
	 * blocks to compute as without them */
	for (size_t i = 0; bm && i < nb; ++i)
		bm[i] = (rng_next(&seed) >> 40 & 7) != 0;
	for (size_t j = 0; km && j < sh->seq_kv; ++j)
		km[j] = (rng_next(&seed) >> 40 & 7) != 0;
	for (size_t i = 0; i < nv; ++i)
		vmax = fmax(vmax, fabs((double)v[i]));
	r->tol = 1e-4 * vmax;
	/* --dtype: and an ulp of the 16-bit outputs */
	if (a->dtype)
		r->tol += vmax * (a->dtype == MHA_DTYPE_F16 ? 0x1p-10 : 0x1p-7);

	fprintf(stderr, "bench: [%zu/%zu] %s (%s): reference", index + 1,
	        NSHAPES, r->label, sh->name);
	tref = run_once(&j);
	fprintf(stderr, " kernel-1T");
	j.impl = KERNEL;
	j.out = out.data;
	measure_kernel(&j, &out, ref, r);

	fprintf(stderr, " OpenBLAS");
	j.impl = OPENBLAS;
	r->tblas = median_time(&j, runs_for(check(&j, &out, ref,
	                       "the OpenBLAS baseline", r)), -1.0);

	if (sh->seq_q == 1) {
		fprintf(stderr, " bandwidth");
		r->bw = measure_bandwidth_of(kvbytes / sizeof(float));
	}
	r->ref_runs = tref > REF_SLOW ? REF_FEW : MIN_RUNS;
	fprintf(stderr, " reference-x%zu\n", r->ref_runs);
	j.impl = REFERENCE;
	j.out = ref;
	/* a slow reference's check call counts as a run; else it warmed up */
	r->tref = median_time(&j, r->ref_runs, tref > REF_SLOW ? tref : -1.0);

	mha_free(q);
	mha_free(k);
	mha_free(v);
	mha_free(ref);
	mha_free(s);
	mha_free(bias);
	free(bm);
	free(km);
	free(k16);
	free(v16);
	free(q16);
	mha_guarded_free(&out);
	return 0;
}

/* The "%peak" cell: % of the FMA peak, or for decode of read bandwidth. */
static void pct_cell(char *buf, size_t size, const struct shape *sh,
                     const struct result *r, const struct machine *m)
{
	if (sh->seq_q == 1)
		snprintf(buf, size, "%.1f%% bw",
		         100.0 * r->bytes / r->t1 * 1e-9 / r->bw);
	else
		snprintf(buf, size, "%.1f%%",
		         100.0 * r->flops / r->t1 * 1e-9 / m->peak);
}

/* The table on stdout. */
static void print_table(const struct result *res, const struct machine *m)
{
	int omp = 0;

#ifdef _OPENMP
	omp = 1;
#endif
	printf("\nmhagen bench: %s, %ld CPUs; 1 core: %s FMA peak %.1f GFLOP/s "
	       "(%.1f after the kernels), read bandwidth %.1f GB/s (medians "
	       "of %d, this run)\n", mha_cpu_model(),
	       sysconf(_SC_NPROCESSORS_ONLN), BENCH_TARGET, m->peak, m->peak_end,
	       m->bw,
	       PEAK_RUNS);
	printf("kernels: mhagen --target %s%s, clang -O2 %s%s; "
	       "%s, core %s, 1 thread\n\n", BENCH_TARGET,
	       omp ? " --threads openmp" : "", BENCH_KFLAGS,
	       omp ? " -fopenmp" : "", openblas_get_config(),
	       openblas_get_corename());
	printf("%-27s %9s %9s %5s %8s %9s %8s %7s %8s %8s %9s %7s\n", "shape",
	       "ms 1T", "ms 2T", "2T x", "GFLOP/s", "%peak", "x ref", "x BLAS",
	       "max|err|", "BLAS err", "compile s", "obj KiB");
	for (size_t i = 0; i < NSHAPES; ++i) {
		const struct result *r = &res[i];
		char t2[16] = "-", sp[16] = "-", pct[24], xr[16];
		if (r->t2 > 0.0) {
			snprintf(t2, sizeof t2, "%.3f", r->t2 * 1e3);
			snprintf(sp, sizeof sp, "%.2f", r->t1 / r->t2);
		}
		pct_cell(pct, sizeof pct, &shapes[i], r, m);
		snprintf(xr, sizeof xr, "%.1f%s", r->tref / r->t1,
		         r->ref_runs < MIN_RUNS ? "*" : "");
		printf("%-27s %9.3f %9s %5s %8.2f %9s %8s %7.2f %8.1e %8.1e "
		       "%9.2f %7.1f\n", r->label, r->t1 * 1e3, t2, sp,
		       r->flops / r->t1 * 1e-9, pct, xr, r->tblas / r->t1,
		       r->err, r->err_blas, r->build ? r->build->seconds : NAN,
		       r->build ? (double)r->build->bytes / 1024.0 : NAN);
	}
	printf("\nms: median of >= %d runs after a warm-up; 1T pinned to CPU 0, "
	       "2T two OpenMP threads on all CPUs (\"-\": kernels built without "
	       "OpenMP).\n", MIN_RUNS);
	printf("GFLOP/s: useful flops (4 h dk per visible query-key pair) per "
	       "second at 1T; %%peak of the FMA peak, \"bw\": K+V bytes read "
	       "per second, %% of the 1-core read bandwidth over as many bytes "
	       "(measured after the kernel; a large cache may hold them).\n");
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
static void warn_shared(const struct machine *m)
{
	int moved = fabs(m->peak_end - m->peak) > 0.05 * m->peak;

	if (moved)
		printf("warning: the FMA peak moved from %.1f to %.1f GFLOP/s "
		       "during the run.\n", m->peak, m->peak_end);
	if (m->others > 0.05)
		printf("warning: other processes kept %.2f CPUs busy on "
		       "average during the run.\n", m->others);
	if (moved || m->others > 0.05)
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
 * before and after the kernels) repeated on each. */
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
	      "fma_peak_gflops,fma_peak_end_gflops,read_bw_gbs,other_cpus,openmp,batch\n", f);
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
		fprintf(f, ",%.4g", 100.0 * r->flops / r->t1 * 1e-9 / m->peak);
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
		fprintf(f, ",\"%s\",%.4g,%.4g,%.4g,%.3f,%d,%zu\n", mha_cpu_model(),
		        m->peak, m->peak_end, m->bw, m->others, omp, batch_of(sh));
	}
	return fclose(f) ? -1 : 0;
}

int main(int argc, char **argv)
{
	static struct result res[NSHAPES];
	struct machine m;
	double t0 = mha_now(), others = others_seconds();

	if (argc != 2) {
		fprintf(stderr, "usage: bench CSVFILE\n");
		return 2;
	}
	openblas_set_num_threads(1);
	sched_getaffinity(0, sizeof all_cpus, &all_cpus);
	start_threads();
	mha_pin_cpu(0);

	fprintf(stderr, "bench: FMA peak and read bandwidth of CPU 0\n");
	m.peak = measure_peak();
	m.bw = measure_bandwidth();
	if (!(m.peak > 0.0) || !(m.bw > 0.0)) {
		fprintf(stderr, "bench: peak measurement failed\n");
		return 1;
	}
	for (size_t i = 0; i < NSHAPES; ++i)
		if (measure_shape(&shapes[i], &res[i], i))
			return 1;
	fprintf(stderr, "bench: FMA peak of CPU 0 again\n");
	m.peak_end = measure_peak();
	m.others = others < 0.0 ? 0.0 : (others_seconds() - others) /
	                                (mha_now() - t0);
	print_table(res, &m);
	print_pairs(res);
	warn_shared(&m);
	if (write_csv(argv[1], res, &m))
		return 1;
	printf("wrote %s\n", argv[1]);
	return 0;
}
