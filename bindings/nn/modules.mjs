// The modules a runtime offers (ca.Linear, ca.CausalAttention, ...): the
// classes, defined once at module scope in this folder (module.mjs: the
// base nn.Module; linear.mjs, embedding.mjs, attention.mjs, containers.mjs),
// bound to one runtime by small subclasses (module.mjs's bindClasses); the
// base ca.Module is shared.
//
// Training follows PyTorch's contract: a forward in training mode keeps what
// its backward needs; backward(gradOutput) returns the gradient of the input
// and accumulates (+=) each parameter's gradient into the same array
// (weightGrad, biasGrad: null until a backward, like .grad); gradients()
// names them as the state dict does; zeroGrad() resets them; parameters()
// hands them to an optimizer (optim.mjs).
//
// Parameters and gradients are JS-owned Float32Arrays; the only wasm memory
// a module holds is an attention module's KV cache (attention.mjs).

import {
  CausalAttention, GroupedQueryAttention, MultiHeadAttention, MultiHeadAttentionWrapper, SelfAttention,
} from './attention.mjs';
import { ModuleList, Sequential } from './containers.mjs';
import { Embedding } from './embedding.mjs';
import { Linear } from './linear.mjs';
import { Module, bindClasses } from './module.mjs';

export { Parameter } from './module.mjs';

/**
 * The classes for one runtime: subclasses of the module-scope classes bound
 * to `engine`, which provides:
 *   generator            the runtime's MT19937 (manualSeed)
 *   checkAlive()         throws after dispose
 *   layerForward(call)   runs src/layer.h's layer on copies of the arrays
 *                        (with call.keep, also returns `saved`: the
 *                        activations AttentionLayerBackward needs)
 *   layerBackward(call)  runs its backward → { gradX, grads } (the grads
 *                        passed in plus this backward's, as new arrays)
 *   linearForward(...)   runs Linear
 *   linearBackward(...)  runs LinearBackward → { gradX, weightGrad, biasGrad }
 *   createCache(layout)  a KVCache (bindings/engine/kv-cache.mjs) for useCache
 */
export function defineModules(engine) {
  // Module itself needs no runtime: every runtime shares it, so that any
  // module is `instanceof ca.Module` and a model may extend it.
  return {
    Module,
    ...bindClasses(engine, [
      Linear, Embedding, SelfAttention, CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention,
      GroupedQueryAttention, ModuleList, Sequential,
    ]),
  };
}
