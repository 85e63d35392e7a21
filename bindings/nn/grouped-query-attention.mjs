// The Llama chapter's GroupedQueryAttention (ch05/07_gpt_to_llama): the
// projected attention of attention.mjs with numKVGroups shared key/value
// heads and rotary position embedding, checked and seeded in the book's
// __init__ order.

import {
  checkBoolean, checkFinite, checkInteger, checkOptionNames, checkSoftcap, describe,
} from '../api/validate.mjs';
import { ProjectedAttention } from './attention-layer.mjs';
import { gradOrZeros } from './kept.mjs';
import { absentParameter, bindingOf, fixFields, keepGrad } from './module.mjs';

/** @import { LayerGrads, LayerParams } from './module.mjs' */

/** @import { GroupedQueryAttentionOptions, RopeFreqConfig } from './attention-modules.d.ts' */

/**
 * The Llama chapter's GroupedQueryAttention(d_in, d_out, num_heads,
 * num_kv_groups) (ch05/07_gpt_to_llama): numKVGroups key/value heads
 * shared by groups of numHeads / numKVGroups query heads (never repeated
 * in memory), no biases, rotary position embedding on queries and keys as
 * compute_rope_params / apply_rope with theta base ropeBase (default
 * 10 000; Llama 3 uses 500 000) for up to contextLength positions
 * (default 4096, compute_rope_params'), the frequencies adjusted by
 * freqConfig as Llama 3.1 and 3.2 do (compute_rope_params' freq_config:
 * { factor, lowFreqFactor, highFreqFactor, originalContextLength }; none
 * by default), the causal mask, out_proj; the options of the models after
 * Llama: slidingWindow W (each token sees itself and the W − 1 before, as
 * Hugging Face configs mean it: Mistral, Gemma 2 and 3, gpt-oss), softcap
 * (Gemma 2's attention logit softcapping) and sinks (gpt-oss's learned
 * per-head sink logits, the parameter `sinks`).
 */
export class GroupedQueryAttention extends ProjectedAttention {
  /**
   * @param {number} dIn
   * @param {number} dOut
   * @param {number} numHeads
   * @param {number} numKVGroups
   * @param {GroupedQueryAttentionOptions} [options]
   */
  constructor(dIn, dOut, numHeads, numKVGroups, options) {
    const o = checkOptionNames('options', options,
      ['contextLength', 'ropeBase', 'freqConfig', 'slidingWindow', 'softcap', 'sinks']);
    checkInteger('dIn', dIn);
    checkInteger('dOut', dOut);
    checkInteger('numHeads', numHeads);
    checkInteger('numKVGroups', numKVGroups);
    if (dOut % numHeads !== 0) {
      throw new RangeError(`dOut must be divisible by numHeads, got dOut ${dOut} and numHeads ${numHeads}`);
    }
    if (numHeads % numKVGroups !== 0) {
      throw new RangeError(
        `numHeads must be divisible by numKVGroups, got numHeads ${numHeads} and numKVGroups ${numKVGroups}`);
    }
    if ((dOut / numHeads) % 2 !== 0) {
      throw new RangeError(
        `the head size dOut / numHeads must be even for RoPE, got ${dOut} / ${numHeads} = ${dOut / numHeads}`);
    }
    const contextLength = checkInteger('options.contextLength', o.contextLength ?? 4096);
    const ropeBase = checkFinite('options.ropeBase', o.ropeBase ?? 10000);
    if (!(ropeBase > 0 && Number.isFinite(Math.fround(ropeBase)))) {
      throw new RangeError(`options.ropeBase must be a positive float32, got ${describe(ropeBase)}`);
    }
    const freqConfig = o.freqConfig === undefined || o.freqConfig === null
      ? null : checkFreqConfig('options.freqConfig', o.freqConfig);
    const slidingWindow = o.slidingWindow === undefined ? null : checkInteger('options.slidingWindow', o.slidingWindow);
    const softcap = o.softcap === undefined ? null : checkSoftcap('options.softcap', o.softcap);
    const sinks = checkBoolean('options.sinks', o.sinks ?? false);
    super(dIn, dOut, contextLength, 0, true, false, numHeads, numKVGroups);
    this.ropeBase = ropeBase;
    /** Llama 3.1's RoPE frequency adjustment (frozen), or null. */
    this.freqConfig = freqConfig;
    /** Tokens each query sees, itself included (Hugging Face's sliding_window), or null: all. */
    this.slidingWindow = slidingWindow;
    /** The attention logits' softcap (Gemma 2: 50), or null. */
    this.softcap = softcap;
    fixFields(this, 'ropeBase', 'freqConfig', 'slidingWindow', 'softcap');
    /**
     * gpt-oss's learned sink logit per head [numHeads] (state-dict name
     * `sinks`), or null. Zeros: gpt-oss's reference allocates it empty for
     * the checkpoint to fill (Hugging Face's _init_weights draws N(0, 0.02)
     * later, model-wide); zeros draw nothing, so the projections' seeded
     * initialisation stays PyTorch's.
     * @type {Float32Array | null}
     */
    this.sinks = null;
    /** @type {Float32Array | null} */
    this.sinksGrad = null;
    if (sinks) {
      this.sinks = new Float32Array(numHeads);
      this.registerParameter('sinks');
    } else {
      absentParameter(this, 'sinks', 'it was constructed without options.sinks');
    }
  }

  /** @returns {{ window?: { left: number }, softcap?: number }} */
  layerRules() {
    return {
      ...(this.slidingWindow !== null && { window: { left: this.slidingWindow - 1 } }),
      ...(this.softcap !== null && { softcap: this.softcap }),
    };
  }

  /** @returns {LayerParams} */
  layerParams() {
    const p = super.layerParams();
    if (this.sinks) p.sinks = this.sinks;
    return p;
  }

  /** @returns {LayerGrads} */
  layerGrads() {
    const g = super.layerGrads();
    if (this.sinks) g.sinks = gradOrZeros(this.sinksGrad, this.sinks.length);
    return g;
  }

  /**
   * @param {LayerGrads} grads
   * @param {LayerGrads} sums
   */
  keepLayerGrads(grads, sums) {
    super.keepLayerGrads(grads, sums);
    if (this.sinks) keepGrad(this, 'sinks', /** @type {Float32Array} */ (grads.sinks), /** @type {Float32Array} */ (sums.sinks));
  }
}


/**
 * compute_rope_params' freq_config, checked: every field a positive float32,
 * lowFreqFactor < highFreqFactor. Returns a frozen copy.
 * @param {string} name
 * @param {RopeFreqConfig} config
 * @returns {Readonly<RopeFreqConfig>}
 */
function checkFreqConfig(name, config) {
  const c = checkOptionNames(name, config, FREQ_CONFIG_KEYS);
  const out = /** @type {RopeFreqConfig} */ ({});
  for (const key of FREQ_CONFIG_KEYS) {
    const value = checkFinite(`${name}.${key}`, c[key]);
    if (!(value > 0 && Number.isFinite(Math.fround(value)) && Math.fround(value) > 0)) {
      throw new RangeError(`${name}.${key} must be a positive float32, got ${describe(value)}`);
    }
    out[key] = value;
  }
  if (!(Math.fround(out.lowFreqFactor) < Math.fround(out.highFreqFactor))) {
    throw new RangeError(`${name}.lowFreqFactor must be less than ${name}.highFreqFactor, ` +
      `got ${out.lowFreqFactor} and ${out.highFreqFactor}`);
  }
  return Object.freeze(out);
}

/** freqConfig's fields (all required). */
const FREQ_CONFIG_KEYS = /** @type {const} */ (['factor', 'lowFreqFactor', 'highFreqFactor', 'originalContextLength']);
