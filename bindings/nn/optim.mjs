// torch.optim.SGD and torch.optim.AdamW over the modules' parameters
// (module.mjs Parameter: live `data` and `grad` Float32Arrays), with
// PyTorch's defaults and update rules: the single-tensor loops of
// torch/optim/sgd.py and adamw.py, which CPU tensors run. Each tensor op is
// rounded to float32 as PyTorch's float tensors are (Math.fround); its
// scalar factors are Python floats, rounded to float32 where an op meets a
// tensor. Parameters whose grad is null (no backward reached them) are
// skipped, as PyTorch skips grad None. AdamW's elementwise rule runs in
// wasm (src/model/optim.h), every tensor in one call: the runtime binds the class
// to its engine (bindAdamW); SGD's runs here.

import {
  checkBoolean, checkInteger, checkOptionNames, checkProbability, describe,
} from '../api/validate.mjs';
import { toFloat32 } from './module.mjs';
import { inferenceOnly } from './weights-dtype.mjs';

/**
 * @import { AdamWTensor } from '../engine/engine.d.ts'
 * @import { Module, Parameter } from './layers.d.ts'
 * @import { AdamWOptions, OptimizerStateDict, ParameterLike, Parameters, SGDOptions } from './training.d.ts'
 */

/**
 * A parameter as an optimizer holds it: a module's Parameter, or a
 * ParameterLike the caller passed (no name).
 * @typedef {Parameter | ParameterLike} Updated
 */

const f = Math.fround;

/**
 * The engine's AdamW update (engine.mjs adamWUpdate), which the runtime
 * binds: h = [decay, 1 - β1, β2, 1 - β2, eps].
 * @typedef {(h: number[], tensors: AdamWTensor[]) => void} AdamWUpdate
 */

const UPDATE = Symbol('AdamW update');

/**
 * A non-negative finite number.
 * @param {string} name
 * @param {unknown} value
 * @returns {number}
 */
function checkNonNegative(name, value) {
  if (typeof value !== 'number') {
    throw new TypeError(`${name} must be a finite number >= 0, got ${describe(value)}`);
  }
  if (!(value >= 0 && Number.isFinite(value))) {
    throw new RangeError(`${name} must be a finite number >= 0, got ${describe(value)}`);
  }
  return value;
}

/**
 * The parameters an optimizer updates: a module (its parameters()), or an
 * Array of modules and parameters ({ data: Float32Array, grad }). Each
 * parameter at most once.
 * @param {Parameters} params  as declared; anything else is a TypeError here
 * @returns {Updated[]}
 */
function collectParameters(params) {
  /** @type {[Updated, string][]} */
  const list = [];
  /**
   * @param {unknown} p  a Module or an Updated as declared; from JS, anything: checked here
   * @param {string} where
   */
  const add = (p, where) => {
    if (p && typeof /** @type {Partial<Module>} */ (p).parameters === 'function') {
      for (const q of /** @type {Module} */ (p).parameters()) list.push([q, `${where} '${q.name}'`]);
    } else if (p && /** @type {Partial<ParameterLike>} */ (p).data instanceof Float32Array) {
      list.push([/** @type {Updated} */ (p), where]);
    } else {
      throw new TypeError(
        `${where} must be a module or a parameter ({ data: Float32Array, grad }), got ${describe(p)}`);
    }
  };
  if (Array.isArray(params)) params.forEach((p, i) => add(p, `params[${i}]`));
  else add(params, 'params');
  if (!list.length) throw new RangeError('params must hold at least one parameter, got none');
  /** @type {Set<Float32Array>} */
  const seen = new Set();
  for (const [p, where] of list) {
    if (seen.has(p.data)) throw new RangeError(`${where} appears more than once in params`);
    seen.add(p.data);
  }
  return list.map(([p]) => p);
}

/**
 * What both optimizers share: the parameter list, per-parameter state, zeroGrad.
 * @template S  the state of one parameter (SGD's momentum buffer, AdamW's moments)
 */
class Optimizer {
  /** @type {Map<Float32Array, S>} */
  #state = new Map();

  /** @param {Parameters} params */
  constructor(params) {
    /** The parameters updated by step(), in order. */
    this.params = Object.freeze(collectParameters(params));
  }

  /**
   * Resets every parameter's gradient: to null (default, as PyTorch) or zeros.
   * @param {boolean} [setToNone]
   */
  zeroGrad(setToNone = true) {
    checkBoolean('setToNone', setToNone);
    for (const p of this.params) {
      if (setToNone) p.grad = null;
      else p.grad?.fill(0);
    }
  }

  /**
   * PyTorch's optimizer.state_dict(): `state` by parameter index (only the
   * parameters that have one; `save` turns a state into its named copies)
   * and one param group (the hyperparameters `group`, the indices).
   * @param {Record<string, unknown>} group
   * @param {(state: S) => Record<string, unknown>} save
   * @returns {OptimizerStateDict}
   */
  stateDict(group, save) {
    /** @type {Record<string, Record<string, unknown>>} */
    const state = {};
    this.params.forEach((p, i) => {
      const s = this.#state.get(p.data);
      if (s) state[i] = save(s);
    });
    return { state, param_groups: [{ ...group, params: this.params.map((_, i) => i) }] };
  }

  /**
   * Checks a state dict against these parameters (one group over all of
   * them, indices 0 … n − 1; each state read by `load(state, length, name)`,
   * which throws on a bad one) and returns its param group; the states are
   * replaced only once all are read, so a refused dict changes nothing.
   * `checkGroup` checks the group's hyperparameters first and returns them
   * for the caller to set.
   * The group must hold exactly this optimizer's hyperparameters (`keys`)
   * and `params`, plus where present the flags PyTorch's own state dict
   * carries (`torchFlags`: each with the values that mean what this
   * optimizer does); a missing or unknown key is refused, so a dict of
   * another optimizer never loads with defaults filled in.
   * @template H
   * @param {unknown} dict
   * @param {{ name: string, keys: readonly string[], torchFlags: Readonly<Record<string, readonly unknown[]>> }} kind
   * @param {(group: Record<string, unknown>) => H} checkGroup
   * @param {(state: Record<string, unknown>, length: number, name: string) => S} load
   * @returns {H}
   */
  loadStateDict(dict, kind, checkGroup, load) {
    const d = /** @type {{ state?: unknown, param_groups?: unknown }} */ (dict);
    if (d === null || typeof d !== 'object' || typeof d.state !== 'object' || d.state === null ||
      !Array.isArray(d.param_groups)) {
      throw new TypeError(`stateDict must be an object { state, param_groups } (optimizer.stateDict()), got ${describe(dict)}`);
    }
    const n = this.params.length;
    if (d.param_groups.length !== 1) {
      throw new RangeError(`stateDict.param_groups must hold 1 group, got ${d.param_groups.length}`);
    }
    const group = /** @type {Record<string, unknown>} */ (d.param_groups[0]);
    const indices = group?.params;
    if (!Array.isArray(indices) || indices.length !== n || indices.some((x, i) => x !== i)) {
      throw new RangeError(`stateDict.param_groups[0].params must be the ${n} indices 0 … ${n - 1}, got ${describe(indices)}`);
    }
    checkGroupKeys(group, kind);
    const hyper = checkGroup(group);
    /** @type {Map<Float32Array, S>} */
    const states = new Map();
    for (const [key, value] of Object.entries(d.state)) {
      const i = Number(key);
      if (!Number.isInteger(i) || i < 0 || i >= n) {
        throw new RangeError(`stateDict.state has a state for parameter ${key}, expected indices 0 … ${n - 1}`);
      }
      if (value === null || typeof value !== 'object') {
        throw new TypeError(`stateDict.state[${key}] must be an object, got ${describe(value)}`);
      }
      const p = this.params[i];
      states.set(p.data, load(value, p.data.length, `stateDict.state[${key}]`));
    }
    this.#state = states;
    return hyper;
  }

  // The parameters with a gradient, each with its state (created by `init`
  // on first use). Every gradient is checked before any is returned, so a
  // step that throws has changed nothing: a step is all or nothing.
  /**
   * @param {(n: number) => S} init
   * @returns {[data: Float32Array, grad: Float32Array, state: S][]}
   */
  withGradients(init) {
    /** @type {[Float32Array, Float32Array][]} */
    const ready = [];
    for (const p of this.params) {
      const { weightsDtype: dtype, name } = /** @type {Partial<Parameter>} */ (p);
      if (dtype && dtype !== 'float32') {
        throw new TypeError(`the parameter '${name}' ${inferenceOnly(dtype).replace('the weights are', 'is')}`);
      }
      const grad = p.grad;
      if (grad === null || grad === undefined) continue;
      if (!(grad instanceof Float32Array) || grad.length !== p.data.length) {
        const Err = grad instanceof Float32Array ? RangeError : TypeError;
        // A ParameterLike has no name.
        const { name } = /** @type {Partial<Parameter>} */ (p);
        throw new Err(`the gradient of a parameter${name ? ` '${name}'` : ''} must be a ` +
          `Float32Array of length ${p.data.length}, got ${describe(grad)}`);
      }
      ready.push([p.data, grad]);
    }
    return ready.map(([data, grad]) => {
      if (!this.#state.has(data)) this.#state.set(data, init(data.length));
      return [data, grad, /** @type {S} */ (this.#state.get(data))];
    });
  }
}

/**
 * A param group's keys against an optimizer's: every hyperparameter there,
 * nothing unknown, PyTorch's flags only with values this optimizer honours.
 * @param {Record<string, unknown>} group
 * @param {{ name: string, keys: readonly string[], torchFlags: Readonly<Record<string, readonly unknown[]>> }} kind
 */
function checkGroupKeys(group, kind) {
  const where = 'stateDict.param_groups[0]';
  const missing = kind.keys.filter((k) => !(k in group));
  if (missing.length) {
    throw new RangeError(`${where} is missing ${missing.join(', ')}: a ${kind.name} state dict holds ` +
      `${kind.keys.join(', ')} and params`);
  }
  const unknown = Object.keys(group).filter((k) => k !== 'params' && !kind.keys.includes(k) &&
    !Object.hasOwn(kind.torchFlags, k));
  if (unknown.length) {
    throw new RangeError(`${where} has ${unknown.join(', ')}, which ${kind.name} does not have ` +
      `(its keys: ${kind.keys.join(', ')}, params): is this another optimizer's state dict?`);
  }
  for (const [flag, allowed] of Object.entries(kind.torchFlags)) {
    if (flag in group && !allowed.includes(group[flag])) {
      throw new RangeError(`${where}.${flag} must be ${allowed.map((v) => JSON.stringify(v)).join(' or ')} ` +
        `(what ${kind.name} here does), got ${describe(group[flag])}`);
    }
  }
}

/** PyTorch's flags that change nothing in the update's arithmetic: any value. */
const ANY_FLAG = [null, false, true];

/** What SGD's state dict holds: its hyperparameters and PyTorch's flags. */
const SGD_KIND = Object.freeze({
  name: 'SGD',
  keys: Object.freeze(['lr', 'momentum', 'dampening', 'weight_decay', 'nesterov']),
  torchFlags: Object.freeze({ maximize: [false], foreach: ANY_FLAG, differentiable: [false], fused: [null, false] }),
});

/** What AdamW's state dict holds: its hyperparameters and PyTorch's flags. */
const ADAMW_KIND = Object.freeze({
  name: 'AdamW',
  keys: Object.freeze(['lr', 'betas', 'eps', 'weight_decay']),
  torchFlags: Object.freeze({
    amsgrad: [false], maximize: [false], foreach: ANY_FLAG, capturable: ANY_FLAG, differentiable: [false],
    fused: [null, false], decoupled_weight_decay: [true],
  }),
});

/**
 * torch.optim.SGD(params, lr = 1e-3, momentum = 0, dampening = 0,
 * weight_decay = 0, nesterov = false): per element
 *   d = g + weightDecay·p
 *   b = d on the first step, else momentum·b + (1 - dampening)·d
 *   d = nesterov ? d + momentum·b : b        (when momentum != 0)
 *   p = p - lr·d
 */
export class SGD {
  /** @type {Optimizer<{ buffer: Float32Array | null }>} */
  #opt;
  /** @type {ReturnType<typeof sgdOptions>} The hyperparameters, checked together (sgdOptions). */
  #h = { lr: 0, momentum: 0, dampening: 0, weightDecay: 0, nesterov: false };

  // Settable (a learning-rate schedule), and checked where set: a value the
  // constructor would refuse is refused here, and the others stay.
  get lr() { return this.#h.lr; }
  set lr(value) { this.#h = sgdOptions('SGD', { ...this.#h, lr: value }); }
  get momentum() { return this.#h.momentum; }
  set momentum(value) { this.#h = sgdOptions('SGD', { ...this.#h, momentum: value }); }
  get dampening() { return this.#h.dampening; }
  set dampening(value) { this.#h = sgdOptions('SGD', { ...this.#h, dampening: value }); }
  get weightDecay() { return this.#h.weightDecay; }
  set weightDecay(value) { this.#h = sgdOptions('SGD', { ...this.#h, weightDecay: value }); }
  get nesterov() { return this.#h.nesterov; }
  set nesterov(value) { this.#h = sgdOptions('SGD', { ...this.#h, nesterov: value }); }

  /**
   * @param {Parameters} params
   * @param {SGDOptions} [options]
   */
  constructor(params, options) {
    const o = checkOptionNames('options', options, ['lr', 'momentum', 'dampening', 'weightDecay', 'nesterov']);
    this.#opt = new Optimizer(params);
    this.#set(sgdOptions('options', o));
  }

  /** @param {ReturnType<typeof sgdOptions>} h */
  #set(h) {
    this.#h = h;
  }

  /**
   * PyTorch's state_dict(): { state: { [index]: { momentum_buffer } },
   * param_groups: [{ lr, momentum, dampening, weight_decay, nesterov, params }] } (copies).
   * @returns {OptimizerStateDict}
   */
  stateDict() {
    const group = {
      lr: this.lr, momentum: this.momentum, dampening: this.dampening, weight_decay: this.weightDecay,
      nesterov: this.nesterov,
    };
    return this.#opt.stateDict(group, (s) => ({ momentum_buffer: s.buffer?.slice() ?? null }));
  }

  /**
   * Loads a stateDict() (or PyTorch's, as JSON): the momentum buffers and the
   * hyperparameters; all checked first, all or nothing. Returns the optimizer.
   * @param {OptimizerStateDict} dict
   * @returns {this}
   */
  loadStateDict(dict) {
    const hyper = this.#opt.loadStateDict(dict, SGD_KIND, (g) => sgdOptions('stateDict.param_groups[0]', {
      lr: g.lr, momentum: g.momentum, dampening: g.dampening, weightDecay: g.weight_decay, nesterov: g.nesterov,
    }), (s, n, name) => ({
      buffer: s.momentum_buffer === null || s.momentum_buffer === undefined ? null : stateTensor(s, 'momentum_buffer', n, name),
    }));
    this.#set(hyper);
    return this;
  }

  /** @returns {readonly Updated[]} */
  get params() {
    return this.#opt.params;
  }

  /** One update of every parameter that has a gradient. */
  step() {
    const wd = f(this.weightDecay);
    const mu = f(this.momentum);
    const keep = f(1 - this.dampening);
    const minusLr = f(-this.lr);
    for (const [p, g, state] of this.#opt.withGradients(() => ({ buffer: null }))) {
      const n = p.length;
      // d = g + wd·p (a new tensor: the gradient itself is left alone).
      const d = this.weightDecay !== 0 ? new Float32Array(n) : g.slice();
      if (this.weightDecay !== 0) for (let i = 0; i < n; i++) d[i] = f(g[i] + wd * p[i]);
      /** @type {Float32Array} */
      let step = d;
      if (this.momentum !== 0) {
        if (!state.buffer) {
          state.buffer = d.slice();
        } else {
          const b = state.buffer;
          for (let i = 0; i < n; i++) b[i] = f(f(b[i] * mu) + keep * d[i]);
        }
        if (this.nesterov) {
          for (let i = 0; i < n; i++) d[i] = f(d[i] + mu * state.buffer[i]);
        } else {
          step = state.buffer;
        }
      }
      for (let i = 0; i < n; i++) p[i] = f(p[i] + minusLr * step[i]);
    }
  }

  /** @param {boolean} [setToNone] */
  zeroGrad(setToNone = true) {
    this.#opt.zeroGrad(setToNone);
  }
}

/**
 * torch.optim.AdamW(params, lr = 1e-3, betas = [0.9, 0.999], eps = 1e-8,
 * weight_decay = 1e-2): per parameter, step t += 1, then per element
 *   p = p·(1 - lr·weightDecay)                 (decoupled weight decay)
 *   m = m + (1 - β1)·(g - m)                   (exp_avg.lerp_(g, 1 - β1))
 *   v = β2·v + (1 - β2)·g·g
 *   p = p - (lr / (1 - β1^t)) · m / (sqrt(v) / sqrt(1 - β2^t) + eps)
 */
export class AdamW {
  /** @type {AdamWUpdate | null} set by bindAdamW */
  static [UPDATE] = null;
  /** @type {Optimizer<{ step: number, m: Float32Array, v: Float32Array }>} */
  #opt;
  /** @type {AdamWUpdate} */
  #update;
  /** @type {ReturnType<typeof adamWOptions>} The hyperparameters, checked (adamWOptions). */
  #h = { lr: 0, betas: /** @type {readonly [number, number]} */ (Object.freeze([0, 0])), eps: 0, weightDecay: 0 };

  // Settable (a learning-rate schedule), and checked where set, as SGD's.
  get lr() { return this.#h.lr; }
  set lr(value) { this.#h = adamWOptions('AdamW', { ...this.#h, lr: value }); }
  get betas() { return this.#h.betas; }
  set betas(value) { this.#h = adamWOptions('AdamW', { ...this.#h, betas: value }); }
  get eps() { return this.#h.eps; }
  set eps(value) { this.#h = adamWOptions('AdamW', { ...this.#h, eps: value }); }
  get weightDecay() { return this.#h.weightDecay; }
  set weightDecay(value) { this.#h = adamWOptions('AdamW', { ...this.#h, weightDecay: value }); }

  /**
   * @param {Parameters} params
   * @param {AdamWOptions} [options]
   */
  constructor(params, options) {
    const update = /** @type {typeof AdamW} */ (new.target)[UPDATE];
    if (!update) throw new TypeError('AdamW must be made by a runtime (ca.optim.AdamW)');
    this.#update = update;
    const o = checkOptionNames('options', options, ['lr', 'betas', 'eps', 'weightDecay']);
    this.#opt = new Optimizer(params);
    this.#set(adamWOptions('options', o));
  }

  /** @param {ReturnType<typeof adamWOptions>} h */
  #set(h) {
    this.#h = h;
  }

  /**
   * PyTorch's state_dict(): { state: { [index]: { step, exp_avg,
   * exp_avg_sq } }, param_groups: [{ lr, betas, eps, weight_decay, params }] }
   * (copies; only parameters that a step has updated have a state).
   * @returns {OptimizerStateDict}
   */
  stateDict() {
    const group = { lr: this.lr, betas: [...this.betas], eps: this.eps, weight_decay: this.weightDecay };
    return this.#opt.stateDict(group, (s) => ({ step: s.step, exp_avg: s.m.slice(), exp_avg_sq: s.v.slice() }));
  }

  /**
   * Loads a stateDict() (or PyTorch's, as JSON): the moments, each
   * parameter's step and the hyperparameters; all checked first, all or
   * nothing. Returns the optimizer.
   * @param {OptimizerStateDict} dict
   * @returns {this}
   */
  loadStateDict(dict) {
    const hyper = this.#opt.loadStateDict(dict, ADAMW_KIND, (g) => adamWOptions('stateDict.param_groups[0]', {
      lr: g.lr, betas: g.betas, eps: g.eps, weightDecay: g.weight_decay,
    }), (s, n, name) => ({
      step: checkInteger(`${name}.step`, s.step),
      m: stateTensor(s, 'exp_avg', n, name),
      v: stateTensor(s, 'exp_avg_sq', n, name),
    }));
    this.#set(hyper);
    return this;
  }

  /** @returns {readonly Updated[]} */
  get params() {
    return this.#opt.params;
  }

  /**
   * One update of every parameter that has a gradient, all of them in one
   * wasm call (src/model/optim.h has the per-element rule).
   */
  step() {
    const [beta1, beta2] = this.betas;
    const h = [f(1 - this.lr * this.weightDecay), f(1 - beta1), f(beta2), f(1 - beta2), f(this.eps)];
    const init = (/** @type {number} */ n) => ({ step: 0, m: new Float32Array(n), v: new Float32Array(n) });
    const tensors = this.#opt.withGradients(init).map(([p, g, state]) => {
      state.step += 1;
      return {
        p, g, m: state.m, v: state.v,
        minusStep: f(-(this.lr / (1 - beta1 ** state.step))), correction2: f(Math.sqrt(1 - beta2 ** state.step)),
      };
    });
    if (tensors.length) this.#update(h, tensors);
  }

  /** @param {boolean} [setToNone] */
  zeroGrad(setToNone = true) {
    this.#opt.zeroGrad(setToNone);
  }
}

/**
 * The AdamW class of a runtime: its steps run `update` (the engine's).
 * @param {AdamWUpdate} update
 * @returns {typeof AdamW}
 */
export const bindAdamW = (update) => ({
  AdamW: class extends AdamW {
    static [UPDATE] = update;
  },
}).AdamW;

/**
 * SGD's hyperparameters, checked (`prefix` names them in errors).
 * @param {string} prefix
 * @param {{ lr?: unknown, momentum?: unknown, dampening?: unknown, weightDecay?: unknown, nesterov?: unknown }} o
 */
function sgdOptions(prefix, o) {
  const lr = checkNonNegative(`${prefix}.lr`, o.lr ?? 1e-3);
  const momentum = checkNonNegative(`${prefix}.momentum`, o.momentum ?? 0);
  const dampening = checkNonNegative(`${prefix}.dampening`, o.dampening ?? 0);
  const weightDecay = checkNonNegative(`${prefix}.weightDecay`, o.weightDecay ?? 0);
  const nesterov = checkBoolean(`${prefix}.nesterov`, o.nesterov ?? false);
  if (nesterov && (momentum <= 0 || dampening !== 0)) {
    throw new RangeError(`${prefix}.nesterov needs momentum > 0 and dampening 0, ` +
      `got momentum ${momentum} and dampening ${dampening}`);
  }
  return { lr, momentum, dampening, weightDecay, nesterov };
}

/**
 * AdamW's hyperparameters, checked (`prefix` names them in errors).
 * @param {string} prefix
 * @param {{ lr?: unknown, betas?: unknown, eps?: unknown, weightDecay?: unknown }} o
 */
function adamWOptions(prefix, o) {
  const lr = checkNonNegative(`${prefix}.lr`, o.lr ?? 1e-3);
  const b = o.betas ?? [0.9, 0.999];
  if (!Array.isArray(b) || b.length !== 2) {
    throw new TypeError(`${prefix}.betas must be an Array of two numbers in [0, 1), got ${describe(b)}`);
  }
  /** @type {readonly [number, number]} */
  const betas = Object.freeze([checkProbability(`${prefix}.betas[0]`, b[0]), checkProbability(`${prefix}.betas[1]`, b[1])]);
  const eps = checkNonNegative(`${prefix}.eps`, o.eps ?? 1e-8);
  const weightDecay = checkNonNegative(`${prefix}.weightDecay`, o.weightDecay ?? 1e-2);
  return { lr, betas, eps, weightDecay };
}

/**
 * A state's tensor `key`: a Float32Array or an array of numbers of `length`, copied.
 * @param {Record<string, unknown>} state
 * @param {string} key
 * @param {number} length
 * @param {string} name
 * @returns {Float32Array}
 */
function stateTensor(state, key, length, name) {
  const values = toFloat32(state[key]);
  if (!values) {
    throw new TypeError(`${name}.${key} must be a Float32Array or an array of numbers, got ${describe(state[key])}`);
  }
  if (values.length !== length) throw new RangeError(`${name}.${key} must have ${length} values, got ${values.length}`);
  return Float32Array.from(values);
}
