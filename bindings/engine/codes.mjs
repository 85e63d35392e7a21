// The codes of the C++ core, named once on the JS side: Status
// (src/base/status.h) and the option enums (src/attention/attention.h). The wasm module
// registers the same enums; tests/node/errors.test.mjs checks that they
// agree. statusError() is the one place a Status becomes a JS error.

/** src/base/status.h `Status`. */
export const Status = Object.freeze({
  OK: 0,
  INVALID_SHAPE: 1,
  TOO_LARGE: 2,
  INVALID_OPTION: 3,
  NULL_POINTER: 4,
  OUT_OF_MEMORY: 5,
});

/**
 * src/attention/attention.h `CausalMask`, by the values of the public `causal` option.
 * @type {ReadonlyMap<boolean | string, number>}
 */
export const CAUSAL = new Map(/** @type {[boolean | string, number][]} */ ([
  [false, 0], // kNone
  [true, 1], // kTopLeft
  ['top-left', 1],
  ['bottom-right', 2], // kBottomRight
]));

/**
 * src/attention/attention.h `MaskStrategy`, by the public `maskStrategy` names.
 * @type {ReadonlyMap<string, number>}
 */
export const MASK_STRATEGY = new Map([
  ['neg-inf', 0], // kNegInf
  ['renormalize', 1], // kRenormalize
]);

/**
 * src/kv/kv_storage.h `KvDtype`, by the public `dtype` names of a KV cache.
 * @type {ReadonlyMap<string, number>}
 */
export const KV_DTYPE = new Map([
  ['float32', 0], // kFloat32
  ['bfloat16', 1], // kBFloat16
  ['int8', 2], // kInt8
]);

/**
 * src/attention/attention.h `Precision`, by the public `precision` names.
 * @type {ReadonlyMap<string, number>}
 */
export const PRECISION = new Map([
  ['float32', 0], // kFloat32
  ['int8', 1], // kInt8
]);

/** @type {ReadonlySet<number>} */
const RANGE_ERRORS = new Set([
  Status.INVALID_SHAPE, Status.TOO_LARGE, Status.INVALID_OPTION, Status.OUT_OF_MEMORY,
]);

/**
 * Throws for a non-OK status of wasm call `what`: a RangeError for sizes,
 * options and memory (the caller's values), an Error otherwise (a null
 * pointer means a bug in this package, never the caller's input).
 * @param {{ statusMessage(status: number): string, statusDetail?(): string }} mod
 * @param {string} what the call, first in the message
 * @param {number} status
 */
export function checkStatus(mod, what, status) {
  if (status === Status.OK) return;
  // The core names the refused argument (statusDetail), when it has one.
  const detail = mod.statusDetail?.() ?? '';
  const message = `${what}: ${mod.statusMessage(status)}${detail ? `: ${detail}` : ''} (status ${status})`;
  throw RANGE_ERRORS.has(status) ? new RangeError(message) : new Error(message);
}
