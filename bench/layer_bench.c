/* The layer (mhagen --embed 768 --h 12, --embed 1024 --h 16) against
 * OpenBLAS, one thread: each projection GEMM of the generated layer against
 * cblas_sgemm on the same shape, in GFLOP/s and % of this core's FMA peak
 * (bench/peak.c, peak512.c for AVX-512), and the whole forward against the
 * same layer composed from cblas_sgemm and the layer's own attention
 * kernel; with OpenMP (--threads openmp), the forward on two threads too.
 * Medians of BENCH_RUNS runs, in one process.  Compiled with the layers'
 * target flags; includes the generated layers (their static GEMMs and
 * attention are reached from here).  Never a test. */
#define _GNU_SOURCE
#include <cblas.h>
#include <sched.h>
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

#define BENCH_RUNS 21

static cpu_set_t all_cpus; /* the affinity the bench started with */

static float *buf(size_t n)
{
	float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);

	if (!p)
		abort();
	for (size_t i = 0; i < n; ++i)
		p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
	return p;
}

typedef void gemm_fn(size_t m, const float *restrict a, size_t lda,
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
		in_proj(s, x, E, packed, y, 3 * E);
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
			out_proj(s, z, E, packed + (size_t)3 * E * E + 3 * E, out, E);
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
	return 0;
}
