// The package's entries against bindings/index.d.ts, on the types TypeScript
// infers from their code and JSDoc (node scripts/typecheck.mjs). This file:
// what holds whatever index.mjs's own types say: the entries export exactly
// the declared names, each init takes the declared options, and the members
// implemented outside index.mjs have the declared signatures. runtime.mts
// checks what init resolves to. dist/index.cjs is node.mjs bundled as
// CommonJS (scripts/build.mjs), so node.mjs stands for it.
import type * as Declared from '../../../bindings/index.d.ts';
import * as core from '../../../bindings/index.mjs';
import * as browser from '../../../bindings/browser.mjs';
import * as node from '../../../bindings/node.mjs';
import { crossEntropy } from '../../../bindings/nn/loss.mjs';

/**
 * The declared value exports. index.d.ts is CommonJS-format for TypeScript
 * (the package has no "type": "module"), so an import of it also has the
 * synthetic `default`.
 */
type DeclaredNames = Exclude<keyof typeof Declared, 'default'>;
/** What an entry lacks of the declared exports, and what it adds. */
type Names<Entry> = { missing: Exclude<DeclaredNames, keyof Entry>; undeclared: Exclude<keyof Entry, DeclaredNames> };
declare const browserNames: Names<typeof browser>;
declare const nodeNames: Names<typeof node>;
declare const coreNames: Names<typeof core>;

// Every declared value export is there, and nothing undeclared.
export const names: { missing: never; undeclared: never }[] = [coreNames, browserNames, nodeNames];

/**
 * Every call the declaration allows, the implementation takes (count,
 * optionality and types of the parameters: stricter than assignability, which
 * compares a method's parameters both ways and ignores optionality), and it
 * returns what is declared. For one signature (the last of overloads).
 */
export type Conforms<Impl extends (...args: any[]) => unknown, Decl extends (...args: any[]) => unknown> =
  [Parameters<Decl>] extends [Parameters<Impl>]
    ? ([ReturnType<Impl>] extends [ReturnType<Decl>] ? true : 'returns another type')
    : 'takes other parameters';

// init(options?) with the declared options (what it resolves to: runtime.mts).
type InitCall = (options?: Declared.InitOptions) => Promise<unknown>;
export const initTakesOptions: [
  Conforms<typeof core.init, InitCall>,
  Conforms<typeof browser.init, InitCall>,
  Conforms<typeof node.init, InitCall>,
] = [true, true, true];

// The runtime's methods that are module functions elsewhere, as declared.
export const crossEntropyConforms:
  Conforms<typeof crossEntropy, Declared.CausalAttentionRuntime['crossEntropy']> = true;
