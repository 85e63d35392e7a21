// torch.optim.SGD and torch.optim.AdamW over the modules' parameters
// (module.mjs Parameter: live `data` and `grad` Float32Arrays), with
// PyTorch's defaults and update rules: the single-tensor loops of
// torch/optim/sgd.py and adamw.py, which CPU tensors run. Each tensor op is
// rounded to float32 as PyTorch's float tensors are (Math.fround); its
// scalar factors are Python floats, rounded to float32 where an op meets a
// tensor. Parameters whose grad is null (no backward reached them) are
// skipped, as PyTorch skips grad None.

import {
  checkBoolean, checkOptionNames, checkProbability, describe,
} from '../engine/validate.mjs';

const f = Math.fround;

/** A non-negative finite number. */
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
 */
function collectParameters(params) {
  const list = [];
  const add = (p, where) => {
    if (p && typeof p.parameters === 'function') {
      for (const q of p.parameters()) list.push([q, `${where} '${q.name}'`]);
    } else if (p && p.data instanceof Float32Array) {
      list.push([p, where]);
    } else {
      throw new TypeError(
        `${where} must be a module or a parameter ({ data: Float32Array, grad }), got ${describe(p)}`);
    }
  };
  if (Array.isArray(params)) params.forEach((p, i) => add(p, `params[${i}]`));
  else add(params, 'params');
  if (!list.length) throw new RangeError('params must hold at least one parameter, got none');
  const seen = new Set();
  for (const [p, where] of list) {
    if (seen.has(p.data)) throw new RangeError(`${where} appears more than once in params`);
    seen.add(p.data);
  }
  return list.map(([p]) => p);
}

/** What both optimizers share: the parameter list, per-parameter state, zeroGrad. */
class Optimizer {
  #state = new Map();

  constructor(params) {
    /** The parameters updated by step(), in order. */
    this.params = Object.freeze(collectParameters(params));
  }

  /** Resets every parameter's gradient: to null (default, as PyTorch) or zeros. */
  zeroGrad(setToNone = true) {
    checkBoolean('setToNone', setToNone);
    for (const p of this.params) {
      if (setToNone) p.grad = null;
      else p.grad?.fill(0);
    }
  }

  // The parameters with a gradient, each with its state (created by `init`
  // on first use). Every gradient is checked before any is returned, so a
  // step that throws has changed nothing: a step is all or nothing.
  withGradients(init) {
    const ready = [];
    for (const p of this.params) {
      const grad = p.grad;
      if (grad === null || grad === undefined) continue;
      if (!(grad instanceof Float32Array) || grad.length !== p.data.length) {
        const Err = grad instanceof Float32Array ? RangeError : TypeError;
        throw new Err(`the gradient of a parameter${p.name ? ` '${p.name}'` : ''} must be a ` +
          `Float32Array of length ${p.data.length}, got ${describe(grad)}`);
      }
      ready.push([p.data, grad]);
    }
    return ready.map(([data, grad]) => {
      if (!this.#state.has(data)) this.#state.set(data, init(data.length));
      return [data, grad, this.#state.get(data)];
    });
  }
}

/**
 * torch.optim.SGD(params, lr = 1e-3, momentum = 0, dampening = 0,
 * weight_decay = 0, nesterov = false): per element
 *   d = g + weightDecay·p
 *   b = d on the first step, else momentum·b + (1 - dampening)·d
 *   d = nesterov ? d + momentum·b : b        (when momentum != 0)
 *   p = p - lr·d
 */
export class SGD {
  #opt;

  constructor(params, options) {
    const o = checkOptionNames('options', options, ['lr', 'momentum', 'dampening', 'weightDecay', 'nesterov']);
    this.#opt = new Optimizer(params);
    this.lr = checkNonNegative('options.lr', o.lr ?? 1e-3);
    this.momentum = checkNonNegative('options.momentum', o.momentum ?? 0);
    this.dampening = checkNonNegative('options.dampening', o.dampening ?? 0);
    this.weightDecay = checkNonNegative('options.weightDecay', o.weightDecay ?? 0);
    this.nesterov = checkBoolean('options.nesterov', o.nesterov ?? false);
    if (this.nesterov && (this.momentum <= 0 || this.dampening !== 0)) {
      throw new RangeError('options.nesterov needs momentum > 0 and dampening 0, ' +
        `got momentum ${this.momentum} and dampening ${this.dampening}`);
    }
  }

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
  #opt;

  constructor(params, options) {
    const o = checkOptionNames('options', options, ['lr', 'betas', 'eps', 'weightDecay']);
    this.#opt = new Optimizer(params);
    this.lr = checkNonNegative('options.lr', o.lr ?? 1e-3);
    const betas = o.betas ?? [0.9, 0.999];
    if (!Array.isArray(betas) || betas.length !== 2) {
      throw new TypeError(`options.betas must be an Array of two numbers in [0, 1), got ${describe(betas)}`);
    }
    this.betas = Object.freeze([checkProbability('options.betas[0]', betas[0]), checkProbability('options.betas[1]', betas[1])]);
    this.eps = checkNonNegative('options.eps', o.eps ?? 1e-8);
    this.weightDecay = checkNonNegative('options.weightDecay', o.weightDecay ?? 1e-2);
  }

  get params() {
    return this.#opt.params;
  }

  /** One update of every parameter that has a gradient. */
  step() {
    const [beta1, beta2] = this.betas;
    const decay = f(1 - this.lr * this.weightDecay);
    const w1 = f(1 - beta1);
    const b2 = f(beta2);
    const c2 = f(1 - beta2);
    const eps = f(this.eps);
    const init = (n) => ({ step: 0, m: new Float32Array(n), v: new Float32Array(n) });
    for (const [p, g, state] of this.#opt.withGradients(init)) {
      state.step += 1;
      const stepSize = this.lr / (1 - beta1 ** state.step);
      const correction2 = f(Math.sqrt(1 - beta2 ** state.step));
      const minusStep = f(-stepSize);
      const { m, v } = state;
      for (let i = 0; i < p.length; i++) {
        p[i] = f(p[i] * decay);
        m[i] = f(m[i] + w1 * f(g[i] - m[i]));
        v[i] = f(f(v[i] * b2) + f(f(c2 * g[i]) * g[i]));
        const denom = f(f(f(Math.sqrt(v[i])) / correction2) + eps);
        p[i] = f(p[i] + f(f(minusStep * m[i]) / denom));
      }
    }
  }

  zeroGrad(setToNone = true) {
    this.#opt.zeroGrad(setToNone);
  }
}
