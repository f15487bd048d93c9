/* Aligned, guarded and fenced float buffers for tests and benchmarks. */
/* MAP_ANONYMOUS is not POSIX (2008); glibc and musl give it here. */
#define _DEFAULT_SOURCE

#include "mha_buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define POISON_BITS 0x7fc0deadu

float *mha_alloc(size_t n)
{
	/* exactly n floats, so a sanitizer sees any read past the end */
	size_t bytes = n * sizeof(float);
	void *p = NULL;

	if (posix_memalign(&p, 64, bytes ? bytes : sizeof(float)))
		return NULL;
	return p;
}

void mha_free(void *p)
{
	free(p);
}

static float poison(void)
{
	uint32_t u = POISON_BITS;
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

int mha_is_poison(float x)
{
	uint32_t u;

	memcpy(&u, &x, sizeof u);
	return u == POISON_BITS;
}

/* A fenced buffer's mapping: whole pages holding at least the guard floats
 * and the data, then the PROT_NONE page.  Its size follows from n. */
static size_t fenced_pages(size_t n, size_t page)
{
	size_t bytes = (n + MHA_GUARD) * sizeof(float);

	return (bytes + page - 1) / page * page;
}

float *mha_fenced_alloc(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t data = fenced_pages(n, page);
	char *map;
	float *p;

	if (n > (SIZE_MAX - 2 * page) / sizeof(float) - MHA_GUARD)
		return NULL;
	map = mmap(NULL, data + page, PROT_READ | PROT_WRITE,
	           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	if (mprotect(map + data, page, PROT_NONE) != 0) {
		munmap(map, data + page);
		return NULL;
	}
	p = (float *)(map + data) - n;
	for (float *g = (float *)map; g < p; ++g)
		*g = poison();
	return p;
}

void mha_fenced_free(float *p, size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t data = fenced_pages(n, page);

	if (p)
		munmap((char *)(p + n) - data, data + page);
}

int mha_fenced_intact(const float *p)
{
	for (size_t i = 1; i <= MHA_GUARD; ++i)
		if (!mha_is_poison(p[-(ptrdiff_t)i]))
			return 0;
	return 1;
}

int mha_guarded_init_fenced(struct mha_guarded *g, size_t n)
{
	g->n = n;
	g->base = NULL;
	g->data = mha_fenced_alloc(n);
	if (!g->data)
		return -1;
	mha_guarded_poison(g);
	return 0;
}

int mha_guarded_init(struct mha_guarded *g, size_t n)
{
	return mha_guarded_init_at(g, n, NULL);
}

/* the data at the address of like modulo PAGE_AT, after MHA_GUARD guard
 * floats or more (like NULL: right after MHA_GUARD); MHA_GUARD after it */
#define PAGE_AT 4096
int mha_guarded_init_at(struct mha_guarded *g, size_t n, const void *like)
{
	const size_t slack = like ? PAGE_AT / sizeof(float) : 0;
	size_t lead = MHA_GUARD;

	g->n = n;
	g->base = mha_alloc(n + 2 * MHA_GUARD + slack);
	if (!g->base)
		return -1;
	if (like) {
		const uintptr_t want = (uintptr_t)like % PAGE_AT;
		const uintptr_t at = (uintptr_t)(g->base + MHA_GUARD) % PAGE_AT;

		lead += (want + PAGE_AT - at) % PAGE_AT / sizeof(float);
	}
	g->data = g->base + lead;
	for (size_t i = 0; i < n + 2 * MHA_GUARD + slack; ++i)
		g->base[i] = poison();
	return 0;
}

void mha_guarded_free(struct mha_guarded *g)
{
	if (g->base)
		mha_free(g->base);
	else
		mha_fenced_free(g->data, g->n);
	g->base = g->data = NULL;
}

void mha_guarded_poison(struct mha_guarded *g)
{
	for (size_t i = 0; i < g->n; ++i)
		g->data[i] = poison();
}

int mha_guarded_intact(const struct mha_guarded *g)
{
	if (!g->base)
		return mha_fenced_intact(g->data);
	/* the guard before the data: from the allocation's start */
	for (float *p = g->base; p < g->data; ++p)
		if (!mha_is_poison(*p))
			return 0;
	for (size_t i = 0; i < MHA_GUARD; ++i)
		if (!mha_is_poison(g->data[g->n + i]))
			return 0;
	return 1;
}
