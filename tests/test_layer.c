/* Every generated layer (tests/layers.list, mhagen --embed) of the targets
 * this machine builds against the double-precision reference of the whole
 * layer (runtime/mha_layer_ref.c). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>

#include "../runtime/mha_cpu.h"
#include "kern/count.h"
#include "params.h"
#include "registry.h"

#define MHA_LAYER MHA_LAYER_PROTO
#include "layer/layers.inc"
#undef MHA_LAYER

#define MHA_LAYER MHA_LAYER_ENTRY
static const struct mha_layer_kernel layers[] = {
#include "layer/layers.inc"
};
#undef MHA_LAYER

#define NLAYERS (sizeof layers / sizeof layers[0])

/* The build links each listed layer once per target of this machine. */
Test(layers, all_linked)
{
	cr_assert_eq(NLAYERS, (size_t)LAYERS_LISTED * TARGETS_HOST,
	             "%zu layers linked, the list has %d for each of %d targets",
	             NLAYERS, LAYERS_LISTED, TARGETS_HOST);
}

ParameterizedTestParameters(layers, match_reference)
{
	return params_index(NLAYERS);
}

/* Each layer, every case: the forward within tolerance of the reference,
 * every output written, the workspace call bit for bit the malloc one. */
ParameterizedTest(int *index, layers, match_reference)
{
	const struct mha_layer_kernel *k = &layers[*index];
	char msg[1024];

	if (!mha_cpu_has(k->cpu))
		cr_skip_test("this CPU cannot run %s layers (needs %s)", k->target,
		             k->cpu);
	cr_assert(check_layer(k, msg, sizeof msg) == 0, "%s", msg);
}
