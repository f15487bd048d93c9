/* CPU feature detection: the features target tables name, tested here. */
#include "mha_cpu.h"

#include <stdio.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* Every feature a target table (templates/targets/NAME.lua, cpu = {...})
 * may name; a new one is added here.  __builtin_cpu_supports takes only a
 * string literal, hence one line each. */
static int has(const char *f, size_t n)
{
#define IS(name) (n == sizeof name - 1 && strncmp(f, name, n) == 0)
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	if (IS("avx2"))
		return __builtin_cpu_supports("avx2");
	if (IS("fma"))
		return __builtin_cpu_supports("fma");
	if (IS("f16c")) {
		/* CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports
		 * does not know "f16c") */
		unsigned a, b, c, d;
		return __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1u);
	}
	if (IS("avx512f"))
		return __builtin_cpu_supports("avx512f");
	if (IS("avx512dq"))
		return __builtin_cpu_supports("avx512dq");
	if (IS("avx512bw"))
		return __builtin_cpu_supports("avx512bw");
	if (IS("avx512vl"))
		return __builtin_cpu_supports("avx512vl");
#endif
#if defined(__aarch64__)
	if (IS("neon"))
		return 1; /* Advanced SIMD is mandatory on AArch64 */
#endif
#undef IS
	return 0;
}

int mha_cpu_has(const char *features)
{
	const char *p = features;

	for (;;) {
		size_t n;
		p += strspn(p, " ");
		n = strcspn(p, " ");
		if (n == 0)
			return 1;
		if (!has(p, n))
			return 0;
		p += n;
	}
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
