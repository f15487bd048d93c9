/* CPU feature detection: whether this machine runs a target's kernels. */
#ifndef MHA_CPU_H
#define MHA_CPU_H

/* 1 when the running CPU has every feature named in features (blank
 * separated, as a target table's cpu list: "avx2 fma"; "" for none), 0
 * otherwise or when a name is not one this file knows. */
int mha_cpu_has(const char *features);

/* The CPU model name, or "unknown". */
const char *mha_cpu_model(void);

#endif
