/* Included by the AddressSanitizer build of the test kernels (the Makefile's
 * SAN_KFLAGS, with MHA_PREFETCH_MIN 0 so that every kernel prefetches its
 * next work item): each prefetch reads a byte at its address instead, so a
 * prefetch outside the inputs and outputs stops the test as a read there
 * would (the tests allocate them to the exact element). */
#ifndef MHA_PREFETCH_CHECK_H
#define MHA_PREFETCH_CHECK_H

static inline void mha_prefetch_check(const void *p)
{
	(void)*(const volatile char *)p;
}

#define __builtin_prefetch(p, ...) mha_prefetch_check(p)

#endif
