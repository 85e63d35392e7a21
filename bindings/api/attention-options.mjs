// An attention call's options resolved into what crosses into wasm: the
// core's AttentionOptions, the outputs asked for and the arrays the engine
// stages (key lengths, mask, sinks), checked against the call's shape with
// validate.mjs's checks. ca.attention, a KV cache's attention and the
// modules' layers all resolve their options here.

import { CAUSAL, MASK_STRATEGY, PRECISION } from '../engine/codes.mjs';
import { MAX_BLOCK_BYTES, formatBytes, product } from '../engine/heap.mjs';
import {
  checkBoolean, checkCount, checkDisjoint, checkFinite, checkInteger, checkOneOf, checkOptionNames,
  checkProbability, checkSeed, checkShape, checkSoftcap, checkTensor, describe,
} from './validate.mjs';

/** @import { AttentionComputation, AttentionOptions, CausalAlignment } from './attention.d.ts' */
/** @import { ShapeFields } from '../engine/embind.mjs' */
/** @import { VisibilityArrays } from '../engine/engine.d.ts' */
/** @import { MT19937 } from './random.mjs' */

/**
 * The core's AttentionOptions (src/attention/attention.h) from public option values:
 * the one object that crosses into wasm, for ca.attention() and for the
 * modules' layer alike. `scale` undefined means the core's default
 * 1/sqrt(headDim) (sent as NaN). Without `seed`, a dropout that will run
 * draws its seed from `generator` (so manualSeed replays it); the backward
 * passes none (it requires the forward's seed, checked before).
 * @param {string} prefix
 * @param {Partial<AttentionComputation & Pick<AttentionOptions, 'precision'>>} o
 * @param {Pick<MT19937, 'nextUint64'> | null} generator
 */
export function resolveAttentionOptions(prefix, o, generator) {
  const causal = o.causal ?? true;
  const causalCodes = /** @type {Map<CausalAlignment, number>} */ (CAUSAL);
  checkOneOf(`${prefix}.causal`, causal, [...causalCodes.keys()]);
  const maskStrategy = o.maskStrategy ?? 'neg-inf';
  checkOneOf(`${prefix}.maskStrategy`, maskStrategy, [...MASK_STRATEGY.keys()]);
  let scale = NaN;
  if (o.scale !== undefined) {
    scale = checkFinite(`${prefix}.scale`, o.scale);
    if (!Number.isFinite(Math.fround(scale))) {
      throw new RangeError(`${prefix}.scale must fit a float32, got ${describe(scale)}`);
    }
  }
  const dropout = checkProbability(`${prefix}.dropout`, o.dropout ?? 0);
  const training = checkBoolean(`${prefix}.training`, o.training ?? false);
  let seed = [0, 0];
  if (o.seed !== undefined) seed = checkSeed(`${prefix}.seed`, o.seed);
  else if (training && dropout > 0) {
    if (!generator) throw new TypeError(`${prefix}.seed is required when dropout runs`);
    seed = checkSeed('seed', generator.nextUint64());
  }
  const precision = o.precision ?? 'float32';
  checkOneOf(`${prefix}.precision`, precision, [...PRECISION.keys()]);
  if (precision === 'int8' && training) {
    throw new RangeError(`${prefix}.precision 'int8' is for inference: a training forward (training: true, ` +
      `or a module in train mode) needs 'float32'`);
  }
  return {
    // Both looked up after checkOneOf: never undefined.
    causal: /** @type {number} */ (causalCodes.get(causal)),
    maskStrategy: /** @type {number} */ (MASK_STRATEGY.get(maskStrategy)),
    scale, dropout, training, seedLo: seed[0], seedHi: seed[1],
    // The visibility fields, none in use (resolveVisibility sets them): the
    // bhsd layout, the default query offset, no key lengths, no window, no
    // softcap, no sinks, no mask.
    layout: 0, queryOffset: NaN, keyLengths: 0, windowLeft: -1, windowRight: -1, softcap: 0, sinks: 0,
    maskKind: 0, mask: 0, maskBatch: 1, maskHeads: 1, maskQueries: 1, maskKeys: 1,
    // No scores before the softmax (ca.attention's returnScores sets them).
    scoreStage: 0, scores: 0,
    precision: /** @type {number} */ (PRECISION.get(precision)),
  };
}

/**
 * What every attention call resolves once its shape is known (ca.attention
 * and a KV cache's attention alike): the core's AttentionOptions and the
 * outputs asked for.
 * @param {string} prefix
 * @param {Partial<AttentionOptions>} o
 * @param {ShapeFields} s
 * @param {Pick<MT19937, 'nextUint64'>} generator
 */
export function resolveAttentionOutputs(prefix, o, s, generator) {
  const options = resolveAttentionOptions(prefix, o, generator);
  const { fields, arrays } = resolveVisibility(prefix, o, s, renormalizes(o));
  if (fields) Object.assign(options, fields);
  const outLength = product(s.batch, s.heads, s.queryLength, s.valueDim);
  const weightsLength = product(s.batch, s.heads, s.queryLength, s.keyLength);
  const returnWeights = checkBoolean(`${prefix}.returnWeights`, o.returnWeights ?? false);
  if (returnWeights) checkSquareFits(`${prefix}.returnWeights`, 'weights', s, weightsLength);
  const out = o.out === undefined ? undefined
    : checkTensor(`${prefix}.out`, o.out, outLength,
      `batch ${s.batch} × heads ${s.heads} × queryLength ${s.queryLength} × valueDim ${s.valueDim}`);
  let weightsOut;
  if (o.weightsOut !== undefined) {
    if (!returnWeights) {
      throw new TypeError(`${prefix}.weightsOut is only used with returnWeights: true`);
    }
    weightsOut = checkTensor(`${prefix}.weightsOut`, o.weightsOut, weightsLength,
      `batch ${s.batch} × heads ${s.heads} × queryLength ${s.queryLength} × keyLength ${s.keyLength}`);
    if (out) checkDisjoint(`${prefix}.out`, out, `${prefix}.weightsOut`, weightsOut);
  }
  return { shape: s, options, outLength, weightsLength, returnWeights, out, weightsOut, arrays };
}

/**
 * The tensors that grow as T² (weights, scores) are allocated only when
 * asked for (long contexts run without them): names the option asking for
 * one that cannot fit.
 * @param {string} name the option
 * @param {string} what the tensor
 * @param {{ batch: number, heads: number, queryLength: number, keyLength: number }} s
 * @param {number} length its elements
 */
function checkSquareFits(name, what, s, length) {
  if (!(length * 4 < MAX_BLOCK_BYTES)) {
    throw new RangeError(`${name}: the ${what} [batch ${s.batch}, heads ${s.heads}, queryLength ${s.queryLength}, ` +
      `keyLength ${s.keyLength}] would take ${formatBytes(length * 4)}, more than one block of a wasm32 heap holds (${formatBytes(MAX_BLOCK_BYTES)}); ` +
      `without ${name.slice(name.lastIndexOf('.') + 1)} no such matrix is allocated`);
  }
}

/** src/attention/attention.h's ScoreStage codes by returnScores' names (kNone 0). */
export const SCORE_STAGE = new Map([['scaled', 1], ['softcapped', 2], ['masked', 3]]);

/**
 * ca.attention's returnScores: the ScoreStage code (0: none asked for).
 * @param {string} prefix
 * @param {unknown} value
 * @param {{ batch: number, heads: number, queryLength: number, keyLength: number }} s
 * @param {number} length the scores' elements (the weights')
 * @returns {number}
 */
export function resolveReturnScores(prefix, value, s, length) {
  if (value === undefined) return 0;
  const stage = /** @type {number} */ (SCORE_STAGE.get(
    checkOneOf(`${prefix}.returnScores`, value, [...SCORE_STAGE.keys()])));
  checkSquareFits(`${prefix}.returnScores`, 'scores', s, length);
  return stage;
}

/** The public names of the visibility options, as ca.attention reads them. */
export const VISIBILITY_OPTIONS = /** @type {const} */ ([
  'layout', 'queryOffset', 'keyLengths', 'window', 'mask', 'maskShape', 'softcap', 'sinks',
]);
/** src/attention/attention.h's Layout codes. */
export const LAYOUT = new Map([['bhsd', 0], ['bshd', 1]]);
/** src/attention/attention.h's MaskKind codes. */
export const MASK_KIND = Object.freeze({ none: 0, boolean: 1, additive: 2 });

/**
 * The visibility options (layout, queryOffset, keyLengths, window, mask +
 * maskShape, softcap, sinks), checked against a call's shape: the core's
 * AttentionOptions fields for them (pointers 0, filled in by the engine when
 * it stages `arrays`) and the arrays. Without any of them, fields and arrays
 * are null.
 * @param {string} prefix
 * @param {Record<string, any>} o
 * @param {{ batch: number, heads: number, queryLength: number, keyLength: number }} s
 * @param {boolean} renormalizing whether the call takes the book's 'renormalize' route (renormalizes())
 */
export function resolveVisibility(prefix, o, s, renormalizing) {
  /** @type {string[]} */
  const uses = [];
  for (const key of VISIBILITY_OPTIONS) if (o[key] !== undefined) uses.push(key);
  // None given (most calls): resolveAttentionOptions' defaults stand.
  if (uses.length === 0) return { fields: null, arrays: null };
  const fields = {
    layout: 0, queryOffset: NaN, keyLengths: 0, windowLeft: -1, windowRight: -1, softcap: 0, sinks: 0,
    maskKind: MASK_KIND.none, mask: 0, maskBatch: 1, maskHeads: 1, maskQueries: 1, maskKeys: 1,
  };
  /** @type {VisibilityArrays} */
  const arrays = { keyLengths: null, mask: null, sinks: null };
  if (o.layout !== undefined) {
    fields.layout = /** @type {number} */ (LAYOUT.get(checkOneOf(`${prefix}.layout`, o.layout, [...LAYOUT.keys()])));
  }
  if (o.queryOffset !== undefined) {
    fields.queryOffset = checkInteger(`${prefix}.queryOffset`, o.queryOffset, -(2 ** 31));
    if (fields.queryOffset >= 2 ** 31) {
      throw new RangeError(`${prefix}.queryOffset must be below 2^31, got ${fields.queryOffset}`);
    }
  }
  if (o.keyLengths !== undefined) {
    const value = o.keyLengths;
    if (!(value instanceof Int32Array || Array.isArray(value))) {
      throw new TypeError(`${prefix}.keyLengths must be an Int32Array or an Array of batch ${s.batch} integers, got ${describe(value)}`);
    }
    if (value.length !== s.batch) {
      throw new RangeError(`${prefix}.keyLengths must have length ${s.batch} (batch), got length ${value.length}`);
    }
    const lengths = new Int32Array(s.batch);
    for (let b = 0; b < s.batch; b++) {
      const n = value[b];
      if (!Number.isInteger(n) || n < 0 || n > s.keyLength) {
        const Err = typeof n === 'number' ? RangeError : TypeError;
        throw new Err(`${prefix}.keyLengths[${b}] must be an integer in [0, keyLength ${s.keyLength}], got ${describe(n)}`);
      }
      lengths[b] = n;
    }
    arrays.keyLengths = lengths;
  }
  if (o.window !== undefined) {
    const w = checkOptionNames(`${prefix}.window`, o.window, ['left', 'right']);
    if (w.left !== undefined) fields.windowLeft = checkWindowSide(`${prefix}.window.left`, w.left);
    if (w.right !== undefined) fields.windowRight = checkWindowSide(`${prefix}.window.right`, w.right);
  }
  if (o.softcap !== undefined) fields.softcap = checkSoftcap(`${prefix}.softcap`, o.softcap);
  if (o.sinks !== undefined) {
    arrays.sinks = checkTensor(`${prefix}.sinks`, o.sinks, s.heads, `one logit per head: heads ${s.heads}`);
  }
  if (o.mask !== undefined || o.maskShape !== undefined) {
    Object.assign(fields, resolveMask(prefix, o.mask, o.maskShape, s));
    arrays.mask = o.mask;
  }
  // The book's route: a softmax over every key, then the causal prefix
  // renormalised. The core refuses sinks, masks, a left window and softcap
  // there; the other rules would change which keys "every" and the prefix
  // mean, so they are refused too (with causal false the route is plain).
  if (renormalizing) {
    const visibility = uses.filter((key) => key !== 'layout');
    if (visibility.length > 0) {
      throw new RangeError(`${prefix}.maskStrategy 'renormalize' (the book's softmax over every key) is only defined for the causal mask alone, ` +
        `got it with ${visibility.map((key) => `${prefix}.${key}`).join(', ')}; use maskStrategy 'neg-inf'`);
    }
  }
  return { fields, arrays };
}

/**
 * Whether options take the book's 'renormalize' route: that strategy with a
 * causal mask (without one it is the plain softmax).
 * @param {{ maskStrategy?: unknown, causal?: unknown }} o
 */
export function renormalizes(o) {
  return o.maskStrategy === 'renormalize' && (o.causal ?? true) !== false;
}

/**
 * @param {string} name
 * @param {unknown} value
 */
function checkWindowSide(name, value) {
  const n = checkInteger(name, value, 0);
  if (n >= 2 ** 31) throw new RangeError(`${name} must be below 2^31, got ${n}`);
  return n;
}

/**
 * A mask and its shape: the kind from its type, the stored sizes with
 * maskShape right-aligned to [batch, heads, queryLength, keyLength].
 * @param {string} prefix
 * @param {unknown} mask
 * @param {unknown} maskShape
 * @param {{ batch: number, heads: number, queryLength: number, keyLength: number }} s
 */
function resolveMask(prefix, mask, maskShape, s) {
  if (mask === undefined) {
    throw new TypeError(`${prefix}.maskShape is only used with ${prefix}.mask`);
  }
  if (!(mask instanceof Uint8Array || mask instanceof Float32Array)) {
    throw new TypeError(`${prefix}.mask must be a Uint8Array (non-zero = may attend) or a Float32Array (added to the scores), got ${describe(mask)}`);
  }
  if (maskShape === undefined) {
    throw new TypeError(`${prefix}.maskShape must be given with ${prefix}.mask: an Array of 1–4 sizes, e.g. [queryLength ${s.queryLength}, keyLength ${s.keyLength}]`);
  }
  const dims = checkShape(`${prefix}.maskShape`, maskShape, 1, 4);
  const length = product(...dims);
  checkCount(`${prefix}.mask`, length, `maskShape [${dims.join(', ')}]`);
  if (mask.length !== length) {
    throw new RangeError(`${prefix}.mask must have length ${length} (maskShape [${dims.join(', ')}]), got length ${mask.length}`);
  }
  const target = [s.batch, s.heads, s.queryLength, s.keyLength];
  const names = ['batch', 'heads', 'queryLength', 'keyLength'];
  const sizes = [1, 1, 1, 1];
  dims.forEach((d, i) => {
    const axis = 4 - dims.length + i;
    if (d !== 1 && d !== target[axis]) {
      throw new RangeError(`${prefix}.maskShape [${dims.join(', ')}] does not broadcast to [batch ${s.batch}, heads ${s.heads}, ` +
        `queryLength ${s.queryLength}, keyLength ${s.keyLength}]: maskShape[${i}] must be 1 or ${names[axis]} ${target[axis]}, got ${d}`);
    }
    sizes[axis] = d;
  });
  return {
    maskKind: mask instanceof Uint8Array ? MASK_KIND.boolean : MASK_KIND.additive,
    maskBatch: sizes[0], maskHeads: sizes[1], maskQueries: sizes[2], maskKeys: sizes[3],
  };
}
