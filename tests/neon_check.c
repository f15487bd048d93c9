/* The NEON side of the kernel tests: built for AArch64 with the same check
 * code, run under qemu-aarch64 by tests/test_neon.c.
 *   neon_check            check every linked kernel; one line each
 *   neon_check NAME...    only these kernels
 *   neon_check --list     print the kernel names
 *   neon_check --exp      print the exp's max ulp error over [-87, 0]
 *   neon_check --expfast  the same for the fast exp
 * Exit status 0 when every check passed. */
#include <stdio.h>
#include <string.h>

#include "registry.h"
#include "ulp.h"

#define MHA_KERNEL_SCALAR MHA_PROTO
#define MHA_KERNEL_NEON MHA_PROTO
#define MHA_KERNEL_AVX2 MHA_SKIP
#define MHA_KERNEL_AVX512 MHA_SKIP
#include "scalar/kernels.inc"
#include "neon/kernels.inc"
#include "generated/kernels.inc"
#undef MHA_KERNEL_SCALAR
#undef MHA_KERNEL_NEON

static const struct mha_kernel kernels[] = {
#define MHA_KERNEL_SCALAR MHA_ENTRY
#define MHA_KERNEL_NEON MHA_ENTRY
#include "scalar/kernels.inc"
#include "neon/kernels.inc"
#include "generated/kernels.inc"
};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

void mha_exp_neon(const float *x, float *y, size_t n);
void mha_expfast_neon(const float *x, float *y, size_t n);

int main(int argc, char **argv)
{
	char msg[1024];
	int failed = 0, ran = 0;

	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < NKERNELS; ++i)
			printf("%s\n", kernels[i].name);
		return 0;
	}
	if (argc == 2 && (strcmp(argv[1], "--exp") == 0 ||
	                  strcmp(argv[1], "--expfast") == 0)) {
		float worst;
		double ulp = ulp_max_exp(strcmp(argv[1], "--exp") == 0 ?
		                         mha_exp_neon : mha_expfast_neon, 61, &worst);
		printf("exp %.6f ulp at %a\n", ulp, (double)worst);
		return 0;
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
	if (ran == 0) {
		printf("FAIL no kernel matched\n");
		return 1;
	}
	return failed ? 1 : 0;
}
