// The package's types, nn part: what training takes besides the modules,
// the loss and the optimizers (bindings/nn/loss.mjs, optim.mjs).
// Re-exported by index.d.ts; types only.

import type { Module, Parameter } from './layers.js';

/** A parameter an optimizer can update without a module: its values and its gradient. */
export interface ParameterLike {
  /** The values, updated in place. */
  readonly data: Float32Array;
  /** The gradient (same length), or null: skipped by step(). */
  grad: Float32Array | null;
}

/** What an optimizer updates: a module, or an array of modules and parameters. */
export type Parameters = Module | Array<Module | Parameter | ParameterLike>;

/** Options of {@link CausalAttentionRuntime.crossEntropy}. */
export interface CrossEntropyOptions {
  /** Targets equal to this count for nothing (PyTorch's ignore_index). Default -100. */
  ignoreIndex?: number;
}

/** What {@link CausalAttentionRuntime.crossEntropy} returns. */
export interface CrossEntropyResult {
  /** The mean loss over the targets not ignored (NaN when all are), rounded to float32. */
  loss: number;
  /** Its gradient with respect to the logits, [N, C]; zero rows for ignored targets. */
  gradLogits: Float32Array;
}

/** Options of {@link CausalAttentionRuntime.optim}.SGD, PyTorch's names and defaults. */
export interface SGDOptions {
  /** Learning rate. Default 1e-3. */
  lr?: number;
  /** Momentum factor. Default 0. */
  momentum?: number;
  /** Dampening of the momentum. Default 0. */
  dampening?: number;
  /** L2 penalty added to the gradient. Default 0. */
  weightDecay?: number;
  /** Nesterov momentum (needs momentum > 0, dampening 0). Default false. */
  nesterov?: boolean;
}

/** Options of {@link CausalAttentionRuntime.optim}.AdamW, PyTorch's names and defaults. */
export interface AdamWOptions {
  /** Learning rate. Default 1e-3. */
  lr?: number;
  /** Decay rates of the two moments. Default [0.9, 0.999]. */
  betas?: [number, number];
  /** Added to the denominator. Default 1e-8. */
  eps?: number;
  /** Decoupled weight decay (p *= 1 - lr·weightDecay). Default 1e-2. */
  weightDecay?: number;
}

/**
 * What both optimizers share: PyTorch's defaults and single-tensor update
 * rules, each operation rounded to float32 as PyTorch's tensors are.
 */
export interface Optimizer {
  /**
   * The parameters step() updates, in order: each module's Parameters and
   * each ParameterLike passed, as it was passed (it has no name).
   */
  readonly params: readonly (Parameter | ParameterLike)[];
  /**
   * One update of every parameter that has a gradient (those whose grad is
   * null are skipped). All or nothing: every gradient is checked first (a
   * Float32Array of its parameter's length: else TypeError, or RangeError for
   * a wrong length), so a step that throws has changed no parameter.
   */
  step(): void;
  /** Every parameter's gradient to null (default) or zeros. */
  zeroGrad(setToNone?: boolean): void;
}

/**
 * An optimizer's state as PyTorch's optimizer.state_dict() has it: each
 * parameter's state by its index in `params` (only those a step has
 * updated; SGD: `{ momentum_buffer }`, AdamW: `{ step, exp_avg, exp_avg_sq }`,
 * Float32Arrays, or number arrays when loaded from JSON) and one param group
 * (PyTorch's hyperparameter names, `params` the indices 0 … n − 1).
 */
export interface OptimizerStateDict {
  /** Each updated parameter's state, by its index in `params` ('0', '1', ...). */
  state: Record<string, Record<string, unknown>>;
  /** One group: the hyperparameters under PyTorch's names, and the parameters' indices. */
  param_groups: Array<Record<string, unknown> & {
    /** The indices 0 … n − 1 of the optimizer's parameters. */
    params: number[];
  }>;
}

/** torch.optim.SGD. */
export interface SGD extends Optimizer {
  /** Learning rate. Each hyperparameter is settable (a schedule) and checked as the constructor checks it. */
  lr: number;
  /** Momentum factor. */
  momentum: number;
  /** Dampening of the momentum. */
  dampening: number;
  /** L2 penalty. */
  weightDecay: number;
  /** Nesterov momentum. */
  nesterov: boolean;
  /** PyTorch's state_dict(): momentum buffers and hyperparameters (copies). */
  stateDict(): OptimizerStateDict;
  /**
   * Loads a stateDict() (or PyTorch's, through JSON): all checked first
   * (TypeError / RangeError naming the field), all or nothing. Returns the optimizer.
   */
  loadStateDict(dict: OptimizerStateDict): this;
}

/**
 * torch.optim.AdamW: decoupled weight decay (p *= 1 - lr·weightDecay), bias
 * corrections 1 - β^t.
 */
export interface AdamW extends Optimizer {
  /** Learning rate. Each hyperparameter is settable (a schedule) and checked as the constructor checks it. */
  lr: number;
  /** Decay rates of the two moments. */
  betas: readonly [number, number];
  /** Added to the denominator. */
  eps: number;
  /** Decoupled weight decay. */
  weightDecay: number;
  /** PyTorch's state_dict(): each parameter's step and moments, the hyperparameters (copies). */
  stateDict(): OptimizerStateDict;
  /**
   * Loads a stateDict() (or PyTorch's, through JSON): all checked first
   * (TypeError / RangeError naming the field), all or nothing; training
   * then continues exactly where the saved optimizer was. Returns the optimizer.
   */
  loadStateDict(dict: OptimizerStateDict): this;
}
