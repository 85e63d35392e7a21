// The modules a runtime offers (ca.Linear, ca.CausalAttention, ...): the
// classes, defined once at module scope in this folder (module.mjs: the
// base nn.Module; linear.mjs, embedding.mjs, attention.mjs,
// grouped-query-attention.mjs, containers.mjs),
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

import { CausalAttention, MultiHeadAttention, MultiHeadAttentionWrapper, SelfAttention } from './attention.mjs';
import { ModuleList, Sequential } from './containers.mjs';
import { Embedding } from './embedding.mjs';
import { FeedForward, GPTModel, TransformerBlock } from './gpt.mjs';
import { GatedFeedForward, Llama3Model, Llama3TransformerBlock } from './llama.mjs';
import { Dropout, GELU, LayerNorm, RMSNorm, SiLU } from './norm.mjs';
import { GroupedQueryAttention } from './grouped-query-attention.mjs';
import { Linear } from './linear.mjs';
import { Module, bindClasses } from './module.mjs';

export { Parameter } from './module.mjs';

/**
 * @import { Module as PublicModule } from './layers.d.ts'
 * @import { Engine } from './module.mjs'
 */

/**
 * The classes a runtime binds (each subclass has its base's name and
 * constructor), with what their types cannot say: a list's entries are
 * also its indexed properties (containers.mjs defines them), and a
 * GroupedQueryAttention always has what ProjectedAttention sets for it
 * alone (and a contextLength).
 * @typedef {{ Linear: typeof Linear, Embedding: typeof Embedding, SelfAttention: typeof SelfAttention,
 *   CausalAttention: typeof CausalAttention, MultiHeadAttentionWrapper: typeof MultiHeadAttentionWrapper,
 *   MultiHeadAttention: typeof MultiHeadAttention,
 *   GroupedQueryAttention: new (...args: ConstructorParameters<typeof GroupedQueryAttention>)
 *     => GroupedQueryAttention & { numKVGroups: number, groupSize: number, outProj: Linear, contextLength: number },
 *   ModuleList: new <M extends PublicModule = PublicModule>(modules?: Iterable<M>) => ModuleList<M> & Indexed<M>,
 *   Sequential: new <M extends PublicModule = PublicModule>(...modules: M[]) => Sequential<M> & Indexed<M>,
 *   LayerNorm: typeof LayerNorm, RMSNorm: typeof RMSNorm, GELU: typeof GELU, SiLU: typeof SiLU, Dropout: typeof Dropout,
 *   FeedForward: typeof FeedForward, TransformerBlock: typeof TransformerBlock, GPTModel: typeof GPTModel,
 *   GatedFeedForward: typeof GatedFeedForward, Llama3TransformerBlock: typeof Llama3TransformerBlock,
 *   Llama3Model: typeof Llama3Model,
 * }} ModuleClasses
 */

/**
 * @template M
 * @typedef {{ readonly [index: number]: M }} Indexed
 */

/**
 * The classes for one runtime: subclasses of the module-scope classes bound
 * to `engine` (module.mjs's Engine says what it provides).
 * @param {Engine} engine
 * @returns {ModuleClasses & { Module: typeof Module }}
 */
export function defineModules(engine) {
  // Module itself needs no runtime: every runtime shares it, so that any
  // module is `instanceof ca.Module` and a model may extend it.
  return {
    Module,
    ...bindClasses(engine, {
      Linear, Embedding, SelfAttention, CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention,
      GroupedQueryAttention, ModuleList, Sequential, LayerNorm, RMSNorm, GELU, SiLU, Dropout,
      FeedForward, TransformerBlock, GPTModel, GatedFeedForward, Llama3TransformerBlock, Llama3Model,
    }),
  };
}
