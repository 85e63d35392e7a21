// Containers of modules, as torch.nn's: a ModuleList holds modules that a
// model calls in its own way (residual streams, skip paths), registered as
// children '0', '1', ... so that train()/eval(), parameters() and the state
// dict ('0.W_query.weight', ...) reach them.

import { describe } from '../engine/validate.mjs';
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
