/* Properties of kernels beyond matching the reference: bias shift, causal
 * future, NaN rows, embedding (small stacks, workspaces, a host's
 * parallel-for). */
#include "props.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/mha_buf.h"
#include "../runtime/mha_ref.h"

/* Inputs of one property run, filled with a fixed pseudo-random pattern. */
struct inputs {
	size_t batch, seq_q, seq_kv, nq, nk, nv, no;
	float *q, *k, *v, *bias, *out1, *out2;
	float *packed;  /* --packed: q (qkv), k and v point into it */
	size_t np;      /* its floats */
	float *slopes, *sinks; /* [h] each, for --alibi and --sinks */
	int32_t *kv_len;
	/* --varlen packed: every sequence full, [batch + 1] offsets (the
	 * buffers are then those of bshd) */
	int32_t *cu_q, *cu_k;
	/* --mask bool and keys: every byte nonzero (no key hidden) */
	uint8_t *bool_mask, *key_mask;
	size_t nbias; /* floats of bias, bytes of bool_mask: every plane */
	/* --kv-dtype: k and v as the kernel reads them, f16 or bf16 bits of
	 * the floats above (the packed buffer's, with --packed kv) */
	void *h16, *k16, *v16;
	/* --dtype: q as stored (with --packed qkv, h16 holds it); the kernel
	 * writes its 16-bit outputs at out's start */
	void *q16;
};

/* Lengths for kernel k: its fixed ones, else 37 queries and keys. */
static int inputs_init(struct inputs *in, const struct mha_kernel *k)
{
	uint64_t s = 12345;

	memset(in, 0, sizeof *in);
	in->batch = 2;
	in->seq_q = k->seq_q ? k->seq_q : 37;
	in->seq_kv = k->seq_kv ? k->seq_kv : 37;
	in->nq = in->batch * in->seq_q * k->a.h * k->a.dk;
	in->nk = in->batch * in->seq_kv * k->a.kv_heads * k->a.dk;
	in->nv = in->batch * in->seq_kv * k->a.kv_heads * k->a.dv;
	in->no = in->batch * in->seq_q * k->a.h * k->a.dv;
	if (k->a.packed) {
		const enum mha_tensor t = k->a.packed == MHA_PACKED_QKV ?
			MHA_TENSOR_Q : MHA_TENSOR_K;
		in->np = in->batch * in->seq_kv * mha_ref_pitch(&k->a, t);
		in->packed = check_alloc(in->np);
		if (!in->packed)
			return -1;
	}
	in->q = k->a.packed == MHA_PACKED_QKV ? in->packed
	                                      : check_alloc(in->nq);
	in->k = in->packed ? in->packed + mha_ref_base(&k->a, MHA_TENSOR_K)
	                   : check_alloc(in->nk);
	in->v = in->packed ? in->packed + mha_ref_base(&k->a, MHA_TENSOR_V)
	                   : check_alloc(in->nv);
	in->nbias = in->batch * k->a.h * in->seq_q * in->seq_kv;
	in->bias = check_alloc(in->nbias);
	in->bool_mask = malloc(in->nbias);
	in->key_mask = malloc(in->batch * in->seq_kv);
	in->out1 = check_alloc(in->no);
	in->out2 = check_alloc(in->no);
	in->kv_len = malloc(in->batch * sizeof *in->kv_len);
	in->cu_q = malloc((in->batch + 1) * sizeof *in->cu_q);
	in->cu_k = malloc((in->batch + 1) * sizeof *in->cu_k);
	in->slopes = malloc(k->a.h * sizeof *in->slopes);
	in->sinks = malloc(k->a.h * sizeof *in->sinks);
	if (!in->q || !in->k || !in->v || !in->bias || !in->out1 ||
	    !in->out2 || !in->kv_len || !in->slopes || !in->sinks ||
	    !in->cu_q || !in->cu_k ||
	    !in->bool_mask || !in->key_mask)
		return -1;
	/* (the same bytes past 16-bit outputs in both) */
	memset(in->out1, 0, in->no * sizeof *in->out1);
	memset(in->out2, 0, in->no * sizeof *in->out2);
	if (k->a.dtype && k->a.packed != MHA_PACKED_QKV) {
		in->q16 = malloc(mha_kv_bytes(k->a.dtype, in->nq) + 1);
		if (!in->q16)
			return -1;
	}
	for (size_t i = 0; i < in->nbias; ++i)
		in->bool_mask[i] = (uint8_t)(i % 255 + 1);
	memset(in->key_mask, 0x80, in->batch * in->seq_kv);
	for (size_t h = 0; h < k->a.h; ++h) {
		in->slopes[h] = 0.5f * check_rng_unit(&s);
		in->sinks[h] = check_rng_unit(&s);
	}
	if (in->packed) {
		for (size_t i = 0; i < in->np; ++i)
			in->packed[i] = check_rng_unit(&s);
		if (k->a.packed == MHA_PACKED_KV)
			for (size_t i = 0; i < in->nq; ++i)
				in->q[i] = 2.0f * check_rng_unit(&s);
	} else {
		for (size_t i = 0; i < in->nq; ++i)
			in->q[i] = 2.0f * check_rng_unit(&s);
		for (size_t i = 0; i < in->nk; ++i)
			in->k[i] = 2.0f * check_rng_unit(&s);
		for (size_t i = 0; i < in->nv; ++i)
			in->v[i] = check_rng_unit(&s);
	}
	for (size_t i = 0; i < in->nbias; ++i)
		in->bias[i] = check_rng_unit(&s);
	for (size_t b = 0; b < in->batch; ++b)
		in->kv_len[b] = (int32_t)in->seq_kv;
	for (size_t b = 0; b <= in->batch; ++b) {
		in->cu_q[b] = (int32_t)(b * in->seq_q);
		in->cu_k[b] = (int32_t)(b * in->seq_kv);
	}
	if (k->a.kv_dtype) {
		const int t = k->a.kv_dtype;
		in->h16 = malloc(mha_kv_bytes(t, in->packed ? in->np
		                                            : in->nk + in->nv));
		if (!in->h16)
			return -1;
		in->k16 = (void *)mha_kv_at(t, in->h16, in->packed ?
		                            mha_ref_base(&k->a, MHA_TENSOR_K) : 0);
		in->v16 = (void *)mha_kv_at(t, in->h16, in->packed ?
		                            mha_ref_base(&k->a, MHA_TENSOR_V) : in->nk);
	}
	return 0;
}

static void inputs_free(struct inputs *in)
{
	if (in->packed)
		check_free(in->packed, in->np);
	else {
		check_free(in->k, in->nk);
		check_free(in->v, in->nv);
	}
	if (!in->packed || in->q != in->packed)
		check_free(in->q, in->nq);
	check_free(in->bias, in->nbias);
	free(in->bool_mask);
	free(in->key_mask);
	check_free(in->out1, in->no);
	check_free(in->out2, in->no);
	free(in->kv_len);
	free(in->cu_q);
	free(in->cu_k);
	free(in->slopes);
	free(in->sinks);
	free(in->h16);
	free(in->q16);
}

/* The call of kernel k on in, writing out. */
static struct mha_args args_of(const struct mha_kernel *k,
                               const struct inputs *in, float *out)
{
	/* --kv-dtype: k and v stored from the floats as they are now */
	if (in->packed && in->h16)
		mha_kv_store(k->a.kv_dtype, in->packed, in->h16, in->np);
	else if (in->h16) {
		mha_kv_store(k->a.kv_dtype, in->k, in->k16, in->nk);
		mha_kv_store(k->a.kv_dtype, in->v, in->v16, in->nv);
	}
	/* --dtype: q likewise */
	if (in->q16)
		mha_kv_store(k->a.dtype, in->q, in->q16, in->nq);
	return (struct mha_args){
		.q = in->q16 ? in->q16 : k->a.dtype ? in->h16 : (const void *)in->q,
		.k = in->h16 ? (const void *)in->k16 : (const void *)in->k,
		.v = in->h16 ? (const void *)in->v16 : (const void *)in->v,
		.out = out,
		.batch = in->batch, .seq_q = in->seq_q, .seq_kv = in->seq_kv,
		.kv_len = (k->a.mask & MHA_MASK_PADDING) ||
		          k->a.varlen == MHA_VARLEN_PADDED ? in->kv_len : NULL,
		.bias = (k->a.mask & MHA_MASK_BIAS) ? in->bias : NULL,
		.alibi_slopes = in->slopes, .sinks = in->sinks,
		.bool_mask = in->bool_mask, .key_mask = in->key_mask,
		.cu_seqlens_q = in->cu_q, .cu_seqlens_k = in->cu_k,
	};
}

static void run(const struct mha_kernel *k, const struct inputs *in, float *out)
{
	const struct mha_args x = args_of(k, in, out);

	k->args(&x);
}

/* Output element i of a call of k into out: a float, or with --dtype the
 * 16-bit element i at out's start, as a float; same_elems: whether n
 * elements of two calls' outputs, from i of x and j of y, have the same
 * bits (same_out: element i of both); out_ulp: the spacing of k's output
 * type at 1 (0 for floats), what rounding to it may add to an output of at
 * most 1 in size. */
static float out_at(const struct mha_kernel *k, const float *out, size_t i)
{
	return k->a.dtype ? (float)mha_ref_elem(k->a.dtype, out, i) : out[i];
}

static int same_elems(const struct mha_kernel *k, const float *x, size_t i,
                      const float *y, size_t j, size_t n)
{
	const size_t w = k->a.dtype ? 2 : 4;

	return memcmp((const char *)x + w * i, (const char *)y + w * j, w * n) == 0;
}

static int same_out(const struct mha_kernel *k, const float *x,
                    const float *y, size_t i)
{
	return same_elems(k, x, i, y, i, 1);
}

static double out_ulp(const struct mha_kernel *k)
{
	return k->a.dtype == MHA_DTYPE_F16 ? 0x1p-10 :
	       k->a.dtype == MHA_DTYPE_BF16 ? 0x1p-7 : 0.0;
}

int props_bias_shift(const struct mha_kernel *k, char *msg, size_t len)
{
	struct inputs in;
	double err = 0.0;
	int rc = -1;

	if (inputs_init(&in, k)) {
		snprintf(msg, len, "out of memory");
		goto done;
	}
	run(k, &in, in.out1);
	/* softmax(x + c) = softmax(x): a constant per query row, here up to
	 * +-8, changes no output beyond rounding */
	for (size_t i = 0; i < in.nbias; ++i)
		in.bias[i] += (float)((int)(i / in.seq_kv % 17) - 8);
	run(k, &in, in.out2);
	for (size_t i = 0; i < in.no; ++i)
		err = fmax(err, fabs((double)out_at(k, in.out1, i) -
		                     (double)out_at(k, in.out2, i)));
	/* outputs are at most 1 in size; the shifted scores round differently
	 * by a few ulp of 8 (and a 16-bit output then perhaps to the next
	 * value of its type) */
	if (!(err <= 1e-5 + out_ulp(k))) {
		snprintf(msg, len, "%s: shifting bias rows changed the output by %.3g",
		         k->name, err);
		goto done;
	}
	rc = 0;
done:
	inputs_free(&in);
	return rc;
}

int props_causal_future(const struct mha_kernel *k, char *msg, size_t len)
{
	const struct mha_attn a = k->a;
	struct inputs in;
	size_t cut;
	int rc = -1;

	if (inputs_init(&in, k)) {
		snprintf(msg, len, "out of memory");
		goto done;
	}
	run(k, &in, in.out1);
	/* keys and values from cut on change; rows that cannot see them must
	 * not change at all (their weights there are exactly 0) */
	cut = in.seq_kv / 2;
	for (size_t b = 0; b < in.batch; ++b)
		for (size_t j = cut; j < in.seq_kv; ++j)
			for (size_t hk = 0; hk < k->a.kv_heads; ++hk) {
				float *kr = in.k + mha_ref_offset(&k->a, MHA_TENSOR_K, in.batch,
				                                  in.seq_kv, b, j, hk);
				float *vr = in.v + mha_ref_offset(&k->a, MHA_TENSOR_V, in.batch,
				                                  in.seq_kv, b, j, hk);
				for (size_t d = 0; d < k->a.dk; ++d)
					kr[d] = 50.0f - kr[d];
				for (size_t d = 0; d < k->a.dv; ++d)
					vr[d] = 7.0f + vr[d];
			}
	run(k, &in, in.out2);
	for (size_t b = 0; b < in.batch; ++b)
		for (size_t i = 0; i < in.seq_q; ++i) {
			if (mha_ref_visible(&a, i, in.seq_q, in.seq_kv, NULL) > cut)
				continue;
			for (size_t hh = 0; hh < k->a.h; ++hh) {
				size_t o = mha_ref_offset(&k->a, MHA_TENSOR_OUT, in.batch,
				                          in.seq_q, b, i, hh);
				if (!same_elems(k, in.out1, o, in.out2, o, k->a.dv)) {
					snprintf(msg, len, "%s: row %zu of batch %zu, head %zu "
					         "changed when only keys from %zu did", k->name,
					         i, b, hh, cut);
					goto done;
				}
			}
		}
	rc = 0;
done:
	inputs_free(&in);
	return rc;
}

/* Which tensor a NaN goes into. */
enum nan_in { NAN_Q, NAN_K, NAN_V };

/* Does query row i of head hh (any batch item) depend on row j of key
 * head hk?  Only when hh reads hk and key j is visible to row i (inputs
 * have no padding and a finite bias). */
static int depends(const struct mha_kernel *k, const struct mha_attn *a,
                   const struct inputs *in, size_t i, size_t hh, size_t j,
                   size_t hk)
{
	size_t first = 0;
	size_t n = mha_ref_visible(a, i, in->seq_q, in->seq_kv, &first);

	return hh / (k->a.h / k->a.kv_heads) == hk && j >= first && j < n;
}

/* What an output must be after the NaN went in. */
enum want { SAME, ZERO, ANY, IS_NAN, SAME_OR_NAN };

/* One NaN in row (b, r, head) of tensor t, at column c (--kv-dtype q8: in
 * the block of c, as mha_kv_store gives it a NaN scale).  The kernels' exp
 * gives 0 for a NaN argument, so a NaN in a query row makes every score of
 * that row weigh 0: the output row is zeros, like a fully masked row.  A
 * NaN in a key row changes the rows that see that key (they drop it, or
 * become NaN when the NaN reached their running maximum).  A NaN in a
 * value row makes column c NaN in the rows that see that key; rows of the
 * same batch item and head group that do not see it may get a NaN in
 * column c too, as tiled kernels multiply the values of keys masked for
 * some rows of a tile by an exact 0 weight (0 x NaN is NaN).  Every other
 * output keeps every bit. */
static int nan_row(const struct mha_kernel *k, enum nan_in t, char *msg,
                   size_t len)
{
	static const char *const names[] = {"q", "k", "v"};
	static const char *const wants[] = {"the same bits", "0", "anything",
	                                    "NaN", "the same bits or NaN"};
	const struct mha_attn a = k->a;
	struct inputs in;
	size_t b, r, head, c, o;
	float *x;
	int rc = -1;

	if (inputs_init(&in, k)) {
		snprintf(msg, len, "out of memory");
		goto done;
	}
	run(k, &in, in.out1);
	b = in.batch - 1;
	c = (t == NAN_V ? k->a.dv : k->a.dk) / 2;
	if (t == NAN_Q) {
		r = in.seq_q - 1 - in.seq_q / 3;
		head = k->a.h - 1;
		x = in.q + mha_ref_offset(&k->a, MHA_TENSOR_Q, in.batch, in.seq_q,
		                          b, r, head);
	} else {
		r = in.seq_kv / 3;
		head = k->a.kv_heads - 1;
		x = (t == NAN_K ? in.k : in.v) +
		    mha_ref_offset(&k->a, t == NAN_K ? MHA_TENSOR_K : MHA_TENSOR_V,
		                   in.batch, in.seq_kv, b, r, head);
	}
	x[c] = NAN;
	run(k, &in, in.out2);
	for (size_t bb = 0; bb < in.batch; ++bb)
		for (size_t i = 0; i < in.seq_q; ++i)
			for (size_t hh = 0; hh < k->a.h; ++hh) {
				int dep = bb == b && (t == NAN_Q ? i == r && hh == head
				          : depends(k, &a, &in, i, hh, r, head));
				int group = bb == b && t == NAN_V &&
				            hh / (k->a.h / k->a.kv_heads) == head;
				o = mha_ref_offset(&k->a, MHA_TENSOR_OUT, in.batch, in.seq_q,
				                   bb, i, hh);
				for (size_t d = 0; d < k->a.dv; ++d) {
					/* q8: the NaN is its block's scale, all 32 columns */
					const int hit = a.kv_dtype == MHA_DTYPE_Q8 ? d / 32 == c / 32
					                                           : d == c;
					float y = out_at(k, in.out2, o + d);
					enum want w = dep ? (t == NAN_Q ? ZERO : t == NAN_K ? ANY
					                     : hit ? IS_NAN : SAME)
					            : group && hit ? SAME_OR_NAN : SAME;
					int same = same_out(k, in.out1, in.out2, o + d);
					int ok = w == SAME ? same : w == ZERO ? y == 0.0f
					       : w == ANY ? 1 : w == IS_NAN ? isnan(y)
					       : same || isnan(y);
					if (!ok) {
						snprintf(msg, len, "%s: NaN in %s row %zu of batch "
						         "%zu, head %zu: output row %zu head %zu "
						         "column %zu is %.9g (was %.9g), wanted %s",
						         k->name, names[t], r, b, head, i, hh, d,
						         (double)y, (double)out_at(k, in.out1, o + d),
						         wants[w]);
						goto done;
					}
				}
			}
	rc = 0;
done:
	inputs_free(&in);
	return rc;
}

int props_nan_rows(const struct mha_kernel *k, char *msg, size_t len)
{
	for (int t = NAN_Q; t <= NAN_V; ++t)
		if (nan_row(k, (enum nan_in)t, msg, len))
			return -1;
	return 0;
}

#ifndef CHECK_ASAN
/* The stack a thread of `size` bytes used running fn(arg): its stack is
 * painted first, then the deepest byte that changed is found. */
static size_t stack_used(void *(*fn)(void *), void *arg, size_t size)
{
	const unsigned char paint = 0xa5;
	unsigned char *mem = aligned_alloc(4096, size);
	pthread_attr_t at;
	pthread_t t;
	size_t i = 0;

	if (!mem)
		return SIZE_MAX;
	memset(mem, paint, size);
	if (pthread_attr_init(&at) || pthread_attr_setstack(&at, mem, size) ||
	    pthread_create(&t, &at, fn, arg)) {
		free(mem);
		return SIZE_MAX;
	}
	pthread_join(t, NULL);
	pthread_attr_destroy(&at);
	while (i < size && mem[i] == paint)
		++i;
	free(mem);
	return size - i;
}
#endif

/* One kernel call on another thread (none when k is NULL). */
struct call {
	const struct mha_kernel *k;
	struct mha_args x;
};

#ifndef CHECK_ASAN
static void *call_on_thread(void *p)
{
	const struct call *c = p;

	if (c->k)
		c->k->args(&c->x);
	return NULL;
}
#endif

/* Whether n floats hold the same bits. */
static int same_bits(const float *x, const float *y, size_t n)
{
	return memcmp(x, y, n * sizeof *x) == 0;
}

int props_embedding(const struct mha_kernel *k, char *msg, size_t len)
{
	struct inputs in;
	struct call c = {k, {0}};
	float *w1 = NULL, *w2 = NULL;
	unsigned char *ws = NULL;
	size_t nw = 0;
	int rc = -1;

	if (inputs_init(&in, k)) {
		snprintf(msg, len, "out of memory");
		goto done;
	}
	c.x = args_of(k, &in, in.out1);
	if (k->weights) {
		nw = in.batch * k->a.h * in.seq_q * in.seq_kv;
		w1 = check_alloc(nw);
		w2 = check_alloc(nw);
		if (!w1 || !w2) {
			snprintf(msg, len, "out of memory");
			goto done;
		}
	}
	/* the reference output: the default call on this thread */
	k->args(&c.x);
	c.x.out = in.out2;

#ifndef CHECK_ASAN
	/* on a 64 KiB stack, within the stated bound */
	{
		const size_t base = stack_used(call_on_thread, &(struct call){0},
		                               65536);
		const size_t used = stack_used(call_on_thread, &c, 65536);
		if (used == SIZE_MAX || base == SIZE_MAX) {
			snprintf(msg, len, "%s: cannot start a thread", k->name);
			goto done;
		}
		if (used - base > k->stack) {
			snprintf(msg, len, "%s: used %zu bytes of stack, states at "
			         "most %zu", k->name, used - base, k->stack);
			goto done;
		}
		if (!same_bits(in.out1, in.out2, in.no)) {
			snprintf(msg, len, "%s: a 64 KiB stack changed the output",
			         k->name);
			goto done;
		}
	}
#endif

	/* a workspace of exactly NAME_workspace bytes, misaligned: used, and
	 * nothing past its end written */
	{
		const size_t need = k->workspace(&c.x);
		ws = malloc(need + 65);
		if (!ws) {
			snprintf(msg, len, "out of memory");
			goto done;
		}
		memset(ws, 0x5a, need + 65);
		memset(in.out2, 0, in.no * sizeof *in.out2);
		c.x.workspace = ws + 1;
		c.x.workspace_size = need;
		k->args(&c.x);
		for (size_t i = need + 1; i < need + 65; ++i)
			if (ws[i] != 0x5a) {
				snprintf(msg, len, "%s: wrote past its workspace of %zu "
				         "bytes", k->name, need);
				goto done;
			}
		if (need > 0) {
			size_t i = 1;
			while (i <= need && ws[i] == 0x5a)
				++i;
			if (i > need) {
				snprintf(msg, len, "%s: did not use its workspace of %zu "
				         "bytes", k->name, need);
				goto done;
			}
		}
		if (!same_bits(in.out1, in.out2, in.no)) {
			snprintf(msg, len, "%s: a workspace changed the output",
			         k->name);
			goto done;
		}
		/* too small a workspace: taken from malloc instead */
		memset(in.out2, 0, in.no * sizeof *in.out2);
		c.x.workspace_size = need / 2;
		k->args(&c.x);
		if (!same_bits(in.out1, in.out2, in.no)) {
			snprintf(msg, len, "%s: a workspace too small changed the "
			         "output", k->name);
			goto done;
		}
		/* a workspace that holds one worker's scratch: an OpenMP kernel
		 * then runs on this thread alone, without a team */
		{
			struct mha_args one = c.x;
			one.parallel = check_pool_parallel;
			one.workers = 1;
			const size_t need1 = k->workspace(&one);
			memset(in.out2, 0, in.no * sizeof *in.out2);
			c.x.workspace_size = need1 <= need ? need1 : need;
			k->args(&c.x);
			if (!same_bits(in.out1, in.out2, in.no)) {
				snprintf(msg, len, "%s: a workspace for one worker "
				         "changed the output", k->name);
				goto done;
			}
		}
	}

	/* the host's parallel-for with 3 workers, with and without a
	 * workspace for them, and for the weights */
	for (int with_ws = 0; with_ws < 2; ++with_ws) {
		struct check_pool p = {.workers = 3};
		struct mha_args x = c.x;
		x.parallel = check_pool_parallel;
		x.pool = &p;
		x.workers = p.workers;
		x.workspace = NULL;
		x.workspace_size = 0;
		free(ws);
		ws = NULL;
		if (with_ws) {
			x.workspace_size = k->workspace(&x);
			ws = malloc(x.workspace_size ? x.workspace_size : 1);
			if (!ws) {
				snprintf(msg, len, "out of memory");
				goto done;
			}
			x.workspace = ws;
		}
		memset(in.out2, 0, in.no * sizeof *in.out2);
		k->args(&x);
		if (atomic_load(&p.calls) == 0 || p.bad_worker) {
			snprintf(msg, len, "%s: the host's parallel-for was %s",
			         k->name, p.bad_worker ? "given an item twice or "
			         "not at all" : "not called");
			goto done;
		}
		if (!same_bits(in.out1, in.out2, in.no)) {
			snprintf(msg, len, "%s: the host's parallel-for%s changed the "
			         "output", k->name, with_ws ? " and a workspace" : "");
			goto done;
		}
	}
	if (k->weights) {
		struct check_pool p = {.workers = 3};
		struct mha_args x = c.x, y = c.x;
		x.workspace = y.workspace = NULL;
		x.workspace_size = y.workspace_size = 0;
		y.out = in.out1;
		y.weights = w1;
		k->args(&y);
		x.parallel = check_pool_parallel;
		x.pool = &p;
		x.workers = p.workers;
		x.weights = w2;
		k->args(&x);
		if (atomic_load(&p.calls) == 0 || p.bad_worker ||
		    !same_bits(in.out1, in.out2, in.no) || !same_bits(w1, w2, nw)) {
			snprintf(msg, len, "%s: the host's parallel-for changed "
			         "NAME_weights' output", k->name);
			goto done;
		}
	}
	rc = 0;
done:
	free(ws);
	if (w1)
		check_free(w1, nw);
	if (w2)
		check_free(w2, nw);
	inputs_free(&in);
	return rc;
}

#ifndef CHECK_ASAN
/* malloc of the whole test process, failing on demand: while fail_all is
 * set (around one kernel call), every request gets NULL and ENOMEM.  The
 * rest is the C library's. */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
static volatile int fail_all;

void *malloc(size_t n)
{
	if (fail_all) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}

int props_nomem(const struct mha_kernel *k, char *msg, size_t len)
{
	struct inputs in;
	struct mha_args x;
	size_t nan = 0;
	int err, rc = -1;

	if (inputs_init(&in, k)) {
		snprintf(msg, len, "out of memory");
		goto done;
	}
	x = args_of(k, &in, in.out1);
	errno = 0;
	fail_all = 1;
	k->args(&x);
	fail_all = 0;
	err = errno;
	for (size_t i = 0; i < in.no; ++i)
		nan += isnan(out_at(k, in.out1, i)) != 0;
	if (nan != in.no || err != ENOMEM) {
		snprintf(msg, len, "%s: without memory for its scratch: %zu of %zu "
		         "outputs NaN, errno %d (ENOMEM is %d)", k->name, nan,
		         in.no, err, ENOMEM);
		goto done;
	}
	rc = 0;
done:
	inputs_free(&in);
	return rc;
}
#endif

/* Rows [j0, j1) of keys or values (d floats a row) of every batch item and
 * head of src (seq rows) into dst, as a tensor of j1 - j0 rows. */
static void slice(const struct mha_kernel *k, const float *src, size_t seq,
                  size_t j0, size_t j1, enum mha_tensor t, size_t batch,
                  float *dst)
{
	const size_t d = t == MHA_TENSOR_K ? k->a.dk : k->a.dv;

	for (size_t b = 0; b < batch; ++b)
		for (size_t j = j0; j < j1; ++j)
			for (size_t hk = 0; hk < k->a.kv_heads; ++hk)
				memcpy(dst + mha_ref_offset(&k->a, t, batch, j1 - j0, b,
				                            j - j0, hk),
				       src + mha_ref_offset(&k->a, t, batch, seq, b, j,
				                            hk),
				       d * sizeof *dst);
}

/* One call on the keys [j0, j1) of in (their bias columns, padding lengths
 * cut to the range), its sinks those given, writing out and lse. */
static void run_range(const struct mha_kernel *k, const struct inputs *in,
                      size_t j0, size_t j1, const float *sinks, float *kb,
                      float *vb, float *bb, float *out, float *lse)
{
	int32_t kv_len[2];

	slice(k, in->k, in->seq_kv, j0, j1, MHA_TENSOR_K, in->batch, kb);
	slice(k, in->v, in->seq_kv, j0, j1, MHA_TENSOR_V, in->batch, vb);
	if (k->a.kv_dtype) { /* stored in place, as the kernel reads them */
		mha_kv_store(k->a.kv_dtype, kb, kb,
		        in->batch * (j1 - j0) * k->a.kv_heads * k->a.dk);
		mha_kv_store(k->a.kv_dtype, vb, vb,
		        in->batch * (j1 - j0) * k->a.kv_heads * k->a.dv);
	}
	for (size_t i = 0; i < in->seq_q; ++i)
		memcpy(bb + i * (j1 - j0), in->bias + i * in->seq_kv + j0,
		       (j1 - j0) * sizeof *bb);
	for (size_t b = 0; b < in->batch; ++b) {
		const long n = (long)in->kv_len[b] - (long)j0;
		kv_len[b] = (int32_t)(n < 0 ? 0 : n > (long)(j1 - j0) ?
		                      (long)(j1 - j0) : n);
	}
	if (k->a.dtype) /* q too, in its type */
		mha_kv_store(k->a.dtype, in->q, in->q16, in->nq);
	k->args(&(struct mha_args){
		.q = k->a.dtype ? in->q16 : (const void *)in->q, .k = kb, .v = vb,
		.out = out,
		.batch = in->batch, .seq_q = in->seq_q, .seq_kv = j1 - j0,
		.kv_len = (k->a.mask & MHA_MASK_PADDING) ? kv_len : NULL,
		.bias = (k->a.mask & MHA_MASK_BIAS) ? bb : NULL,
		.alibi_slopes = in->slopes, .sinks = sinks, .lse = lse,
	});
}

int props_lse_splits(const struct mha_kernel *k)
{
	return k->merge && !k->seq_kv && !(k->a.mask & MHA_MASK_CAUSAL) &&
	       !k->a.window && !k->a.alibi && !k->a.packed && !k->a.mask_dims &&
	       !k->a.varlen &&
	       !(k->a.mask & (MHA_MASK_BOOL | MHA_MASK_KEYS));
}

int props_lse_merge(const struct mha_kernel *k, char *msg, size_t len)
{
	struct inputs in;
	const size_t s1 = 15; /* keys [0, 15) in the first call */
	size_t nl = 0;
	float *lse = NULL, *lse1 = NULL, *lse2 = NULL, *o2 = NULL;
	float *kb = NULL, *vb = NULL, *bb = NULL, *none = NULL;
	double err = 0.0, lerr = 0.0;
	int rc = -1;

	if (inputs_init(&in, k))
		goto nomem;
	/* batch item 0 has 11 valid keys: none in the second range (its lse
	 * there is -inf, or the second call's sink: -inf too) */
	in.kv_len[0] = 11;
	nl = in.batch * k->a.h * in.seq_q;
	lse = check_alloc(nl);
	lse1 = check_alloc(nl);
	lse2 = check_alloc(nl);
	o2 = check_alloc(in.no);
	kb = check_alloc(in.nk);
	vb = check_alloc(in.nv);
	bb = check_alloc(in.seq_q * in.seq_kv);
	none = malloc(k->a.h * sizeof *none);
	if (!lse || !lse1 || !lse2 || !o2 || !kb || !vb || !bb || !none)
		goto nomem;
	/* the sink joins one side only: the other's sinks are -inf */
	for (size_t h = 0; h < k->a.h; ++h)
		none[h] = -INFINITY;
	run_range(k, &in, 0, in.seq_kv, in.sinks, kb, vb, bb, in.out1, lse);
	run_range(k, &in, 0, s1, in.sinks, kb, vb, bb, in.out2, lse1);
	run_range(k, &in, s1, in.seq_kv, none, kb, vb, bb, o2, lse2);
	k->merge(in.out2, lse1, o2, lse2, in.batch, in.seq_q);
	for (size_t i = 0; i < in.no; ++i)
		err = fmax(err, fabs((double)out_at(k, in.out1, i) -
		                     (double)out_at(k, in.out2, i)));
	for (size_t r = 0; r < nl; ++r) {
		if (isinf(lse[r]) || isinf(lse1[r])) {
			if (lse[r] != lse1[r])
				lerr = INFINITY;
			continue;
		}
		lerr = fmax(lerr, fabs((double)lse[r] - (double)lse1[r]));
	}
	/* outputs at most 1 in size and lse of a few units (scores up to 4
	 * scale * dk): both within float rounding of the two ways; 16-bit
	 * outputs rounded once in one call, in two calls each partial and
	 * then their merge: up to two steps of the type apart */
	if (!(err <= 1e-5 + 2.0 * out_ulp(k)) || !(lerr <= 1e-5 * (1.0 + 4.0 * k->a.scale * k->a.dk))) {
		snprintf(msg, len, "%s: two calls over keys [0, %zu) and [%zu, %zu) "
		         "merged differ from one call: out by %.3g, lse by %.3g",
		         k->name, s1, s1, in.seq_kv, err, lerr);
		goto done;
	}
	rc = 0;
	goto done;
nomem:
	snprintf(msg, len, "out of memory");
done:
	check_free(lse, nl);
	check_free(lse1, nl);
	check_free(lse2, nl);
	check_free(o2, in.no);
	check_free(kb, in.nk);
	check_free(vb, in.nv);
	check_free(bb, in.seq_q * in.seq_kv);
	free(none);
	inputs_free(&in);
	return rc;
}

/* Row i of head head of sequence b, tensor t, in a call of batch sequences
 * of seq rows (seq_q for q and out, seq_kv for k and v): with --varlen
 * packed at row cu[b] + i of one item of cu[batch] rows. */
static size_t seq_row(const struct mha_attn *a, enum mha_tensor t,
                      size_t batch, size_t seq, const int32_t *cu, size_t b,
                      size_t i, size_t head)
{
	if (a->varlen == MHA_VARLEN_PACKED)
		return mha_ref_offset(a, t, 1, (size_t)cu[batch], 0,
		                      (size_t)cu[b] + i, head);
	return mha_ref_offset(a, t, batch, seq, b, i, head);
}

int props_varlen_alone(const struct mha_kernel *k, char *msg, size_t len)
{
	const struct mha_attn a = k->a;
	const size_t batch = 3, sq = k->seq_q ? k->seq_q : 37;
	/* with --packed qkv the keys are the queries' positions */
	const size_t skv = a.packed == MHA_PACKED_QKV ? sq : k->seq_kv ? k->seq_kv : 37;
	/* sequence 1's lengths, the same in both calls */
	const size_t mq = sq > 2 ? sq - 2 : sq, mkv = skv > 3 ? skv - 3 : skv;
	const size_t nq = batch * sq * a.h * a.dk;
	const size_t nk = batch * skv * a.kv_heads * a.dk;
	const size_t nv = batch * skv * a.kv_heads * a.dv;
	const size_t no = batch * sq * a.h * a.dv, nl = batch * a.h * sq;
	const size_t nw = batch * a.h * sq * skv, nb = batch * a.h * sq * skv;
	/* packed inputs: one buffer of packed rows, q, k and v into it */
	const size_t np = a.packed == MHA_PACKED_QKV ?
		batch * sq * mha_ref_pitch(&a, MHA_TENSOR_Q) :
		a.packed == MHA_PACKED_KV ?
		batch * skv * mha_ref_pitch(&a, MHA_TENSOR_K) : 0;
	float *pk = np ? check_alloc(np) : NULL;
	float *q = a.packed == MHA_PACKED_QKV ? pk : check_alloc(nq);
	float *kk = pk ? pk + mha_ref_base(&a, MHA_TENSOR_K) : check_alloc(nk);
	float *v = pk ? pk + mha_ref_base(&a, MHA_TENSOR_V) : check_alloc(nv);
	float *out[2] = {check_alloc(no), check_alloc(no)};
	float *lse[2] = {check_alloc(nl), check_alloc(nl)};
	float *w[2] = {check_alloc(nw), check_alloc(nw)};
	float *bias = check_alloc(nb), *slopes = malloc(a.h * sizeof *slopes);
	float *sinks = malloc(a.h * sizeof *sinks);
	uint8_t *bm = malloc(nb), *km = malloc(batch * skv);
	int32_t ql[2][3], kl[2][3], cq[2][4], ck[2][4];
	int rc = -1;

	if (!q || !kk || !v || !out[0] || !out[1] || !lse[0] || !lse[1] ||
	    !w[0] || !w[1] || !bias || !slopes || !sinks || !bm || !km) {
		snprintf(msg, len, "out of memory");
		goto done;
	}
	/* what sequence 1 reads and the masks: the same in both calls */
	{
		uint64_t s = 4242;
		for (size_t i = 0; i < nb; ++i) {
			bias[i] = check_rng_unit(&s);
			bm[i] = (check_rng_next(&s) & 3) != 0;
		}
		for (size_t i = 0; i < batch * skv; ++i)
			km[i] = (check_rng_next(&s) & 3) != 0;
		for (size_t h = 0; h < a.h; ++h) {
			slopes[h] = 0.5f * check_rng_unit(&s);
			sinks[h] = check_rng_unit(&s);
		}
	}
	/* the other sequences: full in the first call; in the second one
	 * query and half the keys, and half the queries and no key */
	for (int run = 0; run < 2; ++run) {
		ql[run][0] = (int32_t)(run ? 1 : sq);
		kl[run][0] = (int32_t)(run ? skv / 2 : skv);
		ql[run][1] = (int32_t)mq;
		kl[run][1] = (int32_t)mkv;
		ql[run][2] = (int32_t)(run ? sq / 2 : sq);
		kl[run][2] = run ? 0 : (int32_t)skv;
		cq[run][0] = ck[run][0] = 0;
		for (size_t b = 0; b < batch; ++b) {
			cq[run][b + 1] = cq[run][b] + ql[run][b];
			ck[run][b + 1] = ck[run][b] + kl[run][b];
		}
	}
	for (int run = 0; run < 2; ++run) {
		uint64_t other = 77 + (uint64_t)run, mine = 5;
		/* everything random (differently per call), then sequence 1's
		 * rows where this call has them */
		for (size_t i = 0; i < np; ++i)
			pk[i] = 2.0f * check_rng_unit(&other);
		for (size_t i = 0; a.packed != MHA_PACKED_QKV && i < nq; ++i)
			q[i] = 2.0f * check_rng_unit(&other);
		for (size_t i = 0; !pk && i < nk; ++i)
			kk[i] = 2.0f * check_rng_unit(&other);
		for (size_t i = 0; !pk && i < nv; ++i)
			v[i] = check_rng_unit(&other);
		for (size_t i = 0; i < mq; ++i)
			for (size_t h = 0; h < a.h; ++h) {
				float *r = q + seq_row(&a, MHA_TENSOR_Q, batch, sq, cq[run],
				                       1, i, h);
				for (size_t d = 0; d < a.dk; ++d)
					r[d] = 2.0f * check_rng_unit(&mine);
			}
		for (size_t j = 0; j < mkv; ++j)
			for (size_t h = 0; h < a.kv_heads; ++h) {
				float *kr = kk + seq_row(&a, MHA_TENSOR_K, batch, skv,
				                         ck[run], 1, j, h);
				float *vr = v + seq_row(&a, MHA_TENSOR_V, batch, skv,
				                        ck[run], 1, j, h);
				for (size_t d = 0; d < a.dk; ++d)
					kr[d] = 2.0f * check_rng_unit(&mine);
				for (size_t d = 0; d < a.dv; ++d)
					vr[d] = check_rng_unit(&mine);
			}
		if (a.dtype && a.packed == MHA_PACKED_QKV) {
			/* stored in place, as the kernel reads them */
			mha_kv_store(a.dtype, pk, pk, np);
		} else {
			if (a.dtype)
				mha_kv_store(a.dtype, q, q, nq);
			if (a.kv_dtype) {
				mha_kv_store(a.kv_dtype, kk, kk, nk);
				mha_kv_store(a.kv_dtype, v, v, nv);
			}
		}
		memset(out[run], 0, no * sizeof(float));
		memset(lse[run], 0, nl * sizeof(float));
		memset(w[run], 0, nw * sizeof(float));
		k->args(&(struct mha_args){
			.q = q, .k = kk, .v = v, .out = out[run],
			.batch = batch, .seq_q = sq, .seq_kv = skv,
			.kv_len = kl[run], .q_len = ql[run],
			.cu_seqlens_q = cq[run], .cu_seqlens_k = ck[run],
			.bias = bias, .bool_mask = bm, .key_mask = km,
			.alibi_slopes = slopes, .sinks = sinks,
			.lse = k->merge ? lse[run] : NULL,
			.weights = k->weights ? w[run] : NULL,
		});
	}
	for (size_t i = 0; i < mq; ++i)
		for (size_t h = 0; h < a.h; ++h) {
			const size_t o0 = seq_row(&a, MHA_TENSOR_OUT, batch, sq, cq[0], 1,
			                          i, h);
			const size_t o1 = seq_row(&a, MHA_TENSOR_OUT, batch, sq, cq[1], 1,
			                          i, h);
			/* lse [batch][h][seq_q], packed [h][total_q] */
			const size_t l0 = a.varlen == MHA_VARLEN_PACKED ?
				h * (size_t)cq[0][batch] + (size_t)cq[0][1] + i :
				(a.h + h) * sq + i;
			const size_t l1 = a.varlen == MHA_VARLEN_PACKED ?
				h * (size_t)cq[1][batch] + (size_t)cq[1][1] + i : l0;
			const size_t wr = ((a.h + h) * sq + i) * skv;
			if (!same_elems(k, out[0], o0, out[1], o1, a.dv) ||
			    (k->merge && memcmp(&lse[0][l0], &lse[1][l1], sizeof(float))) ||
			    (k->weights && memcmp(w[0] + wr, w[1] + wr,
			                          skv * sizeof(float)))) {
				snprintf(msg, len, "%s: row %zu head %zu of sequence 1 "
				         "(%zu queries, %zu keys) changed when the other "
				         "sequences did", k->name, i, h, mq, mkv);
				goto done;
			}
		}
	rc = 0;
done:
	if (pk)
		check_free(pk, np);
	if (a.packed != MHA_PACKED_QKV)
		check_free(q, nq);
	if (!pk) {
		check_free(kk, nk);
		check_free(v, nv);
	}
	for (int run = 0; run < 2; ++run) {
		check_free(out[run], no);
		check_free(lse[run], nl);
		check_free(w[run], nw);
	}
	check_free(bias, nb);
	free(slopes);
	free(sinks);
	free(bm);
	free(km);
	return rc;
}
