#include "mha_buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

int mha_guarded_init(struct mha_guarded *g, size_t n)
{
	g->n = n;
	g->base = mha_alloc(n + 2 * MHA_GUARD);
	if (!g->base)
		return -1;
	g->data = g->base + MHA_GUARD;
	for (size_t i = 0; i < n + 2 * MHA_GUARD; ++i)
		g->base[i] = poison();
	return 0;
}

void mha_guarded_free(struct mha_guarded *g)
{
	mha_free(g->base);
	g->base = g->data = NULL;
}

void mha_guarded_poison(struct mha_guarded *g)
{
	for (size_t i = 0; i < g->n; ++i)
		g->data[i] = poison();
}

int mha_guarded_intact(const struct mha_guarded *g)
{
	for (size_t i = 0; i < MHA_GUARD; ++i)
		if (!mha_is_poison(g->base[i]) ||
		    !mha_is_poison(g->data[g->n + i]))
			return 0;
	return 1;
}
