/* One shape's inputs and calls, shared by make bench and make bench-ab
 * (bench/job.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../runtime/mha_buf.h"
#include "../runtime/mha_time.h"
#include "bench.h"
#include "job.h"

#define WARM_UP 0.3 /* seconds of FMA loop before measuring the peak */

const char *bench_prog = "bench";

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

void job_inputs_free(struct inputs *in)
{
	mha_free(in->q);
	mha_free(in->k);
	mha_free(in->v);
	mha_free(in->ref);
	mha_free(in->s);
	mha_free(in->bias);
	free(in->bm);
	free(in->km);
	free(in->k16);
	free(in->v16);
	free(in->q16);
	*in = (struct inputs){0};
}

int job_inputs(struct inputs *in, struct job *j, const struct shape *sh,
               size_t batch, uint64_t seed)
{
	const struct mha_attn *a = &sh->attn;
	const size_t nq = batch * sh->seq_q * a->h * a->dk;
	const size_t nk = batch * sh->seq_kv * a->kv_heads * a->dk;
	const size_t nv = batch * sh->seq_kv * a->kv_heads * a->dv;
	const size_t no = batch * sh->seq_q * a->h * a->dv;
	/* the bias's and boolean mask's planes (batch 1) */
	const size_t nb = ((a->mask_dims & MHA_DIMS_HEAD) ? a->h : 1) *
	                  sh->seq_q * sh->seq_kv;
	double vmax = 0.0;

	*in = (struct inputs){0};
	if (a->mask & ~(unsigned)(MHA_MASK_CAUSAL | MHA_MASK_BIAS |
	                          MHA_MASK_BOOL | MHA_MASK_KEYS)) {
		fprintf(stderr, "%s: %s: only masks causal, bias, bool and keys "
		        "are benchmarked\n", bench_prog, sh->name);
		return -1;
	}
	if (a->alibi == MHA_ALIBI_SLOPES || a->sinks || a->packed) {
		fprintf(stderr, "%s: %s: kernels reading ALiBi slopes, sinks or "
		        "packed inputs are not benchmarked\n", bench_prog, sh->name);
		return -1;
	}
	if (batch > 1 && ((a->mask & ~(unsigned)MHA_MASK_CAUSAL) || a->varlen)) {
		fprintf(stderr, "%s: %s: a batch of %zu is benchmarked only "
		        "with a causal mask or none, fixed lengths\n", bench_prog,
		        sh->name, batch);
		return -1;
	}
	in->q = mha_alloc(nq);
	in->k = mha_alloc(nk);
	in->v = mha_alloc(nv);
	in->ref = mha_alloc(no);
	in->s = mha_alloc(sh->seq_q * sh->seq_kv);
	in->bias = a->mask & MHA_MASK_BIAS ? mha_alloc(nb) : NULL;
	in->bm = a->mask & MHA_MASK_BOOL ? malloc(nb) : NULL;
	in->km = a->mask & MHA_MASK_KEYS ? malloc(sh->seq_kv) : NULL;
	/* --kv-dtype: k and v as stored, fewer bytes; --dtype: q too */
	in->k16 = a->kv_dtype ? malloc(mha_kv_bytes(a->kv_dtype, nk) + 64) : NULL;
	in->v16 = a->kv_dtype ? malloc(mha_kv_bytes(a->kv_dtype, nv) + 64) : NULL;
	in->q16 = a->dtype ? malloc(mha_kv_bytes(a->dtype, nq) + 64) : NULL;
	in->no = no;
	in->kvbytes = mha_kv_bytes(a->kv_dtype, nk) + mha_kv_bytes(a->kv_dtype, nv);
	if (!in->q || !in->k || !in->v || !in->ref || !in->s ||
	    ((a->mask & MHA_MASK_BIAS) && !in->bias) ||
	    ((a->mask & MHA_MASK_BOOL) && !in->bm) ||
	    ((a->mask & MHA_MASK_KEYS) && !in->km) ||
	    (a->kv_dtype && (!in->k16 || !in->v16)) || (a->dtype && !in->q16)) {
		fprintf(stderr, "%s: out of memory\n", bench_prog);
		job_inputs_free(in);
		return -1;
	}
	*j = (struct job){sh, batch, REFERENCE, in->q, in->k, in->v, in->k,
	                  in->v, in->q, in->ref, in->s, in->bias, in->bm,
	                  in->km};
	fill(in->q, nq, &seed);
	fill(in->k, nk, &seed);
	fill(in->v, nv, &seed);
	if (a->kv_dtype) {
		mha_kv_store_back(a->kv_dtype, in->k, in->k16, nk);
		mha_kv_store_back(a->kv_dtype, in->v, in->v16, nv);
		j->kx = in->k16;
		j->vx = in->v16;
	}
	if (a->dtype) {
		mha_kv_store_back(a->dtype, in->q, in->q16, nq);
		j->qx = in->q16;
	}
	if (in->bias)
		fill(in->bias, nb, &seed);
	/* the boolean and key masks hide about one key in eight: the same
	 * blocks to compute as without them */
	for (size_t i = 0; in->bm && i < nb; ++i)
		in->bm[i] = (rng_next(&seed) >> 40 & 7) != 0;
	for (size_t i = 0; in->km && i < sh->seq_kv; ++i)
		in->km[i] = (rng_next(&seed) >> 40 & 7) != 0;
	for (size_t i = 0; i < nv; ++i)
		vmax = fmax(vmax, fabs((double)in->v[i]));
	in->tol = 1e-4 * vmax;
	/* --dtype: and an ulp of the 16-bit outputs */
	if (a->dtype)
		in->tol += vmax * (a->dtype == MHA_DTYPE_F16 ? 0x1p-10 : 0x1p-7);
	return 0;
}

double job_run(const struct job *j)
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
			fprintf(stderr, "\n%s: no OpenBLAS baseline for "
			        "%s (its mask or layout)\n", bench_prog, sh->name);
			exit(1);
		}
		break;
	}
	return mha_now() - t0;
}

void job_out_floats(const struct job *j, float *out, size_t n)
{
	/* float i overwrites 16-bit elements 2i and 2i + 1, already read */
	for (size_t i = n; j->impl == KERNEL && j->sh->attn.dtype && i-- > 0;)
		out[i] = (float)mha_ref_elem(j->sh->attn.dtype, out, i);
}

double job_max_err(const float *x, const float *y, size_t n)
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

void job_label(char *buf, size_t size, const struct shape *sh, size_t batch)
{
	const struct mha_attn *a = &sh->attn;
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
	if (batch > 1)
		snprintf(buf + n, size - (size_t)n, " batch%zu", batch);
}

double job_flops(const struct shape *sh, size_t batch)
{
	double pairs = 0.0;

	for (size_t i = 0; i < sh->seq_q; ++i) {
		size_t lo, end = mha_ref_visible(&sh->attn, i, sh->seq_q,
		                                 sh->seq_kv, &lo);
		pairs += end > lo ? (double)(end - lo) : 0.0;
	}
	return 2.0 * (double)(sh->attn.dk + sh->attn.dv) *
	       (double)sh->attn.h * pairs * (double)batch;
}

double job_fma(int width)
{
	return width == 16 ? bench_fma512_gflops() : bench_fma_gflops();
}

double job_peak(int width, double (*clock)(void))
{
	double g[BENCH_PEAK_RUNS], t0 = mha_now();

	while (mha_now() - t0 < WARM_UP)
		job_fma(width);
	for (int r = 0; r < BENCH_PEAK_RUNS; ++r) {
		const double w = mha_now(), c = clock ? clock() : 0.0;

		g[r] = job_fma(width);
		/* the loop times itself by the wall clock: rescaled to clock's
		 * time over the same call */
		if (clock)
			g[r] *= (mha_now() - w) / (clock() - c);
	}
	return mha_median(g, BENCH_PEAK_RUNS);
}
