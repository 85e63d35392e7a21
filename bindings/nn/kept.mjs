// What a module's training forward keeps for its one backward (Kept,
// copyInto) and the gradient arrays a backward accumulates into
// (gradOrZeros): the same for every module, written once.

/**
 * The activations a training forward kept, handed to one backward. Throws
 * (TypeError) when there are none, saying why.
 * @template T
 */
export class Kept {
  /** @type {T | null} */
  #value = null;
  #evalForward = false;
  /** @type {string | undefined} */
  #unsupported;

  /**
   * After a forward: in training mode, keeps what `make()` returns (called
   * only then: eval mode copies nothing); in eval mode, drops what it had.
   * `unsupported` (a reason) drops it too, and backward() then says why.
   * @param {boolean} training
   * @param {() => T} make
   * @param {string} [unsupported]
   */
  set(training, make, unsupported) {
    this.#value = training && !unsupported ? make() : null;
    this.#evalForward = !training;
    this.#unsupported = training ? unsupported : undefined;
  }

  /**
   * Takes them (one backward per forward, as PyTorch frees its graph).
   * `check(value)` runs first (the gradOutput check): when it throws,
   * they stay for a backward with a valid gradOutput.
   * @param {(value: T) => void} [check]
   * @returns {T}
   */
  take(check) {
    const value = this.#value;
    if (!value && this.#unsupported) {
      throw new TypeError(`backward() cannot follow the last forward(): ${this.#unsupported}`);
    }
    if (!value) {
      throw new TypeError(this.#evalForward
        ? 'backward() needs a forward() in training mode; the last forward() ran in eval mode (call train() and forward() again)'
        : 'backward() needs a forward() in training mode first (each forward() allows one backward())');
    }
    check?.(value);
    this.#value = null;
    return value;
  }
}

/**
 * A copy of `a` for a module to keep: written into `spare` (an array the
 * module kept before and no longer needs) when the lengths match, so that a
 * training loop's steps allocate nothing; else a new array.
 * @param {Float32Array | null | undefined} spare
 * @param {Float32Array} a
 * @returns {Float32Array}
 */
export function copyInto(spare, a) {
  if (spare?.length !== a.length) return a.slice();
  spare.set(a);
  return spare;
}

/**
 * The gradient array a backward accumulates into: the current one, or zeros.
 * @type {(grad: Float32Array | null, length: number) => Float32Array}
 */
export const gradOrZeros = (grad, length) => grad ?? new Float32Array(length);
