// The package's entries against bindings/index.d.ts (see entries.mts):
// index.mjs's init, with what it resolves to (the runtime, its functions, its
// module classes and optimizers, the KV cache, worker mode's proxy), is
// assignable to the declared init, overloads included; node.mjs's and
// index.cjs's return what it returns. A member renamed or missing, a
// parameter added, a result of another shape is an error here.
// (Assignability compares a method's parameter types both ways: a narrowed
// parameter passes; entries.mts's Conforms is stricter where it is used.)
import type * as Declared from '../../../bindings/index.d.ts';
import * as browser from '../../../bindings/index.mjs';
import * as node from '../../../bindings/node.mjs';
import cjs from '../../../bindings/index.cjs';

export const init: typeof Declared.init = browser.init;
// The other entries forward to it (their result: any overload's).
type Forwarded = (options?: Declared.InitOptions) => ReturnType<typeof Declared.init>;
export const forwarders: Forwarded[] = [node.init, cjs.init];

/** What init() resolves to on the calling thread. */
type Runtime = Exclude<Awaited<ReturnType<typeof browser.init>>, Declared.RemoteRuntime>;
declare const runtime: Runtime;
// The same check on the runtime alone, for errors that name its members.
export const runtimeConforms: Declared.CausalAttentionRuntime = runtime;

// An `any` would pass anything: the runtime and its members must not be.
type IsAny<T> = 0 extends 1 & T ? true : false;
/** The members of T that are any, or methods returning any. */
type AnyMembers<T> = {
  [K in keyof T]-?: IsAny<T[K]> extends true ? K
    : T[K] extends (...args: any[]) => infer R ? (IsAny<R> extends true ? K : never) : never;
}[keyof T];
export const runtimeIsTyped: IsAny<Runtime> = false;
export const membersThatAreAny: { [K in AnyMembers<Runtime>]: never } = {};
