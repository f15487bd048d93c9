/* cpu_has 'FEATURES': exit 0 when this CPU has every feature named (a
 * target table's cpu list, as build/targets.mk's MHA_CPU_t), 1 when not:
 * make bench's check that BENCH_TARGET runs here, before any of its
 * kernels is built or timed (runtime/mha_cpu.c). */
#include <stdio.h>

#include "../runtime/mha_cpu.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: cpu_has 'FEATURES'\n");
		return 2;
	}
	return mha_cpu_has(argv[1]) ? 0 : 1;
}
