// The package's entries against bindings/index.d.ts (see entries.mts):
// index.mjs's init, with what it resolves to (the runtime, its functions, its
// module classes and optimizers, the KV cache, worker mode's proxy), is
// assignable to the declared init, overloads included; node.mjs's and
// browser.mjs's return what it returns (dist/index.cjs is node.mjs bundled:
// entries.mts). A member renamed or missing, a
// parameter added, a result of another shape is an error here.
// Assignability compares a method's parameter types both ways and lets a
// parameter be dropped, so `mismatches` below also compares each member
// (the runtime's, optim's, the module and KV-cache instances' methods) with
// entries.mts's stricter Conforms: a dropped or narrowed parameter is an
// error there, naming the member.
import type * as Declared from '../../../bindings/index.d.ts';
import * as core from '../../../bindings/index.mjs';
import * as browser from '../../../bindings/browser.mjs';
import * as node from '../../../bindings/node.mjs';

// When the runtime does not conform, this line's error may be TS2719 "Two
// different types with this name exist, but they are unrelated" (both
// overload sets print alike): read runtimeConforms's error below, which
// names the member.
export const init: typeof Declared.init = core.init;
// The other entries forward to it (their result: any overload's).
type Forwarded = (options?: Declared.InitOptions) => ReturnType<typeof Declared.init>;
export const forwarders: Forwarded[] = [node.init, browser.init];

/** What init() resolves to on the calling thread. */
type Runtime = Exclude<Awaited<ReturnType<typeof core.init>>, Declared.RemoteRuntime>;
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

// Stricter, member by member (entries.mts's Conforms): every call the
// declaration allows, the implementation takes. Assignability above lets a
// method or constructor that drops a parameter, or narrows one, pass.
import type { Conforms } from './entries.mjs';
type D = Declared.CausalAttentionRuntime;
type Fn = (...args: any[]) => unknown;
type Ctor = abstract new (...args: any[]) => unknown;
/** What a member lacks of its declaration: 'takes other parameters', 'returns another type', or never. */
type Mismatch<Impl, Decl> =
  Decl extends Fn ? (Impl extends Fn ? Exclude<Conforms<Impl, Decl>, true> : 'not a function')
  : Decl extends Ctor ? (Impl extends Ctor
    ? ([ConstructorParameters<Decl>] extends [ConstructorParameters<Impl>] ? never : 'takes other parameters')
    : 'not a class')
  : never;
/** The members of Decl that Impl's do not conform to, named `${prefix}${member}`. */
type Mismatches<Impl, Decl, Prefix extends string> = {
  [K in keyof Decl & keyof Impl as Mismatch<Impl[K], Decl[K]> extends never ? never : `${Prefix}${K & string}`]:
    Mismatch<Impl[K], Decl[K]>;
};
/** The same for the instances a class member makes (its methods). */
type InstanceMismatches<Impl, Decl, Name extends string> =
  Impl extends Ctor ? (Decl extends Ctor
    ? Mismatches<InstanceType<Impl>, InstanceType<Decl>, `(new ${Name}(...)).`> : {}) : {};
type Optim = keyof D['optim'];
type Classes = 'Module' | 'ModuleList' | 'Sequential' | 'Linear' | 'Embedding' | 'SelfAttention' | 'CausalAttention'
  | 'MultiHeadAttentionWrapper' | 'MultiHeadAttention' | 'GroupedQueryAttention';
type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;
/** Every member that does not conform: must be none (a named property here when one does not). */
type AllMismatches = Mismatches<Runtime, D, ''>
  & Mismatches<Runtime['optim'], D['optim'], 'optim.'>
  & UnionToIntersection<{ [K in Optim]: InstanceMismatches<Runtime['optim'][K], D['optim'][K], `optim.${K & string}`> }[Optim]>
  & UnionToIntersection<{ [K in Classes]: InstanceMismatches<Runtime[K], D[K], K> }[Classes]>
  & Mismatches<ReturnType<Runtime['createKVCache']>, ReturnType<D['createKVCache']>, 'createKVCache(...).'>;
export const mismatches: AllMismatches = {};
