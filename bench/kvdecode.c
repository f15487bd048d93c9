/* make bench-kv: decode h32 dk128 q1 kv2048 with f16, bf16 and q8 KV
 * caches against the f32 kernel, and grouped-query decode (h32 kv8) with
 * f16 and q8 caches against f32, the kernels of make bench (k5, k18, k19,
 * k26; k6, k20, k27).
 * The calls alternate, one of each per round, so that load from elsewhere
 * falls on all alike; each reads its K and V from memory: before each call
 * (untimed) a buffer of twice the last-level cache, and at least 64 MiB,
 * is read (a 260 MiB L3 would otherwise hold an f32 cache from one round
 * to the next).  Medians of ROUNDS calls of this thread's CPU time, pinned
 * to CPU 0 by the caller (taskset), one thread.  A plain read of that
 * buffer in the same rounds is the bandwidth one core gets.  Prints ms,
 * GB/s of the K and V bytes read, that as a share of the plain read's, and
 * the ratio to the f32 kernel of the same shape.  Never a test.
 *
 *   kvdecode [ROUNDS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../runtime/mha_abi.h"
#include "../runtime/mha_buf.h"
#include "../runtime/mha_ref.h"
#include "../runtime/mha_time.h"

mha_args_fn bench_k5_args, bench_k6_args, bench_k18_args, bench_k19_args,
	bench_k20_args, bench_k26_args, bench_k27_args;

#define NK 7 /* kernels */

#define MAX_ROUNDS 201

/* Reads n 8-byte words in order, as a kernel reads its keys, each line
 * fetched 4 KiB ahead in software as the kernels fetch theirs (without it
 * one core of the Intel Xeon guest read 8.6 GB/s where the decode kernels
 * read up to 13.4). */
static uint64_t read_all(const uint64_t *p, size_t n)
{
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;

	for (size_t i = 0; i + 4 <= n; i += 4) {
		if (i % 8 == 0 && i + 512 < n)
			__builtin_prefetch(p + i + 512, 0, 3);
		s0 += p[i];
		s1 += p[i + 1];
		s2 += p[i + 2];
		s3 += p[i + 3];
	}
	return s0 ^ s1 ^ s2 ^ s3;
}

int main(int argc, char **argv)
{
	const size_t h = 32, dk = 128, skv = 2048, n = skv * h * dk;
	const int rounds = argc > 1 ? atoi(argv[1]) : 31;
	float *q = mha_alloc(h * dk), *k = mha_alloc(n), *v = mha_alloc(n);
	float *o = mha_alloc(h * dk);
	uint16_t *k16 = malloc(n * 2), *v16 = malloc(n * 2);
	uint16_t *kb = malloc(n * 2), *vb = malloc(n * 2);
	const size_t n8 = mha_kv_bytes(MHA_DTYPE_Q8, n);
	void *k8 = malloc(n8), *v8 = malloc(n8);
	uint64_t s = 1;
	static double t[NK][MAX_ROUNDS], tr[MAX_ROUNDS];
	/* the plain read, and what is read between calls: 8-byte words */
	const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
	const size_t nr = llc > (32l << 20) ? (size_t)llc / 4 : (size_t)8 << 20;
	uint64_t *big = malloc(nr * 8), sink = 0;
	/* the kernels, their K and V, and the bytes they read (GQA: a
	 * quarter of the heads) */
	struct {
		const char *name;
		mha_args_fn *fn;
		const void *k, *v;
		double bytes;
		int base; /* the f32 kernel of the same shape */
	} ks[] = {
		{"decode f32", bench_k5_args, k, v, n * 8.0, 0},
		{"decode f16 cache", bench_k18_args, k16, v16, n * 4.0, 0},
		{"decode q8 cache", bench_k26_args, k8, v8, n8 * 2.0, 0},
		{"decode bf16 cache", bench_k19_args, kb, vb, n * 4.0, 0},
		{"GQA kv8 f32", bench_k6_args, k, v, n * 2.0, 4},
		{"GQA kv8 f16 cache", bench_k20_args, k16, v16, n * 1.0, 4},
		{"GQA kv8 q8 cache", bench_k27_args, k8, v8, n8 * 0.5, 4},
	};

	if (!q || !k || !v || !o || !k16 || !v16 || !kb || !vb || !k8 || !v8 ||
	    !big || rounds < 1 ||
	    rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: kvdecode [ROUNDS, 1 to %d]\n", MAX_ROUNDS);
		return 2;
	}
	for (size_t i = 0; i < n; ++i) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		k[i] = (float)((double)(s >> 40) * 0x1p-23 - 1.0);
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = (float)((double)(s >> 40) * 0x1p-23 - 1.0);
		k16[i] = mha_f16_from_float(k[i]);
		v16[i] = mha_f16_from_float(v[i]);
		kb[i] = mha_bf16_from_float(k[i]);
		vb[i] = mha_bf16_from_float(v[i]);
	}
	mha_kv_store(MHA_DTYPE_Q8, k, k8, n);
	mha_kv_store(MHA_DTYPE_Q8, v, v8, n);
	for (size_t i = 0; i < h * dk; ++i)
		q[i] = 0.01f * (float)(i % 7);
	for (size_t i = 0; i < nr; ++i)
		big[i] = i;
	for (int r = -1; r < rounds; ++r) { /* round -1 warms up */
		for (int i = 0; i < NK; ++i) {
			const struct mha_args a = {.q = q, .k = ks[i].k, .v = ks[i].v,
			                           .out = o, .batch = 1, .seq_q = 1,
			                           .seq_kv = skv};
			sink += read_all(big, nr);
			const double t0 = mha_cpu_now();
			ks[i].fn(&a);
			if (r >= 0)
				t[i][r] = mha_cpu_now() - t0;
		}
		const double t0 = mha_cpu_now();
		sink += read_all(big, nr);
		if (r >= 0)
			tr[r] = mha_cpu_now() - t0;
	}
	const double rd = nr * 8.0 / mha_median(tr, (size_t)rounds) * 1e-9;
	printf("plain read of %zu MiB: %.2f GB/s%s\n", nr >> 17, rd, sink == 1 ? " " : "");
	printf("%-20s %9s %9s %9s %9s\n", "kernel", "ms", "GB/s", "of read", "x f32");
	for (int i = 0; i < NK; ++i) {
		const double m = mha_median(t[i], (size_t)rounds);
		const double b = mha_median(t[ks[i].base], (size_t)rounds);
		printf("%-20s %9.3f %9.2f %8.0f%% %9.3f\n", ks[i].name, m * 1e3,
		       ks[i].bytes / m * 1e-9, 100.0 * ks[i].bytes / m * 1e-9 / rd, m / b);
	}
	return 0;
}
