/* The layer (mhagen --embed 768 --h 12, --embed 1024 --h 16) against
 * OpenBLAS, one thread: each projection GEMM of the generated layer against
 * cblas_sgemm on the same shape, in GFLOP/s and % of this core's FMA peak
 * (bench/peak.c, peak512.c for AVX-512), and the whole forward against the
 * same layer composed from cblas_sgemm and the layer's own attention
 * kernel; with OpenMP (--threads openmp), the forward on two threads too.
 * A decoder step (--kv-cache) against a plain read of the bytes it reads.
 * Medians of BENCH_RUNS runs, in one process.  Compiled with the layers'
 * target flags; includes the generated layers (their static GEMMs and
 * attention are reached from here).  Never a test. */
#define _GNU_SOURCE
#include <cblas.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/mha_time.h"
#include "bench.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "layer_l1.c"
#include "layer_l2.c"
#include "layer_l3.c"
#include "layer_l4.c"
#include "layer_l5.c"
#include "layer_l6.c"

#define BENCH_RUNS 21

static cpu_set_t all_cpus; /* the affinity the bench started with */

/* The GEMMs' settings: no host parallel-for (this thread, or OpenMP's) */
static const struct mha_layer_args one;

static float *buf(size_t n)
{
	float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);

	if (!p)
		abort();
	for (size_t i = 0; i < n; ++i)
		p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
	return p;
}

typedef void gemm_fn(const struct mha_layer_args *h, size_t m,
                     const float *restrict a, size_t lda,
                     const float *restrict w, float *restrict c, size_t ldc);
typedef void attn_fn(const struct mha_args *restrict a);

/* One layer of s rows: its GEMMs and forward against OpenBLAS's. */
static void bench_layer(const char *tag, size_t E, size_t s, gemm_fn *in_proj,
                        gemm_fn *out_proj, mha_layer_fn *forward,
                        mha_layer_pack_fn *pack, mha_layer_size_fn *packed_floats,
                        mha_layer_workspace_fn *workspace, attn_fn *attn,
                        size_t attn_ws)
{
	float *x = buf(s * E), *y = buf(s * 3 * E), *z = buf(s * E);
	float *w_in = buf(3 * E * E), *b_in = buf(3 * E), *w_o = buf(E * E);
	float *b_o = buf(E), *packed = buf(packed_floats());
	float *out = buf(s * E), *o = buf(s * E);
	const struct mha_layer_params p = {.in_proj_weight = w_in,
		.in_proj_bias = b_in, .out_proj_weight = w_o, .out_proj_bias = b_o};
	struct mha_layer_args a = {.query = x, .out = out, .batch = 1,
		.seq_q = s, .seq_kv = s, .packed = packed};
	size_t ws;
	unsigned char *wsp, *aws = malloc(attn_ws);
	double t[4][BENCH_RUNS], pk[BENCH_RUNS], peak;
	const double f_in = 2.0 * s * E * 3 * E, f_out = 2.0 * s * E * E;
	const double f_attn = 4.0 * s * s * E;

	pack(packed, &p);
	ws = workspace(&a);
	wsp = malloc(ws);
	if (!wsp || !aws)
		abort();
	a.workspace = wsp;
	a.workspace_size = ws;
	for (int r = -2; r < BENCH_RUNS; ++r) {
		double t0 = mha_now(), t1, t2, t3, t4;
		in_proj(&one, s, x, E, packed, y, 3 * E);
		t1 = mha_now();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)s, 3 * E, E,
		            1.0f, x, E, w_in, E, 0.0f, y, 3 * E);
		t2 = mha_now();
		forward(&a);
		t3 = mha_now();
		{
			/* composed: sgemm with the bias as beta's C, our attention
			 * kernel on the packed rows, sgemm again */
			struct mha_args m = {.q = y, .out = o, .batch = 1, .seq_q = s,
				.seq_kv = s, .workspace = aws, .workspace_size = attn_ws};
			for (size_t i = 0; i < s; ++i)
				memcpy(y + i * 3 * E, b_in, 3 * E * sizeof *y);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)s,
			            3 * E, E, 1.0f, x, E, w_in, E, 1.0f, y, 3 * E);
			attn(&m);
			for (size_t i = 0; i < s; ++i)
				memcpy(z + i * E, b_o, E * sizeof *z);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)s, E,
			            E, 1.0f, o, E, w_o, E, 1.0f, z, E);
		}
		t4 = mha_now();
		if (r >= 0) {
			/* the peak sampled between the runs, under the same load */
#if BENCH_WIDTH == 16
			pk[r] = bench_fma512_gflops();
#else
			pk[r] = bench_fma_gflops();
#endif
			t[0][r] = t1 - t0;
			t[1][r] = t2 - t1;
			t[2][r] = t3 - t2;
			t[3][r] = t4 - t3;
		}
	}
	peak = mha_median(pk, BENCH_RUNS);
	printf("%s s%zu: FMA peak (%s, this core, sampled between the runs) "
	       "%.1f GFLOP/s\n", tag, s, BENCH_TARGET, peak);
	{
		const double ours = mha_median(t[0], BENCH_RUNS);
		const double blas = mha_median(t[1], BENCH_RUNS);
		const double fw = mha_median(t[2], BENCH_RUNS);
		const double comp = mha_median(t[3], BENCH_RUNS);
		double to[BENCH_RUNS], tb[BENCH_RUNS];
		for (int r = 0; r < BENCH_RUNS; ++r) {
			double t0 = mha_now(), t1;
			/* the output projection's panels follow the in-projection's
			 * 3E x E and 3E bias floats (E a multiple of the panels) */
			out_proj(&one, s, z, E, packed + (size_t)3 * E * E + 3 * E, out, E);
			t1 = mha_now();
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)s, E, E,
			            1.0f, z, E, w_o, E, 0.0f, o, E);
			to[r] = t1 - t0;
			tb[r] = mha_now() - t1;
		}
		printf("%s in_proj  s%-4zu %zux%zu: ours %.3f ms %.1f GFLOP/s %.1f%% of peak | "
		       "sgemm %.3f ms %.1f GFLOP/s %.1f%% | ours/sgemm speed %.2fx\n",
		       tag, s, 3 * E, E, ours * 1e3, f_in / ours * 1e-9,
		       100.0 * f_in / ours * 1e-9 / peak, blas * 1e3,
		       f_in / blas * 1e-9, 100.0 * f_in / blas * 1e-9 / peak,
		       blas / ours);
		printf("%s out_proj s%-4zu %zux%zu:  ours %.3f ms %.1f GFLOP/s %.1f%% of peak | "
		       "sgemm %.3f ms %.1f GFLOP/s %.1f%% | ours/sgemm speed %.2fx\n",
		       tag, s, E, E, mha_median(to, BENCH_RUNS) * 1e3,
		       f_out / mha_median(to, BENCH_RUNS) * 1e-9,
		       100.0 * f_out / mha_median(to, BENCH_RUNS) * 1e-9 / peak,
		       mha_median(tb, BENCH_RUNS) * 1e3,
		       f_out / mha_median(tb, BENCH_RUNS) * 1e-9,
		       100.0 * f_out / mha_median(tb, BENCH_RUNS) * 1e-9 / peak,
		       mha_median(tb, BENCH_RUNS) / mha_median(to, BENCH_RUNS));
		printf("%s forward  s%-4zu: ours %.3f ms (%.1f GFLOP/s) | sgemm + our "
		       "attention + sgemm %.3f ms | %.2fx\n", tag, s, fw * 1e3,
		       (f_in + f_out + f_attn) / fw * 1e-9, comp * 1e3, comp / fw);
#ifdef _OPENMP
		/* two threads over every CPU, then back to one, pinned */
		sched_setaffinity(0, sizeof all_cpus, &all_cpus);
		omp_set_num_threads(2);
		forward(&a);
		for (int r = 0; r < BENCH_RUNS; ++r) {
			double t0 = mha_now();
			forward(&a);
			to[r] = mha_now() - t0;
		}
		omp_set_num_threads(1);
		mha_pin_cpu(0);
		printf("%s forward  s%-4zu on 2 threads: %.3f ms | %.2fx the 1-thread "
		       "forward\n", tag, s, mha_median(to, BENCH_RUNS) * 1e3,
		       fw / mha_median(to, BENCH_RUNS));
#endif
	}
	free(x); free(y); free(z); free(w_in); free(b_in); free(w_o); free(b_o);
	free(packed); free(out); free(o); free(wsp); free(aws);
}

/* A step's buffers: its packed weights, input, output and caches. */
struct step {
	float *x, *y, *packed;
	void *kc, *vc;
	size_t es, bytes; /* the caches' element bytes; the bytes a step reads */
	int32_t len;
	struct mha_layer_args a;
};

/* Layer (pack, packed_floats) of embed E, KE floats of k and v a row, over
 * a cache of M positions of es bytes each, M - 1 of them filled. */
static void step_init(struct step *s, size_t E, size_t KE, size_t M, size_t es,
                      mha_layer_pack_fn *pack, mha_layer_size_fn *packed_floats)
{
	float *w_in = buf((E + 2 * KE) * E), *b_in = buf(E + 2 * KE);
	float *w_o = buf(E * E), *b_o = buf(E);
	const struct mha_layer_params p = {.in_proj_weight = w_in,
		.in_proj_bias = b_in, .out_proj_weight = w_o, .out_proj_bias = b_o};

	s->x = buf(E);
	s->y = buf(E);
	s->packed = buf(packed_floats());
	s->kc = malloc(M * KE * es);
	s->vc = malloc(M * KE * es);
	if (!s->kc || !s->vc)
		abort();
	/* written, so that the reads are of memory (not of the zero page):
	 * floats in [-0.5, 0.5), or f16 values in [0.125, 0.25) */
	for (size_t i = 0; i < M * KE; ++i)
		if (es == 2) {
			((uint16_t *)s->kc)[i] = (uint16_t)(0x3000u | (i * 2654435761u >> 7 & 0x3ffu));
			((uint16_t *)s->vc)[i] = (uint16_t)(0x3000u | (i * 40503u >> 3 & 0x3ffu));
		} else {
			((float *)s->kc)[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
			((float *)s->vc)[i] = (float)((i * 40503u) % 1000) / 1000.0f - 0.5f;
		}
	pack(s->packed, &p);
	free(w_in); free(b_in); free(w_o); free(b_o);
	s->es = es;
	s->bytes = packed_floats() * sizeof(float) + 2 * M * KE * es;
	s->len = (int32_t)(M - 1);
	s->a = (struct mha_layer_args){.query = s->x, .out = s->y, .batch = 1,
		.seq_q = 1, .packed = s->packed, .k_cache = s->kc,
		.v_cache = s->vc, .cache_len = &s->len};
}

/* Decoder steps (--kv-cache M) with an f32 and an f16 cache, one token of
 * one sequence after M - 1 cached positions, called in turn: their times,
 * their ratio, and the GB/s of the bytes each must read (the packed
 * weights, the cache's M keys and values) against a plain read of as many
 * bytes, medians in one run. */
static void bench_steps(const char *tag, size_t E, size_t KE, size_t M,
                        mha_layer_fn *f32, mha_layer_pack_fn *pack32,
                        mha_layer_size_fn *floats32, mha_layer_fn *f16,
                        mha_layer_pack_fn *pack16, mha_layer_size_fn *floats16)
{
	struct step s[2];
	mha_layer_fn *fn[2] = {f32, f16};
	double t[2][BENCH_RUNS], r[BENCH_RUNS], ms[2], rd;
	size_t nr;
	float *plain, sink = 0.0f;

	step_init(&s[0], E, KE, M, 4, pack32, floats32);
	step_init(&s[1], E, KE, M, 2, pack16, floats16);
	nr = (s[0].bytes / sizeof(float) + 63) / 64 * 64;
	plain = buf(nr);
	fn[0](&s[0].a);
	fn[1](&s[1].a);
	for (int i = 0; i < BENCH_RUNS; ++i) {
		for (int c = 0; c < 2; ++c) {
			double t0 = mha_now();
			fn[c](&s[c].a);
			t[c][i] = mha_now() - t0;
		}
		r[i] = bench_read_gbs(plain, nr, &sink);
	}
	rd = mha_median(r, BENCH_RUNS);
	for (int c = 0; c < 2; ++c) {
		const double gbs = (double)s[c].bytes / mha_median(t[c], BENCH_RUNS) / 1e9;
		ms[c] = mha_median(t[c], BENCH_RUNS) * 1e3;
		printf("%s step, %zu cached + 1 (%s cache): %.3f ms | reads %.1f MB at "
		       "%.1f GB/s, %.0f%% of a plain read's %.1f GB/s%s\n", tag, M - 1,
		       c ? "f16" : "f32", ms[c], (double)s[c].bytes / 1e6, gbs,
		       100.0 * gbs / rd, rd, sink == 1.0f ? " " : "");
	}
	printf("%s step: the f16 cache's time %.3fx the f32 cache's\n", tag,
	       ms[1] / ms[0]);
	for (int c = 0; c < 2; ++c) {
		free(s[c].x); free(s[c].y); free(s[c].packed);
		free(s[c].kc); free(s[c].vc);
	}
	free(plain);
}

int main(void)
{
	sched_getaffinity(0, sizeof all_cpus, &all_cpus);
#ifdef _OPENMP
	/* start OpenMP's second thread while every CPU is allowed (it keeps
	 * the affinity of the moment), then one thread, pinned */
	omp_set_num_threads(2);
#pragma omp parallel
	{
		(void)omp_get_thread_num();
	}
	omp_set_num_threads(1);
#endif
	mha_pin_cpu(0);
	{
		struct mha_args m1 = {.batch = 1, .seq_q = 128, .seq_kv = 128};
		struct mha_args m2 = {.batch = 1, .seq_q = 512, .seq_kv = 512};
		bench_layer("e768 h12", 768, 128, layer_l1_gemm_768x2304,
		            layer_l1_gemm_768x768, layer_l1_forward, layer_l1_pack,
		            layer_l1_packed_floats, layer_l1_workspace,
		            layer_l1_attn_run, layer_l1_attn_scratch_bytes(&m1));
		bench_layer("e768 h12", 768, 512, layer_l2_gemm_768x2304,
		            layer_l2_gemm_768x768, layer_l2_forward, layer_l2_pack,
		            layer_l2_packed_floats, layer_l2_workspace,
		            layer_l2_attn_run, layer_l2_attn_scratch_bytes(&m2));
		bench_layer("e1024 h16", 1024, 128, layer_l3_gemm_1024x3072,
		            layer_l3_gemm_1024x1024, layer_l3_forward, layer_l3_pack,
		            layer_l3_packed_floats, layer_l3_workspace,
		            layer_l3_attn_run, layer_l3_attn_scratch_bytes(&m1));
		bench_layer("e1024 h16", 1024, 512, layer_l4_gemm_1024x3072,
		            layer_l4_gemm_1024x1024, layer_l4_forward, layer_l4_pack,
		            layer_l4_packed_floats, layer_l4_workspace,
		            layer_l4_attn_run, layer_l4_attn_scratch_bytes(&m2));
	}
	bench_steps("e4096 h32 kv8", 4096, 1024, 4096, layer_l5_forward,
	            layer_l5_pack, layer_l5_packed_floats, layer_l6_forward,
	            layer_l6_pack, layer_l6_packed_floats);
	return 0;
}
