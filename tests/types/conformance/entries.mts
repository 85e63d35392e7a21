// The package's entries against bindings/index.d.ts, on the types TypeScript
// infers from their code and JSDoc (node scripts/typecheck.mjs). This file:
// what holds whatever index.mjs's own types say — the entries export exactly
// the declared names, each init takes the declared options, and the members
// implemented outside index.mjs have the declared signatures. runtime.mts
// checks what init resolves to.
import type * as Declared from '../../../bindings/index.d.ts';
import * as browser from '../../../bindings/index.mjs';
import * as node from '../../../bindings/node.mjs';
import cjs from '../../../bindings/index.cjs';
import { crossEntropy } from '../../../bindings/nn/loss.mjs';

/** true when A and B are the same set of names. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/**
 * The declared value exports. index.d.ts is CommonJS-format for TypeScript
 * (the package has no "type": "module"), so an import of it also has the
 * synthetic `default`.
 */
type DeclaredNames = Exclude<keyof typeof Declared, 'default'>;

// Every declared value export is there, and nothing undeclared.
export const names: [
  Same<keyof typeof browser, DeclaredNames>,
  Same<keyof typeof node, DeclaredNames>,
  Same<keyof typeof cjs, DeclaredNames>,
] = [true, true, true];

// init(options?) with the declared options: no parameter added, none of
// another type.
type InitCall = (options?: Declared.InitOptions) => Promise<unknown>;
export const initCalls: InitCall[] = [browser.init, node.init, cjs.init];

// The runtime's methods that are module functions elsewhere, as declared.
export const members: {
  crossEntropy: Declared.CausalAttentionRuntime['crossEntropy'];
} = { crossEntropy };
