/* Kernels of a --target list (tests/dispatch.list, built with no ISA flags):
 * each variant, forced in turn through MHAGEN_VARIANT, matches the
 * reference, embeds (tests/props.h) and is the one NAME_variant() names;
 * without a choice the best variant this CPU runs is chosen, once, also
 * when threads race on the first call. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/mha_cpu.h"
#include "disp/facts.h"
#include "params.h"
#include "props.h"
#include "registry.h"

#define MHA_KERNEL MHA_PROTO
#include "disp/kernels.inc"
#undef MHA_KERNEL
#define MHA_KERNEL(name, ...) const char *name##_variant(void);
#include "disp/kernels.inc"
#undef MHA_KERNEL

#define MHA_KERNEL MHA_ENTRY
static const struct mha_kernel kernels[] = {
#include "disp/kernels.inc"
};
#undef MHA_KERNEL
/* each kernel's NAME_variant, in the same order */
#define MHA_KERNEL(name, ...) name##_variant,
static const char *(*const variant_of[])(void) = {
#include "disp/kernels.inc"
};
#undef MHA_KERNEL

#define NKERNELS (sizeof kernels / sizeof kernels[0])

/* The list's targets, best first, with the CPU features each needs. */
static const struct {
	const char *name, *cpu;
} targets[] = {DISPATCH_TARGETS};

#define NTARGETS (sizeof targets / sizeof targets[0])

/* The first target of the list this CPU runs: what is chosen unforced. */
static const char *best(void)
{
	for (size_t t = 0; t < NTARGETS; ++t)
		if (mha_cpu_has(targets[t].cpu))
			return targets[t].name;
	return NULL;
}

/* Every kernel of the list was built, for the whole list of targets. */
Test(dispatch, every_kernel_every_target)
{
	char list[256] = "";

	cr_assert_eq(NKERNELS, DISPATCH_LISTED, "%zu kernels, %d listed",
	             NKERNELS, DISPATCH_LISTED);
	cr_assert_geq(NTARGETS, 2, "a list of one target tests no dispatch");
	for (size_t t = 0; t < NTARGETS; ++t)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
		         t ? "," : "", targets[t].name);
	for (size_t i = 0; i < NKERNELS; ++i)
		cr_assert_str_eq(kernels[i].target, list, "%s", kernels[i].name);
}

ParameterizedTestParameters(dispatch, forced_variant)
{
	return params_index(NKERNELS * NTARGETS);
}

/* Each kernel with each variant forced: it matches the reference on its
 * case matrix (an --lse kernel's key ranges merge too), and NAME_variant() names the variant forced, or, when this
 * CPU lacks it, the best one (a variant the CPU lacks never runs). */
ParameterizedTest(int *index, dispatch, forced_variant)
{
	const size_t i = (size_t)*index / NTARGETS, t = (size_t)*index % NTARGETS;
	const struct mha_kernel *k = &kernels[i];
	const int has = mha_cpu_has(targets[t].cpu);
	const char *want = has ? targets[t].name : best();
	char msg[1024];

	cr_assert_not_null(want, "this CPU runs none of the variants");
	cr_assert_eq(setenv("MHAGEN_VARIANT", targets[t].name, 1), 0);
	cr_assert(check_kernel(k, i, msg, sizeof msg) == 0, "%s forced to %s: %s",
	          k->name, targets[t].name, msg);
	cr_assert(props_embedding(k, msg, sizeof msg) == 0, "%s forced to %s: %s",
	          k->name, targets[t].name, msg);
	if (props_lse_splits(k))
		cr_assert(props_lse_merge(k, msg, sizeof msg) == 0,
		          "%s forced to %s: %s", k->name, targets[t].name, msg);
	cr_assert_str_eq(variant_of[i](), want, "%s forced to %s%s", k->name,
	                 targets[t].name, has ? "" : " (which this CPU lacks)");
}

ParameterizedTestParameters(dispatch, best_variant)
{
	return params_index(NKERNELS);
}

/* Unforced, or forced to a name of no variant: the best variant this CPU
 * runs, chosen on the first call and kept. */
ParameterizedTest(int *index, dispatch, best_variant)
{
	const size_t i = (size_t)*index;
	char msg[1024];

	if (i % 2)
		cr_assert_eq(setenv("MHAGEN_VARIANT", "nonesuch", 1), 0);
	else
		cr_assert_eq(unsetenv("MHAGEN_VARIANT"), 0);
	cr_assert_str_eq(variant_of[i](), best(), "%s", kernels[i].name);
	/* the choice is made once: a later change of the environment is
	 * not seen */
	cr_assert_eq(setenv("MHAGEN_VARIANT", targets[NTARGETS - 1].name, 1), 0);
	cr_assert(check_kernel(&kernels[i], i, msg, sizeof msg) == 0, "%s: %s",
	          kernels[i].name, msg);
	cr_assert_str_eq(variant_of[i](), best(), "%s", kernels[i].name);
}

#define RACERS 8

/* Threads that meet at a barrier, then each make the first call. */
struct race {
	pthread_barrier_t start;
	const char *(*variant)(void);
	const char *got[RACERS];
};

static struct race race;

static void *racer(void *arg)
{
	const size_t r = (size_t)arg;

	pthread_barrier_wait(&race.start);
	race.got[r] = race.variant();
	return NULL;
}

/* Threads racing on a kernel's first call all get the same variant, the
 * one forced (the last of the list: scalar-like, run by every CPU). */
Test(dispatch, threads_choose_alike)
{
	pthread_t th[RACERS];

	cr_assert_eq(setenv("MHAGEN_VARIANT", targets[NTARGETS - 1].name, 1), 0);
	cr_assert(mha_cpu_has(targets[NTARGETS - 1].cpu));
	race.variant = variant_of[0];
	cr_assert_eq(pthread_barrier_init(&race.start, NULL, RACERS), 0);
	for (size_t r = 0; r < RACERS; ++r)
		cr_assert_eq(pthread_create(&th[r], NULL, racer, (void *)r), 0);
	for (size_t r = 0; r < RACERS; ++r)
		pthread_join(th[r], NULL);
	pthread_barrier_destroy(&race.start);
	for (size_t r = 0; r < RACERS; ++r)
		cr_assert_str_eq(race.got[r], targets[NTARGETS - 1].name,
		                 "thread %zu", r);
}
