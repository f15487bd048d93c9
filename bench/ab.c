/* make bench-ab: two kernels of one spec, A and B (bench/bench.mk builds
 * them from AB_SPEC with AB_A and AB_B, AB_TEMPLATES_A and AB_TEMPLATES_B,
 * or takes AB_FILE_A and AB_FILE_B), each checked against the reference on
 * the inputs make bench uses, then called in turn, one call of each per
 * round, on one thread pinned to one CPU, so that whatever else loads the
 * machine falls on both alike.  Medians of ROUNDS calls of this thread's
 * CPU time (time the thread waits descheduled is not counted), the FMA
 * peak measured before and after by the same clock.  Prints each kernel's ms and share of the
 * peak (the larger of its two measurements: other work only lowers one;
 * decode: GB/s of K and V read) and the median over the rounds of
 * A's time over B's in the same round: above 1, B is faster (a ratio per
 * round cancels the machine's load drifting between rounds; the order
 * alternates, since the second call finds more of the inputs in cache).
 * Says which kernel's code the linker placed first: where a kernel's code
 * lies moves its time by itself (make bench-ab runs a second binary linked
 * the other way round and takes the geometric mean of the two).
 * Never a test.
 *
 *   ab ROUNDS BATCH CPU CHECK ONE_OUT
 *
 * CHECK 0 times kernels whose results are wrong on purpose (a part taken
 * out to see what it costs): their errors are printed, not enforced.
 * CHECK 2 computes no reference and prints no errors (the binary of the
 * other link order, built from the same objects, checked them).
 * ONE_OUT 1: after the checks both write A's output, so that each call
 * finds the output's lines where the call before left them, as make
 * bench's calls of one kernel do (0: each its own, twice the lines). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../runtime/mha_buf.h"
#include "../runtime/mha_time.h"
#include "job.h"

#define MAX_ROUNDS 1001
#define WARM_ROUNDS 2 /* untimed rounds after the checks */

/* The two kernels: one `mhagen --emit registry` line each, in kernels.inc
 * (ab_a, then ab_b). */
#define MHA_KERNEL BENCH_PROTO
#include "kernels.inc"
#undef MHA_KERNEL

#define MHA_KERNEL BENCH_SHAPE
static const struct shape shapes[] = {
#include "kernels.inc"
};
#undef MHA_KERNEL

/* 1 when x and y compute the same thing on the same inputs (knobs and
 * targets may differ). */
static int same_spec(const struct shape *x, const struct shape *y)
{
	const struct mha_attn *a = &x->attn, *b = &y->attn;

	return x->seq_q == y->seq_q && x->seq_kv == y->seq_kv &&
	       a->h == b->h && a->kv_heads == b->kv_heads && a->dk == b->dk &&
	       a->dv == b->dv && a->mask == b->mask && a->align == b->align &&
	       a->layout == b->layout && a->packed == b->packed &&
	       a->window == b->window && a->scale == b->scale &&
	       a->softcap == b->softcap && a->alibi == b->alibi &&
	       a->max_bias == b->max_bias && a->sinks == b->sinks &&
	       a->window_sides == b->window_sides &&
	       a->window_left == b->window_left &&
	       a->window_right == b->window_right &&
	       a->mask_dims == b->mask_dims && a->varlen == b->varlen &&
	       a->kv_dtype == b->kv_dtype && a->dtype == b->dtype;
}

/* A number from argv in [lo, hi], else exit 2 naming it. */
static long arg(const char *s, const char *what, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "bench-ab: %s must be a whole number from %ld to "
		        "%ld, not '%s'\n", what, lo, hi, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static double t[2][MAX_ROUNDS], ratio[MAX_ROUNDS];
	struct mha_guarded out[2] = {{0}};
	struct inputs in;
	struct job j[2];
	double err[2], flops, peak, peak_end, med[2], ratio_med;
	char label[96];
	size_t rounds, batch;
	int cpu, check, one_out;

	if (argc != 6) {
		fprintf(stderr, "usage: ab ROUNDS BATCH CPU CHECK ONE_OUT\n");
		return 2;
	}
	bench_prog = "bench-ab";
	rounds = (size_t)arg(argv[1], "AB_ROUNDS", 1, MAX_ROUNDS);
	batch = (size_t)arg(argv[2], "AB_BATCH", 1, 4096);
	cpu = (int)arg(argv[3], "AB_CPU", 0, 4095);
	check = (int)arg(argv[4], "AB_CHECK", 0, 2);
	one_out = (int)arg(argv[5], "AB_ONE_OUT", 0, 1);
	if (sizeof shapes / sizeof shapes[0] != 2 ||
	    !same_spec(&shapes[0], &shapes[1])) {
		fprintf(stderr, "bench-ab: A and B are kernels of different "
		        "specs (AB_A and AB_B may change knobs and templates, not "
		        "what is computed)\n");
		return 2;
	}
	if (mha_pin_cpu(cpu)) {
		fprintf(stderr, "bench-ab: cannot run on CPU %d (AB_CPU)\n", cpu);
		return 2;
	}
	if (job_inputs(&in, &j[0], &shapes[0], batch, 0x6d686167656eull))
		return 1;
	job_label(label, sizeof label, &shapes[0], 1); /* the batch printed apart */
	flops = job_flops(&shapes[0], batch);
	fprintf(stderr, "bench-ab: %s: ", label);
	if (check != 2) {
		fprintf(stderr, "reference, ");
		job_run(&j[0]); /* the reference, into in.ref */
	}
	for (int k = 0; k < 2; ++k) {
		fprintf(stderr, "%s%c", k ? ", " : "", "AB"[k]);
		/* both at the inputs' page offset: the same cache sets (an output
		 * 256 bytes past it, where the guard put it, made h8 dk64 s512
		 * causal 1.2% slower on AVX-512, and B faster than A, its
		 * buffer elsewhere, in A against A) */
		if (mha_guarded_init_at(&out[k], in.no, in.q)) {
			fprintf(stderr, "\nbench-ab: out of memory\n");
			return 1;
		}
		j[k] = j[0];
		j[k].sh = &shapes[k];
		j[k].impl = KERNEL;
		j[k].out = out[k].data;
		mha_guarded_poison(&out[k]);
		job_run(&j[k]);
		job_out_floats(&j[k], out[k].data, out[k].n);
		if (check == 2) { /* no reference: the guards alone */
			if (mha_guarded_intact(&out[k]))
				continue;
			fprintf(stderr, "\nbench-ab: %c (%s) wrote outside its "
			        "output\n", "AB"[k], shapes[k].name);
			return 1;
		}
		err[k] = mha_guarded_intact(&out[k])
		         ? job_max_err(out[k].data, in.ref, in.no) : INFINITY;
		if (check && !(err[k] <= in.tol)) {
			fprintf(stderr, "\nbench-ab: %c (%s) differs from the "
			        "reference: max|err| %.3g > tolerance %.3g (AB_CHECK=0 "
			        "times it anyway)\n", "AB"[k], shapes[k].name, err[k],
			        in.tol);
			return 1;
		}
	}
	if (one_out)
		j[1].out = j[0].out;
	fprintf(stderr, check == 2 ? " run; FMA peak" : " compared with it; FMA peak");
	peak = job_peak(BENCH_WIDTH, mha_cpu_now);
	fprintf(stderr, "; %zu rounds", rounds);
	for (size_t r = 0; r < WARM_ROUNDS + rounds; ++r) {
		/* A first in even rounds, B first in odd ones: the second
		 * finds more of the inputs in cache */
		for (int i = 0; i < 2; ++i) {
			const int k = i ^ (int)(r & 1);
			double t0 = mha_cpu_now();
			job_run(&j[k]);
			if (r >= WARM_ROUNDS)
				t[k][r - WARM_ROUNDS] = mha_cpu_now() - t0;
		}
		if (r >= WARM_ROUNDS) {
			ratio[r - WARM_ROUNDS] = t[0][r - WARM_ROUNDS] /
			                         t[1][r - WARM_ROUNDS];
			if ((r - WARM_ROUNDS + 1) % (rounds / 10 + 1) == 0)
				fprintf(stderr, ".");
		}
	}
	fprintf(stderr, "; FMA peak again\n");
	peak_end = job_peak(BENCH_WIDTH, mha_cpu_now);
	for (int k = 0; k < 2; ++k) {
		med[k] = mha_median(t[k], rounds);
		/* the last call's outputs, as floats, for max|A - B| */
		job_out_floats(&j[k], out[k].data, out[k].n);
	}
	/* sorts ratio: its quartiles follow */
	ratio_med = mha_median(ratio, rounds);

	printf("%s, batch %zu: %zu rounds on CPU %d, 1 thread, CPU time per "
	       "call; FMA peak %.1f GFLOP/s (%.1f after); %c's code linked "
	       "first%s\n", label, batch, rounds, cpu, peak, peak_end,
	       (uintptr_t)shapes[0].fn < (uintptr_t)shapes[1].fn ? 'A' : 'B',
	       one_out ? "; both write A's output" : "");
	for (int k = 0; k < 2; ++k) {
		printf("  %c %-8s %10.4f ms", "AB"[k], shapes[k].name, med[k] * 1e3);
		if (shapes[k].seq_q == 1)
			printf("  %6.2f GB/s K+V", (double)in.kvbytes / med[k] * 1e-9);
		else
			printf("  %5.1f%% of peak", 100.0 * flops / med[k] * 1e-9 /
			       (peak > peak_end ? peak : peak_end));
		if (check == 2)
			printf("\n");
		else
			printf("  max|err| %.2g%s\n", err[k], err[k] <= in.tol ? "" :
			       " (beyond the tolerance: not checked, AB_CHECK=0)");
	}
	printf("  A/B %.3f (A's time over B's in a round, the median; above 1: B "
	       "faster); quartiles %.3f %.3f; the medians' ratio %.3f; "
	       "max|A - B| %.2g\n", ratio_med, ratio[rounds / 4],
	       ratio[3 * rounds / 4], med[0] / med[1],
	       job_max_err(out[0].data, out[1].data, in.no));
	job_inputs_free(&in);
	mha_guarded_free(&out[0]);
	mha_guarded_free(&out[1]);
	return 0;
}
