// Containers of modules, as torch.nn's: a ModuleList holds modules that a
// model calls in its own way (residual streams, skip paths), a Sequential
// calls them one after another; both register them as children '0', '1',
// ... so that train()/eval(), parameters() and the state dict
// ('0.W_query.weight', ...) reach them.

import { describe, product } from '../engine/validate.mjs';
import { Module } from './module.mjs';

/**
 * nn.ModuleList(modules): indexable (list[0], at(-1)), iterable, with
 * `length`; append() and extend() register more. Entries cannot be
 * reassigned (list[0] = m throws), so the list and its children agree.
 */
export class ModuleList extends Module {
  constructor(modules = []) {
    super();
    this.extend(modules);
  }

  /** Number of modules. */
  get length() {
    return this.children().length;
  }

  /** Adds `module` as the next child (named by its index). Returns the list. */
  append(module) {
    const index = this.length;
    this.registerModule(String(index), module);
    Object.defineProperty(this, index, { value: module, enumerable: true, writable: false });
    return this;
  }

  /** Appends every module of an iterable (an Array, another ModuleList). Returns the list. */
  extend(modules) {
    if (modules === null || typeof modules?.[Symbol.iterator] !== 'function') {
      throw new TypeError(`modules must be an iterable of modules, got ${describe(modules)}`);
    }
    for (const module of [...modules]) this.append(module);
    return this;
  }

  /** The module at `index` (negative counts from the end), or undefined. */
  at(index) {
    return this.children().at(index);
  }

  [Symbol.iterator]() {
    return this.children()[Symbol.iterator]();
  }
}

/**
 * nn.Sequential(...modules): forward(x, shape) runs each module's
 * forward(x, shape) on the one before's output, backward(gradOutput) each
 * backward in reverse. The shape passed on keeps all but the last axis and
 * takes the output's width (an Embedding first: its indices' shape plus
 * embeddingDim). A ModuleList otherwise (children '0', '1', ...).
 */
export class Sequential extends ModuleList {
  constructor(...modules) {
    super(modules);
  }

  /**
   * The last module's output for x of shape `shape` (the first module's
   * input, checked by it).
   */
  forward(x, shape) {
    let y = x;
    let dims = shape;
    for (const module of this) {
      const out = module.forward(y, dims);
      const rows = module.embeddingDim === undefined ? dims.slice(0, -1) : (dims ?? [y.length]);
      dims = [...rows, out.length / product(...rows)];
      y = out;
    }
    return y;
  }

  /** The backward of each module in reverse: the gradient of the first module's input (null for indices). */
  backward(gradOutput) {
    let g = gradOutput;
    for (const module of this.children().reverse()) g = module.backward(g);
    return g;
  }
}
