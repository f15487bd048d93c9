#include "mha_cpu.h"

#include <stdio.h>
#include <string.h>

int mha_cpu_supports(const char *target)
{
	if (strcmp(target, "scalar") == 0)
		return 1;
#if defined(__x86_64__) || defined(__i386__)
	if (strcmp(target, "avx2") == 0) {
		__builtin_cpu_init();
		return __builtin_cpu_supports("avx2") &&
		       __builtin_cpu_supports("fma");
	}
	if (strcmp(target, "avx512") == 0) {
		__builtin_cpu_init();
		return __builtin_cpu_supports("avx512f");
	}
#endif
#if defined(__aarch64__)
	if (strcmp(target, "neon") == 0)
		return 1; /* Advanced SIMD is mandatory on AArch64 */
#endif
	return 0;
}

const char *mha_cpu_best_target(void)
{
	if (mha_cpu_supports("avx512"))
		return "avx512";
	if (mha_cpu_supports("avx2"))
		return "avx2";
	if (mha_cpu_supports("neon"))
		return "neon";
	return "scalar";
}

const char *mha_cpu_model(void)
{
	static char model[128];
	char line[256];
	FILE *f;

	if (model[0])
		return model;
	strcpy(model, "unknown");
	f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return model;
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (colon && strncmp(line, "model name", 10) == 0) {
			colon += 2;
			colon[strcspn(colon, "\n")] = '\0';
			snprintf(model, sizeof model, "%s", colon);
			break;
		}
	}
	fclose(f);
	return model;
}
