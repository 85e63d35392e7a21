// The package's entries against bindings/index.d.ts (see entries.mts): each
// entry's init, with what it resolves to — the runtime, its functions, its
// module classes and optimizers, the KV cache, worker mode's proxy — is
// assignable to the declared init, overloads included. A method renamed or
// missing, a parameter added, a result of another shape is an error here.
// An `any` would pass anything, so the runtime and its members must not be.
import type * as Declared from '../../../bindings/index.d.ts';
import * as browser from '../../../bindings/index.mjs';
import * as node from '../../../bindings/node.mjs';
import cjs from '../../../bindings/index.cjs';

export const inits: (typeof Declared.init)[] = [browser.init, node.init, cjs.init];

type IsAny<T> = 0 extends 1 & T ? true : false;
/** The members of T that are any, or are methods returning any. */
type AnyMembers<T> = {
  [K in keyof T]-?: IsAny<T[K]> extends true ? K
    : T[K] extends (...args: any[]) => infer R ? (IsAny<R> extends true ? K : never) : never;
}[keyof T];

/** What init() resolves to (an error names the members that are any). */
type Runtime = Awaited<ReturnType<typeof node.init>>;
export const runtimeIsTyped: IsAny<Runtime> = false;
export const noAnyMembers: [AnyMembers<Runtime>] extends [never] ? true : AnyMembers<Runtime> = true;
