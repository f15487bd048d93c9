/* Reference of the whole layer (torch.nn.MultiheadAttention's forward):
 * projections, attention and output projection in double.  Used to check
 * generated layers. */
#ifndef MHA_LAYER_REF_H
#define MHA_LAYER_REF_H

#include "mha_abi.h"

/* out = MHA(query, key, value) of layer l with parameters p on the inputs
 * of x (x->packed is not read: p holds the parameters as PyTorch does),
 * every sum in double, rounded to float once into x->out.  Without
 * l->cross the keys and values are the query's rows and x->seq_kv is
 * seq_q.  Rows whose keys are all masked attend to nothing: their
 * attention output is zero, so their out is out_proj.bias.  With
 * x->head_weights also the softmax weights [batch][h][seq_q][seq_kv],
 * with x->weights their average over the heads [batch][seq_q][seq_kv]
 * (0 where masked; a row that sees no key all 0). */
void mha_ref_layer(const struct mha_layer *l, const struct mha_layer_params *p,
                   const struct mha_layer_args *x);

/* The decoder step of layer l (l->kv_cache > 0) in double: new_kv
 * [batch * seq_q][2 KE] gets the new tokens' k then v projections (KE =
 * kv_heads * E / h), and x->out the step's output, the attention reading
 * every key and value from x->k_cache and x->v_cache as they hold them
 * (l->attn.kv_dtype) -- the cached positions and the new tokens' as the
 * step under test stored them, which the caller checks against new_kv. */
void mha_ref_layer_step(const struct mha_layer *l,
                        const struct mha_layer_params *p,
                        const struct mha_layer_args *x, double *new_kv);

#endif
