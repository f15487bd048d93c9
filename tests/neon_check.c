/* The AArch64 side of the kernel tests: built for AArch64 with the same
 * check code (every target of that architecture, and the portable ones), run
 * under qemu-aarch64 by tests/test_neon.c.
 *   neon_check            check every linked kernel and layer; one line each
 *   neon_check NAME...    only these kernels and layers
 *   neon_check --list     print the kernel and layer names
 *   neon_check --exp      each exp's max ulp error over [-87, 0] (2^x's
 *                         over [-126, 0]) against its bound, then each 2^x's
 *                         special values (ulp_special2); one line each
 * Exit status 0 when every check passed. */
#include <stdio.h>
#include <string.h>

#include "registry.h"
#include "ulp.h"

#define MHA_KERNEL MHA_PROTO
#include "kernels.inc"
#include "generated/kernels.inc"
#undef MHA_KERNEL

#define MHA_KERNEL MHA_ENTRY
static const struct mha_kernel kernels[] = {
#include "kernels.inc"
#include "generated/kernels.inc"
};
#undef MHA_KERNEL
#define NKERNELS (sizeof kernels / sizeof kernels[0])

/* the layers of tests/layers.list (mhagen --embed) */
#define MHA_LAYER MHA_LAYER_PROTO
#include "layer/layers.inc"
#undef MHA_LAYER
#define MHA_LAYER MHA_LAYER_ENTRY
static const struct mha_layer_kernel layers[] = {
#include "layer/layers.inc"
};
#undef MHA_LAYER
#define NLAYERS (sizeof layers / sizeof layers[0])

int main(int argc, char **argv)
{
	char msg[1024];
	int failed = 0, ran = 0;

	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < NKERNELS; ++i)
			printf("%s\n", kernels[i].name);
		for (size_t i = 0; i < NLAYERS; ++i)
			printf("%s\n", layers[i].name);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--exp") == 0) {
		for (size_t i = 0; i < ulp_nexps; ++i)
			for (int base2 = 0; base2 < 2; ++base2) {
				float worst;
				double ulp = ulp_max_exp(base2 ? ulp_exps[i].fn2 : ulp_exps[i].fn,
				                         base2, 61, &worst);
				printf("%s %s %s %.6f ulp at %a (bound %g)\n",
				       ulp <= ulp_exps[i].bound ? "ok" : "FAIL", ulp_exps[i].name,
				       base2 ? "exp2" : "exp", ulp, (double)worst, ulp_exps[i].bound);
				failed += ulp > ulp_exps[i].bound;
			}
		for (size_t i = 0; i < ulp_nexps; ++i) {
			const int bad = ulp_special2(ulp_exps[i].fn2, msg, sizeof msg);

			printf("%s %s exp2 special values%s%s\n", bad ? "FAIL" : "ok",
			       ulp_exps[i].name, bad ? ": " : "", bad ? msg : "");
			failed += bad;
		}
		return failed ? 1 : 0;
	}
	for (size_t i = 0; i < NKERNELS; ++i) {
		int wanted = argc == 1;
		for (int a = 1; a < argc; ++a)
			wanted |= strcmp(argv[a], kernels[i].name) == 0;
		if (!wanted)
			continue;
		++ran;
		if (check_kernel(&kernels[i], i, msg, sizeof msg)) {
			printf("FAIL %s\n", msg);
			++failed;
		} else {
			printf("ok %s\n", kernels[i].name);
		}
	}
	for (size_t i = 0; i < NLAYERS; ++i) {
		int wanted = argc == 1;
		for (int a = 1; a < argc; ++a)
			wanted |= strcmp(argv[a], layers[i].name) == 0;
		if (!wanted)
			continue;
		++ran;
		if (check_layer(&layers[i], msg, sizeof msg)) {
			printf("FAIL %s\n", msg);
			++failed;
		} else {
			printf("ok %s\n", layers[i].name);
		}
	}
	if (ran == 0) {
		printf("FAIL no kernel matched\n");
		return 1;
	}
	return failed ? 1 : 0;
}
