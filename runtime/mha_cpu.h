/* CPU feature detection: which kernel targets this machine can run. */
#ifndef MHA_CPU_H
#define MHA_CPU_H

/* 1 when the running CPU executes code for target ("scalar", "avx2",
 * "neon"); 0 otherwise or for an unknown name. */
int mha_cpu_supports(const char *target);

/* The best target this CPU runs: "avx2", "neon" or "scalar". */
const char *mha_cpu_best_target(void);

/* The CPU model name, or "unknown". */
const char *mha_cpu_model(void);

#endif
