/* The tuner's measuring program: checks one generated kernel (exported as
 * mha_tune_kernel) against the reference attention, then times it.  Built by
 * `mhagen tune` from sources embedded in mhagen, run as a child process.
 *
 * usage: harness H KV_HEADS DK DV SEQ_Q SEQ_KV MASK ALIGN LAYOUT SCALE WINDOW
 *                FIXED SECONDS PIN CACHE KV_DTYPE[,DTYPE]
 * LAYOUT is "L,P": enum mha_layout, enum mha_packed (with qkv packing the
 * keys' length is the queries'); SEQ_Q/SEQ_KV are the lengths to run at; FIXED is 1 when the kernel was
 * generated for exactly those lengths (else it is also checked at others);
 * SECONDS is about how long the timed runs may take; PIN 1 pins to CPU 0;
 * CACHE is a path prefix under which reference outputs are kept between
 * runs for the same spec (the inputs are the same every time); KV_DTYPE is
 * enum mha_dtype: keys and values stored as f32, f16, bf16 or q8 (the
 * reference reads the same stored values), DTYPE likewise q and out.
 *
 * Prints one line: "ok MEDIAN MIN MAX RUNS FLOPS" (seconds, useful flops
 * per call) with status 0, or "fail REASON" with status 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mha_buf.h"
#include "../mha_ref.h"
#include "../mha_time.h"

mha_args_fn mha_tune_kernel_args;

#define MAX_RUNS 101

static const char *cache; /* reference outputs kept as CACHE-SEED.ref */

/* splitmix64, as the tests use; a float uniform in [-1, 1). */
static float unit(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (float)((double)(z >> 11) * 0x1p-52 - 1.0);
}

/* Inputs of one call. */
struct inputs {
	size_t batch, sq, skv, nq, nk, nv, no;
	float *q, *k, *v, *bias;
	float *packed; /* with packing: q (qkv), k and v point into it */
	/* --kv-dtype: k and v as stored, 16 bits each (k, v then hold the
	 * stored values as floats) */
	void *k16, *v16;
	/* --dtype: q as stored (q then holds the stored values), and with
	 * --packed qkv the whole packed buffer */
	void *q16;
	int32_t *kv_len;
};

static void release(struct inputs *in)
{
	if (in->packed) {
		if (in->q != in->packed)
			mha_free(in->q);
		mha_free(in->packed);
	} else {
		mha_free(in->q);
		mha_free(in->k);
		mha_free(in->v);
	}
	mha_free(in->bias);
	free(in->kv_len);
	free(in->k16);
	free(in->q16);
	if (!in->packed) /* packed kv: v16 points into k16's buffer */
		free(in->v16);
}

/* The largest |x| of tensor t of in, its own heads only. */
static double tensor_max(const struct mha_attn *a, const struct inputs *in,
                         enum mha_tensor t)
{
	const float *p = t == MHA_TENSOR_Q ? in->q : t == MHA_TENSOR_K ? in->k
	               : in->v;
	const size_t seq = t == MHA_TENSOR_Q ? in->sq : in->skv;
	const size_t heads = t == MHA_TENSOR_Q ? a->h : a->kv_heads;
	const size_t d = t == MHA_TENSOR_V ? a->dv : a->dk;
	double m = 0.0;

	for (size_t b = 0; b < in->batch; ++b)
		for (size_t s = 0; s < seq; ++s)
			for (size_t h = 0; h < heads; ++h) {
				const float *r = p + mha_ref_offset(a, t, in->batch, seq,
				                                    b, s, h);
				for (size_t c = 0; c < d; ++c)
					m = fmax(m, fabs(r[c]));
			}
	return m;
}

/* Allocate and fill inputs; hot makes scores near +100 (exp overflows
 * float without the max subtraction).  0 or -1. */
static int make(struct inputs *in, const struct mha_attn *a, size_t batch,
                size_t sq, size_t skv, int hot, uint64_t seed)
{
	float h = (float)sqrt(100.0 / ((double)a->dk * a->scale));

	memset(in, 0, sizeof *in);
	if (a->packed == MHA_PACKED_QKV)
		skv = sq;
	in->batch = batch;
	in->sq = sq;
	in->skv = skv;
	in->nq = batch * sq * a->h * a->dk;
	in->nk = batch * skv * a->kv_heads * a->dk;
	in->nv = batch * skv * a->kv_heads * a->dv;
	in->no = batch * sq * a->h * a->dv;
	if (a->packed) {
		/* one buffer of packed rows, filled as q and k, v's heads after */
		size_t np = batch * skv * mha_ref_pitch(a, MHA_TENSOR_K);
		if (!(in->packed = mha_alloc(np ? np : 1)))
			return -1;
		for (size_t i = 0; i < np; ++i)
			in->packed[i] = hot ? h * (1.0f + 0.05f * unit(&seed))
			                    : unit(&seed);
		in->q = a->packed == MHA_PACKED_QKV ? in->packed
		                                     : mha_alloc(in->nq);
		in->k = in->packed + mha_ref_base(a, MHA_TENSOR_K);
		in->v = in->packed + mha_ref_base(a, MHA_TENSOR_V);
		for (size_t b = 0; b < batch; ++b)
			for (size_t j = 0; j < skv; ++j)
				for (size_t hk = 0; hk < a->kv_heads; ++hk) {
					float *r = in->v + mha_ref_offset(a, MHA_TENSOR_V, batch,
					                                  skv, b, j, hk);
					for (size_t c = 0; c < a->dv; ++c)
						r[c] = unit(&seed);
				}
	} else {
		in->q = mha_alloc(in->nq);
		in->k = mha_alloc(in->nk);
		in->v = mha_alloc(in->nv);
	}
	in->kv_len = malloc(batch * sizeof *in->kv_len);
	if (a->mask & MHA_MASK_BIAS)
		in->bias = mha_alloc(sq * skv);
	if (!in->q || !in->k || !in->v || !in->kv_len ||
	    ((a->mask & MHA_MASK_BIAS) && !in->bias))
		return -1;
	for (size_t i = 0; in->q != in->packed && i < in->nq; ++i)
		in->q[i] = hot ? h * (1.0f + 0.05f * unit(&seed)) : unit(&seed);
	for (size_t i = 0; !in->packed && i < in->nk; ++i)
		in->k[i] = hot ? h * (1.0f + 0.05f * unit(&seed)) : unit(&seed);
	for (size_t i = 0; !in->packed && i < in->nv; ++i)
		in->v[i] = unit(&seed);
	if (a->dtype && a->packed == MHA_PACKED_QKV) {
		/* q, k and v in one buffer of the type (kv_dtype is dtype) */
		const size_t np = batch * sq * mha_ref_pitch(a, MHA_TENSOR_Q);
		in->q16 = malloc(mha_kv_bytes(a->dtype, np) + 2);
		if (!in->q16)
			return -1;
		mha_kv_store_back(a->dtype, in->packed, in->q16, np);
	} else if (a->kv_dtype && in->packed) {
		/* --packed kv: the packed rows stored as one buffer of the type,
		 * v's heads after k's in each row, as the kernel reads them */
		const size_t np = batch * skv * mha_ref_pitch(a, MHA_TENSOR_K);
		in->k16 = malloc(mha_kv_bytes(a->kv_dtype, np) + 2);
		if (!in->k16)
			return -1;
		mha_kv_store_back(a->kv_dtype, in->packed, in->k16, np);
		in->v16 = (void *)mha_kv_at(a->kv_dtype, in->k16,
		                            mha_ref_base(a, MHA_TENSOR_V));
	} else if (a->kv_dtype) {
		in->k16 = malloc(mha_kv_bytes(a->kv_dtype, in->nk) + 2);
		in->v16 = malloc(mha_kv_bytes(a->kv_dtype, in->nv) + 2);
		if (!in->k16 || !in->v16)
			return -1;
		mha_kv_store_back(a->kv_dtype, in->k, in->k16, in->nk);
		mha_kv_store_back(a->kv_dtype, in->v, in->v16, in->nv);
	}
	if (a->dtype && a->packed != MHA_PACKED_QKV) {
		in->q16 = malloc(mha_kv_bytes(a->dtype, in->nq) + 2);
		if (!in->q16)
			return -1;
		mha_kv_store_back(a->dtype, in->q, in->q16, in->nq);
	}
	for (size_t b = 0; b < batch; ++b)
		in->kv_len[b] = (int32_t)(b + 1 == batch ? skv : (skv * 2 + 1) / 3);
	if (in->bias)
		for (size_t i = 0; i < sq * skv; ++i)
			in->bias[i] = unit(&seed) < -0.75f ? -INFINITY
			                                   : 2.0f * unit(&seed);
	return 0;
}

/* The call's arguments for inputs in, writing out (of a->dtype). */
static struct mha_args args(const struct mha_attn *a, const struct inputs *in,
                            void *out)
{
	return (struct mha_args){
		.q = in->q16 ? in->q16 : (const void *)in->q,
		.k = in->k16 ? (const void *)in->k16 : in->k,
		.v = in->v16 ? (const void *)in->v16 : in->v, .out = out,
		.batch = in->batch, .seq_q = in->sq, .seq_kv = in->skv,
		.kv_len = (a->mask & MHA_MASK_PADDING) ? in->kv_len : NULL,
		.bias = in->bias,
	};
}

/* The reference output for the inputs of seed: read from the cache when an
 * earlier run stored it, else computed and stored (renamed into place). */
static void reference(const struct mha_attn *a, const struct inputs *in,
                      float *ref, uint64_t seed)
{
	char path[4200], tmp[4300];
	FILE *f;

	snprintf(path, sizeof path, "%s-%llu.ref", cache,
	         (unsigned long long)seed);
	f = fopen(path, "rb");
	if (f) {
		size_t got = fread(ref, sizeof *ref, in->no, f);
		int extra = fgetc(f);
		fclose(f);
		if (got == in->no && extra == EOF)
			return;
	}
	{
		/* --dtype: from q's stored values as floats (with packed qkv
		 * k's and v's too), the output as floats */
		struct mha_attn ar = *a;
		struct mha_args x = args(a, in, ref);
		if (a->dtype) {
			ar.dtype = MHA_DTYPE_F32;
			x.q = in->q;
			if (a->packed == MHA_PACKED_QKV)
				ar.kv_dtype = MHA_DTYPE_F32;
		}
		mha_ref_attention(&ar, &x);
	}
	snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid());
	f = fopen(tmp, "wb");
	if (!f)
		return;
	if ((fwrite(ref, sizeof *ref, in->no, f) == in->no) + (fclose(f) == 0) == 2)
		rename(tmp, path);
	else
		remove(tmp);
}

static void call(const struct mha_attn *a, const struct inputs *in, void *out)
{
	struct mha_args x = args(a, in, out);

	mha_tune_kernel_args(&x);
}

/* Compare the kernel with the reference on one input set; 0, or -1 with
 * the reason printed.  Tolerance as the project's kernel tests. */
static int check(const struct mha_attn *a, size_t batch, size_t sq,
                 size_t skv, int hot, uint64_t seed)
{
	struct inputs in;
	struct mha_guarded out;
	float *ref = NULL;
	double vmax = 0, qmax = 0, kmax = 0, err = 0, tol;
	size_t worst = 0;
	int rc = -1;

	out.base = NULL;
	if (make(&in, a, batch, sq, skv, hot, seed) ||
	    !(ref = mha_alloc(in.no)) || mha_guarded_init_at(&out, in.no, in.q)) {
		printf("fail out of memory\n");
		goto done;
	}
	reference(a, &in, ref, seed);
	if (!a->dtype)
		call(a, &in, out.data);
	else {
		/* 16-bit outputs into the last half of the floats, then read
		 * back as floats: the first half must stay as it was */
		uint16_t *o = (uint16_t *)(void *)((char *)out.data + 2 * in.no);
		/* a signalling NaN, which no conversion produces */
		const uint16_t unset = a->dtype == MHA_DTYPE_F16 ? 0x7d5au : 0x7f9au;
		for (size_t i = 0; i < in.no; ++i)
			o[i] = unset;
		call(a, &in, o);
		for (size_t i = 0; i < in.no / 2; ++i)
			if (!mha_is_poison(out.data[i]))
				o = NULL;
		for (size_t i = 0; o && i < in.no; ++i) {
			const float x = o[i] == unset ? NAN
			                : (float)mha_ref_elem(a->dtype, o, i);
			/* float i overlaps at most halves i - 1 and i: read */
			out.data[i] = x;
		}
		if (!o) {
			printf("fail wrote before its output (seq_q %zu seq_kv %zu)\n",
			       sq, skv);
			goto done;
		}
	}
	if (!mha_guarded_intact(&out)) {
		printf("fail wrote outside its output (seq_q %zu seq_kv %zu)\n",
		       sq, skv);
		goto done;
	}
	vmax = tensor_max(a, &in, MHA_TENSOR_V);
	qmax = tensor_max(a, &in, MHA_TENSOR_Q);
	kmax = tensor_max(a, &in, MHA_TENSOR_K);
	for (size_t i = 0; i < in.no; ++i) {
		double e;
		if (mha_is_poison(out.data[i]) || isnan(out.data[i])) {
			printf("fail output %zu %s (seq_q %zu seq_kv %zu)\n", i,
			       mha_is_poison(out.data[i]) ? "never written" : "is NaN",
			       sq, skv);
			goto done;
		}
		e = fabs((double)out.data[i] - (double)ref[i]);
		if (e > err) {
			err = e;
			worst = i;
		}
	}
	tol = vmax * (1e-5 + 4.0 * sqrt((double)a->dk) * 0x1p-24 *
	                       (double)a->dk * qmax * kmax * a->scale);
	/* --dtype f16, bf16: and an ulp of the output's type */
	if (a->dtype)
		tol += vmax * (a->dtype == MHA_DTYPE_F16 ? 0x1p-10 : 0x1p-7);
	if (err > tol) {
		printf("fail differs from the reference: |out - ref| = %.3g > "
		       "tol %.3g at %zu (seq_q %zu seq_kv %zu%s)\n", err, tol,
		       worst, sq, skv, hot ? ", large scores" : "");
		goto done;
	}
	rc = 0;
done:
	release(&in);
	mha_free(ref);
	if (out.base)
		mha_guarded_free(&out);
	return rc;
}

/* Useful flops of one batch-1 call: 2 (dk + dv) per visible pair. */
static double flops(const struct mha_attn *a, size_t sq, size_t skv)
{
	double pairs = 0;

	for (size_t i = 0; i < sq; ++i) {
		size_t first = 0, n = mha_ref_visible(a, i, sq, skv, &first);
		pairs += n > first ? (double)(n - first) : 0.0;
	}
	return pairs * 2.0 * (double)(a->dk + a->dv) * (double)a->h;
}

int main(int argc, char **argv)
{
	struct mha_attn a;
	struct inputs in;
	size_t sq, skv;
	int fixed, pin;
	double budget, t[MAX_RUNS], t0, once;
	float *out;
	int runs = 0;

	if (argc != 17) {
		printf("fail harness: expected 16 arguments\n");
		return 1;
	}
	memset(&a, 0, sizeof a); /* no score modifiers: tune refuses them */
	a.h = strtoul(argv[1], NULL, 10);
	a.kv_heads = strtoul(argv[2], NULL, 10);
	a.dk = strtoul(argv[3], NULL, 10);
	a.dv = strtoul(argv[4], NULL, 10);
	sq = strtoul(argv[5], NULL, 10);
	skv = strtoul(argv[6], NULL, 10);
	a.mask = (unsigned)strtoul(argv[7], NULL, 10);
	a.align = atoi(argv[8]);
	{
		char *p;
		a.layout = (int)strtol(argv[9], &p, 10);
		a.packed = *p == ',' ? atoi(p + 1) : 0;
	}
	a.scale = strtod(argv[10], NULL);
	{
		/* "N,L,R": --window, --window-left, --window-right (-1 none) */
		char *p = argv[11];
		long l, r;
		a.window = strtoul(p, &p, 10);
		l = strtol(p + (*p == ','), &p, 10);
		r = strtol(p + (*p == ','), &p, 10);
		a.window_sides = (l >= 0 ? MHA_WINDOW_LEFT : 0) |
		                 (r >= 0 ? MHA_WINDOW_RIGHT : 0);
		a.window_left = l >= 0 ? (size_t)l : 0;
		a.window_right = r >= 0 ? (size_t)r : 0;
	}
	fixed = atoi(argv[12]);
	budget = strtod(argv[13], NULL);
	pin = atoi(argv[14]);
	cache = argv[15];
	{
		char *p;
		a.kv_dtype = (int)strtol(argv[16], &p, 10);
		a.dtype = *p == ',' ? atoi(p + 1) : 0;
	}
	if (pin)
		mha_pin_cpu(0);

	/* correctness first: batch 2 with padding differing per item, plain
	 * and large scores; lengths off the tiles too when they are free */
	if (check(&a, 2, sq, skv, 0, 1) || check(&a, 1, sq, skv, 1, 2))
		return 1;
	if (!fixed) {
		static const size_t odd[][2] = {{1, 9}, {7, 1}, {65, 130}, {33, 0}};
		for (size_t i = 0; i < sizeof odd / sizeof odd[0]; ++i)
			if (check(&a, 2, odd[i][0], odd[i][1], (int)(i % 2), 3 + i))
				return 1;
	}

	/* timing: batch 1, warm-up for about a tenth of the budget, then as
	 * many runs as fit the budget (5 to MAX_RUNS) */
	if (make(&in, &a, 1, sq, skv, 0, 7) || !(out = mha_alloc(in.no))) {
		printf("fail out of memory\n");
		return 1;
	}
	t0 = mha_now();
	call(&a, &in, out);
	once = mha_now() - t0;
	while (mha_now() - t0 < 0.1 * budget)
		call(&a, &in, out);
	runs = once > 0 ? (int)(0.9 * budget / once) : MAX_RUNS;
	runs = runs < 5 ? 5 : runs > MAX_RUNS ? MAX_RUNS : runs;
	for (int r = 0; r < runs; ++r) {
		double s = mha_now();
		call(&a, &in, out);
		t[r] = mha_now() - s;
	}
	{
		double lo = t[0], hi = t[0], med;
		for (int r = 1; r < runs; ++r) {
			lo = fmin(lo, t[r]);
			hi = fmax(hi, t[r]);
		}
		med = mha_median(t, (size_t)runs);
		printf("ok %.9g %.9g %.9g %d %.9g\n", med, lo, hi, runs,
		       flops(&a, sq, skv));
	}
	release(&in);
	mha_free(out);
	return 0;
}
