/* The main job's last step: check the default kernel (h 8, dk 64, generated
 * for this machine) against the reference and time both, batch 1, for a few
 * sequence lengths.  Prints error, tolerance and median times. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../runtime/mha_buf.h"
#include "../runtime/mha_cpu.h"
#include "../runtime/mha_ref.h"
#include "../runtime/mha_time.h"
#include "kernel.h"

#define H 8
#define DK 64
#define RUNS 11

typedef void attn_fn(const struct mha_args *x);

static const struct mha_attn attn = {.h = H, .kv_heads = H, .dk = DK,
                                     .dv = DK, .align = MHA_ALIGN_BOTTOM_RIGHT,
                                     .layout = MHA_LAYOUT_BSHD, .scale = 0.125};

static void kernel(const struct mha_args *x)
{
	mha_call(mha_demo, NULL, x);
}

static void reference(const struct mha_args *x)
{
	mha_ref_attention(&attn, x);
}

/* Median seconds of RUNS calls, after one warm-up call. */
static double timed(attn_fn *f, const float *q, const float *k,
                    const float *v, float *o, size_t seq)
{
	const struct mha_args x = {.q = q, .k = k, .v = v, .out = o, .batch = 1,
	                           .seq_q = seq, .seq_kv = seq};
	double t[RUNS];

	f(&x);
	for (int r = 0; r < RUNS; ++r) {
		double t0 = mha_now();
		f(&x);
		t[r] = mha_now() - t0;
	}
	return mha_median(t, RUNS);
}

int main(void)
{
	static const size_t seqs[] = {128, 512};
	int bad = 0;

	mha_pin_cpu(0);
	printf("mhagen demo: kernel mha_demo (h %d, dk %d, target %s), %s\n",
	       H, DK, DEMO_TARGET, mha_cpu_model());
	printf("%6s %12s %10s %12s %12s %9s %9s\n", "seq", "max|err|", "tol",
	       "kernel ms", "ref ms", "speedup", "GFLOP/s");
	for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; ++s) {
		size_t seq = seqs[s], n = seq * H * DK;
		float *q = mha_alloc(n), *k = mha_alloc(n), *v = mha_alloc(n);
		float *o = mha_alloc(n), *r = mha_alloc(n);
		double err = 0.0, tol, tk, tr;
		unsigned x = 12345;
		if (!q || !k || !v || !o || !r) {
			fprintf(stderr, "demo: out of memory\n");
			return 1;
		}
		for (size_t i = 0; i < n; ++i) {
			x = x * 1103515245u + 12345u;
			q[i] = (float)((x >> 8) & 0xffff) / 32768.0f - 1.0f;
			x = x * 1103515245u + 12345u;
			k[i] = (float)((x >> 8) & 0xffff) / 32768.0f - 1.0f;
			x = x * 1103515245u + 12345u;
			v[i] = (float)((x >> 8) & 0xffff) / 32768.0f - 1.0f;
		}
		tk = timed(kernel, q, k, v, o, seq);
		tr = timed(reference, q, k, v, r, seq);
		for (size_t i = 0; i < n; ++i)
			err = fmax(err, fabs((double)o[i] - (double)r[i]));
		tol = 1e-5 + 4.0 * 8.0 * 0x1p-24 * DK * 0.125; /* as tests/check.c */
		bad |= !(err <= tol);
		printf("%6zu %12.3g %10.3g %12.4f %12.4f %8.1fx %9.2f\n", seq, err,
		       tol, tk * 1e3, tr * 1e3, tr / tk,
		       4.0 * H * DK * (double)seq * (double)seq / tk * 1e-9);
		mha_free(q);
		mha_free(k);
		mha_free(v);
		mha_free(o);
		mha_free(r);
	}
	printf("%s\n", bad ? "FAIL: kernel differs from the reference"
	                   : "ok: kernel matches the reference");
	return bad;
}
