// Containers of modules, as torch.nn's: a ModuleList holds modules that a
// model calls in its own way (residual streams, skip paths), a Sequential
// calls them one after another; both register them as children '0', '1',
// ... so that train()/eval(), parameters() and the state dict
// ('0.W_query.weight', ...) reach them.

import { describe } from '../api/validate.mjs';
import { product } from '../engine/heap.mjs';
import { Module } from './module.mjs';

/** @import { Module as PublicModule } from './layers.d.ts' */

/**
 * What Sequential calls on each module: any forward(x, shape) and
 * backward(gradOutput) (Linear, Embedding, the attention modules, a model's
 * own); embeddingDim marks an Embedding, whose input is indices.
 * @typedef {Module & {
 *   forward(x: Float32Array | Int32Array | Uint32Array | number[], shape: number[] | undefined): Float32Array,
 *   backward(gradOutput: Float32Array | null): Float32Array | null,
 *   embeddingDim?: number,
 * }} Step
 */

/**
 * nn.ModuleList(modules): indexable (list[0], at(-1)), iterable, with
 * `length`; append() and extend() register more. Entries cannot be
 * reassigned (list[0] = m throws), so the list and its children agree.
 * @template {PublicModule} [M=PublicModule]
 */
export class ModuleList extends Module {
  /** @param {Iterable<M>} [modules] */
  constructor(modules = []) {
    super();
    this.extend(modules);
  }

  /**
   * Number of modules.
   * @returns {number}
   */
  get length() {
    return this.children().length;
  }

  /**
   * Adds `module` as the next child (named by its index). Returns the list.
   * @param {M} module
   * @returns {this}
   */
  append(module) {
    const index = this.length;
    this.registerModule(String(index), module);
    Object.defineProperty(this, index, { value: module, enumerable: true, writable: false });
    return this;
  }

  /**
   * Appends every module of an iterable (an Array, another ModuleList). Returns the list.
   * @param {Iterable<M>} modules
   * @returns {this}
   */
  extend(modules) {
    if (modules === null || typeof modules?.[Symbol.iterator] !== 'function') {
      throw new TypeError(`modules must be an iterable of modules, got ${describe(modules)}`);
    }
    for (const module of [...modules]) this.append(module);
    return this;
  }

  /**
   * The module at `index` (negative counts from the end), or undefined.
   * @param {number} index
   * @returns {M | undefined}
   */
  at(index) {
    return this.#entries().at(index);
  }

  /** @returns {Iterator<M>} */
  [Symbol.iterator]() {
    return this.#entries()[Symbol.iterator]();
  }

  /**
   * The children: only append() registers them, so each is an M.
   * @returns {M[]}
   */
  #entries() {
    return /** @type {M[]} */ (/** @type {unknown} */ (this.children()));
  }
}

/**
 * nn.Sequential(...modules): forward(x, shape) runs each module's
 * forward(x, shape) on the one before's output, backward(gradOutput) each
 * backward in reverse. The shape passed on keeps all but the last axis and
 * takes the output's width (an Embedding first: its indices' shape plus
 * embeddingDim). A ModuleList otherwise (children '0', '1', ...).
 * @template {PublicModule} [M=PublicModule]
 * @extends {ModuleList<M>}
 */
export class Sequential extends ModuleList {
  /** @param {...M} modules */
  constructor(...modules) {
    super(modules);
  }

  /**
   * The last module's output for x of shape `shape` (the first module's
   * input, checked by it).
   * @param {Float32Array | Int32Array | Uint32Array | number[]} x
   * @param {number[]} [shape]
   * @returns {Float32Array}
   */
  forward(x, shape) {
    let y = x;
    let dims = shape;
    for (const module of this.#steps()) {
      const out = module.forward(y, dims);
      // Only an Embedding takes no shape: any other forward has checked it.
      const rows = module.embeddingDim === undefined
        ? /** @type {number[]} */ (dims).slice(0, -1) : (dims ?? [y.length]);
      dims = [...rows, out.length / product(...rows)];
      y = out;
    }
    // A Float32Array after any module; an empty Sequential hands x back as it is.
    return /** @type {Float32Array} */ (y);
  }

  /**
   * The backward of each module in reverse: the gradient of the first module's input (null for indices).
   * @param {Float32Array} gradOutput
   * @returns {Float32Array | null}
   */
  backward(gradOutput) {
    /** @type {Float32Array | null} */
    let g = gradOutput;
    for (const module of this.#steps().reverse()) g = module.backward(g);
    return g;
  }

  /**
   * The modules as steps (each one's forward and backward check what they
   * get, and the first module's checks x).
   * @returns {Step[]}
   */
  #steps() {
    return /** @type {Step[]} */ (this.children());
  }
}
