// The module classes a runtime binds (nn/modules.mjs's defineModules) against
// the constructors CausalAttentionRuntime declares, on the types inferred from
// their JSDoc, on their own (runtime.mts checks them again as members of the
// runtime init() resolves to).
import type * as Declared from '../../../bindings/index.d.ts';
import { defineModules } from '../../../bindings/nn/modules.mjs';

/** The runtime's module classes, as declared. */
type DeclaredModules = Pick<Declared.CausalAttentionRuntime,
  'Module' | 'ModuleList' | 'Sequential' | 'Linear' | 'Embedding' | 'SelfAttention' | 'CausalAttention'
  | 'MultiHeadAttentionWrapper' | 'MultiHeadAttention' | 'GroupedQueryAttention' | 'LayerNorm' | 'RMSNorm' | 'GELU'
  | 'SiLU' | 'Dropout' | 'FeedForward' | 'TransformerBlock' | 'GPTModel' | 'GatedFeedForward' | 'Llama3TransformerBlock'
  | 'Llama3Model'>;

declare const modules: ReturnType<typeof defineModules>;
export const modulesConform: DeclaredModules = modules;
// Nothing bound that is not declared.
export const nothingUndeclared: Exclude<keyof typeof modules, keyof DeclaredModules> extends never ? true : false = true;
