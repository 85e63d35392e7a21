// The package's types, worker-mode part: how an API looks from the calling
// thread (bindings/remote/remote.mjs), for any type; RemoteRuntime, the
// runtime so seen, is in index.d.ts. Re-exported by index.d.ts; types only.

/** Values a handle's snapshot holds (read synchronously). */
type Primitive = string | number | boolean | bigint | symbol | null | undefined;
/** Any function (a method). */
type AnyFunction = (...args: any[]) => any;
/** Any class. */
type AnyConstructor = abstract new (...args: any[]) => any;
/** Copied as is: primitives, typed arrays, buffers. */
type Copied = Primitive | ArrayBufferView | ArrayBuffer | Date | RegExp;
/** Objects with methods stay in the worker (handles); others are data (copied). */
type HasMethods<T> = { [K in keyof T]-?: T[K] extends AnyFunction | AnyConstructor ? K : never }[keyof T] extends never
  ? false : true;
/** The string keys of T (symbol-keyed members do not cross to the worker). */
type StringKeys<T> = { [K in keyof T]: K extends string ? K : never }[keyof T];

/** What a remote call resolves to: data copied, objects with methods as handles. */
export type RemoteResult<T> =
  T extends Copied ? T
  : T extends AnyFunction | AnyConstructor ? Remote<T>
  : T extends readonly (infer U)[] ? RemoteResult<U>[]
  : T extends object ? (HasMethods<T> extends true ? Remote<T> : { [K in keyof T]: RemoteResult<T[K]> })
  : T;

/** Arguments of a remote call: data (copied), or handles the worker returned. */
type RemoteArgs<A extends readonly unknown[]> = {
  [I in keyof A]: A[I] extends Copied ? A[I] : HasMethods<A[I]> extends true ? A[I] | Remote<A[I]> : A[I];
};

/** A method called through the worker: the same overloads (up to six), returning promises. */
export type RemoteMethod<F> =
  F extends {
    (...a: infer A1): infer R1; (...a: infer A2): infer R2; (...a: infer A3): infer R3;
    (...a: infer A4): infer R4; (...a: infer A5): infer R5; (...a: infer A6): infer R6;
  }
    ? ((...a: RemoteArgs<A1>) => Promise<RemoteResult<R1>>) & ((...a: RemoteArgs<A2>) => Promise<RemoteResult<R2>>)
      & ((...a: RemoteArgs<A3>) => Promise<RemoteResult<R3>>) & ((...a: RemoteArgs<A4>) => Promise<RemoteResult<R4>>)
      & ((...a: RemoteArgs<A5>) => Promise<RemoteResult<R5>>) & ((...a: RemoteArgs<A6>) => Promise<RemoteResult<R6>>)
    : never;

/** A class constructed in the worker: `await new ca.CausalAttention(...)` gives a handle. */
export type RemoteConstructor<C> = C extends abstract new (...args: infer A) => infer I
  ? new (...args: RemoteArgs<A>) => Promise<Remote<I>> : never;

/**
 * A property reached through a handle without a snapshot: awaiting it reads
 * it (a copy, or a handle); its own methods and properties are reachable too
 * (`await layer.W_query.forward(x, shape)`).
 */
export type RemoteProperty<V> = PromiseLike<RemoteResult<V>> & (
  V extends Copied ? unknown
  : V extends readonly (infer U)[] ? { readonly [index: number]: RemoteMember<U> }
  : V extends object ? { readonly [K in StringKeys<V>]: RemoteMember<V[K]> }
  : unknown);

/** A member reached through a handle: a constructor, a method, or an awaited property. */
type RemoteMember<V> =
  V extends AnyConstructor ? RemoteConstructor<V>
  : V extends AnyFunction ? RemoteMethod<V>
  : RemoteProperty<V>;

/**
 * A handle: an object that lives in the worker (module instances, caches,
 * the runtime itself: whatever is not plain data). Methods return promises;
 * `new` on a class resolves to a handle. The same object always comes back
 * as the same handle (`await layer.eval() === layer`). Primitive properties
 * (numbers, strings, booleans) read synchronously from a snapshot refreshed
 * after every call through this handle (`ca.build`, `layer.training`); other
 * properties are {@link RemoteProperty} (awaited). Properties cannot be
 * assigned (TypeError): call a method. Handles the caller drops are
 * released in the worker. The names JS and libraries read by convention
 * (toJSON, toString, valueOf, constructor, inspect, Symbol.iterator,
 * Symbol.toPrimitive, ...) answer as on a plain object, without a call to
 * the worker: JSON.stringify(layer) gives the snapshot, `${layer}` a tag.
 */
export type Remote<T> = {
  readonly [K in StringKeys<T>]: T[K] extends Primitive ? T[K] : RemoteMember<T[K]>;
} & (T extends AnyConstructor ? RemoteConstructor<T> : unknown)
  & (T extends AnyFunction ? RemoteMethod<T> : unknown);

