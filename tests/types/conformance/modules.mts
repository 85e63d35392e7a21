// The module classes a runtime binds (nn/modules.mjs's defineModules) against
// the constructors CausalAttentionRuntime declares, on the types inferred from
// their JSDoc: a checked part of what runtime.mts checks once index.mjs is
// typed (it covers the whole runtime: see scripts/typecheck.mjs).
import type * as Declared from '../../../bindings/index.d.ts';
import { defineModules } from '../../../bindings/nn/modules.mjs';

/** The runtime's module classes, as declared. */
type DeclaredModules = Pick<Declared.CausalAttentionRuntime,
  'Module' | 'ModuleList' | 'Sequential' | 'Linear' | 'Embedding' | 'SelfAttention' | 'CausalAttention'
  | 'MultiHeadAttentionWrapper' | 'MultiHeadAttention' | 'GroupedQueryAttention'>;

declare const modules: ReturnType<typeof defineModules>;
export const modulesConform: DeclaredModules = modules;
// Nothing bound that is not declared.
export const nothingUndeclared: Exclude<keyof typeof modules, keyof DeclaredModules> extends never ? true : false = true;
