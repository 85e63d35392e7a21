// What nn.Module gives every module here, written once: registered
// children (PyTorch's register_module, in registration order), train() /
// eval() reaching every submodule, parameters() / namedParameters(),
// stateDict() / loadStateDict() under PyTorch's names, gradients() and
// zeroGrad(); and how a class defined once at module scope reaches the
// runtime (engine) it was constructed through.
//
// Binding to a runtime: the classes here are defined once. A runtime hands
// out small subclasses of them (bindClasses) that carry its binding as a
// static symbol property; a constructor reads it from `new.target`, so
// `new ca.CausalAttention(...)` keeps its book signature, submodules are
// made with the same runtime's classes (so `mha.W_query instanceof
// ca.Linear`), and a user's `class Mine extends ca.CausalAttention`
// inherits the binding.

import { checkBoolean, describe } from '../engine/validate.mjs';

/** The static property of a runtime's subclasses: { engine, classes }. */
const BINDING = Symbol('causal-attention runtime binding');

/**
 * The runtime binding of the class being constructed (`new.target`):
 * { engine, classes } (classes: the runtime's subclasses by name).
 */
export function bindingOf(newTarget) {
  const binding = newTarget?.[BINDING];
  if (!binding) {
    throw new TypeError(`${newTarget?.name ?? 'a module'} must be constructed through a runtime ` +
      `(const ca = await init(); new ca.${newTarget?.name ?? 'Linear'}(...))`);
  }
  return binding;
}

/**
 * The runtime's classes: for each base class, a subclass of the same name
 * bound to `engine`. Returns them by name.
 */
export function bindClasses(engine, bases) {
  const classes = {};
  const binding = Object.freeze({ engine, classes });
  for (const Base of bases) {
    // A computed key names the class after its base (ca.Linear.name === 'Linear').
    classes[Base.name] = { [Base.name]: class extends Base { static [BINDING] = binding; } }[Base.name];
  }
  return { ...classes };
}

/**
 * One parameter of a module, as an optimizer sees it: its name (as in the
 * state dict), `data` (the live Float32Array) and `grad` (the live gradient
 * array, or null before the first backward and after zeroGrad()).
 */
export class Parameter {
  #owner;
  #key;

  constructor(name, owner, key) {
    this.name = name;
    this.#owner = owner;
    this.#key = key;
    Object.freeze(this);
  }

  get data() {
    return this.#owner[this.#key];
  }

  get grad() {
    return this.#owner[`${this.#key}Grad`];
  }

  set grad(value) {
    this.#owner[`${this.#key}Grad`] = value;
  }
}

/** nn.Module: modes, children, parameters, state dicts and gradients. */
export class Module {
  /** The runtime it was constructed through (null for an unbound subclass). */
  #engine;
  /** Child modules by state-dict name, in registration order. */
  #children = new Map();
  /** Own parameters: [state-dict name, property] (its gradient is property + 'Grad'). */
  #parameters = [];

  constructor() {
    this.#engine = new.target[BINDING]?.engine ?? null;
    this.#engine?.checkAlive();
    /** As nn.Module: modules start in training mode. */
    this.training = true;
  }

  /**
   * Registers `module` as a child named `name` (its state-dict prefix; the
   * property that holds it may be spelled otherwise: outProj is
   * 'out_proj'). Its mode follows this module's; its parameters come after
   * this module's own and those of earlier children, as PyTorch orders
   * them. Returns the module.
   */
  registerModule(name, module) {
    if (typeof name !== 'string' || name === '' || name.includes('.')) {
      throw new TypeError(`name must be a non-empty string without '.', got ${describe(name)}`);
    }
    if (!(module instanceof Module)) throw new TypeError(`module must be a Module, got ${describe(module)}`);
    if (this.#children.has(name)) throw new RangeError(`a child named '${name}' is already registered`);
    this.#children.set(name, module);
    return module;
  }

  /**
   * Registers the Float32Array at property `key` as a parameter named
   * `name` (default `key`); its gradient lives at `${key}Grad` (null until
   * a backward).
   */
  registerParameter(name, key = name) {
    if (!(this[key] instanceof Float32Array)) {
      throw new TypeError(`this.${key} must be a Float32Array, got ${describe(this[key])}`);
    }
    this.#parameters.push([name, key]);
    this[`${key}Grad`] ??= null;
  }

  /** Sets training mode here and in every submodule (dropout acts, forward keeps what backward needs). Returns this. */
  train(mode = true) {
    checkBoolean('mode', mode);
    this.training = mode;
    for (const child of this.#children.values()) child.train(mode);
    return this;
  }

  /** Evaluation mode: train(false). Returns this. */
  eval() {
    return this.train(false);
  }

  /** The direct children, in registration order. */
  children() {
    return [...this.#children.values()];
  }

  /** [name, child] of each direct child. */
  namedChildren() {
    return [...this.#children];
  }

  /**
   * [name, Parameter] of every parameter: this module's own, then each
   * child's under `${childName}.`, `prefix` prepended (the state dict's
   * names and order).
   */
  namedParameters(prefix = '') {
    const own = this.#parameters.map(([name, key]) => [`${prefix}${name}`, new Parameter(`${prefix}${name}`, this, key)]);
    const nested = [...this.#children].flatMap(([name, child]) => child.namedParameters(`${prefix}${name}.`));
    return [...own, ...nested];
  }

  /** Every parameter, in the state dict's order (see Parameter). */
  parameters() {
    return this.namedParameters().map(([, p]) => p);
  }

  /** Parameters by PyTorch name (copies of the arrays), `prefix` prepended. */
  stateDict(prefix = '') {
    return Object.fromEntries(this.namedParameters(prefix).map(([name, p]) => [name, p.data.slice()]));
  }

  /**
   * Loads parameters by PyTorch name. Values may be Float32Arrays, flat
   * number arrays or nested arrays (tensor.tolist()). Every name and size
   * is checked first; all problems are reported in one error (RangeError,
   * or TypeError when a value is not numeric) and nothing is loaded.
   */
  loadStateDict(dict) {
    this.#engine?.checkAlive();
    if (dict === null || typeof dict !== 'object' || Array.isArray(dict)) {
      throw new TypeError(`stateDict must be an object of named parameters, got ${describe(dict)}`);
    }
    const expected = new Map(this.namedParameters());
    const problems = [];
    let typeProblem = false;
    const loaded = [];
    for (const [name, p] of expected) {
      const length = p.data.length;
      if (!(name in dict)) {
        problems.push(`missing '${name}' (${length} values)`);
        continue;
      }
      const values = toFloat32(dict[name]);
      if (!values) {
        typeProblem = true;
        problems.push(`'${name}' must be a Float32Array or an array of numbers, got ${describe(dict[name])}`);
      } else if (values.length !== length) {
        problems.push(`'${name}' has ${values.length} values, expected ${length}`);
      } else {
        loaded.push([p, values]);
      }
    }
    for (const name of Object.keys(dict)) {
      if (!expected.has(name)) problems.push(`unexpected '${name}'`);
    }
    if (problems.length) {
      const Err = typeProblem ? TypeError : RangeError;
      throw new Err(`loadStateDict: ${problems.length} problem${problems.length > 1 ? 's' : ''}: ${problems.join('; ')}`);
    }
    for (const [p, values] of loaded) p.data.set(values);
    return this;
  }

  /**
   * The parameters' gradients by state-dict name: the live arrays (so that,
   * as with PyTorch's .grad, clipping them in place changes what an
   * optimizer sees), or null for a parameter no backward has reached.
   */
  gradients() {
    return Object.fromEntries(this.namedParameters().map(([name, p]) => [name, p.grad]));
  }

  /**
   * Resets every gradient: to null (setToNone, the default, as PyTorch's
   * zero_grad()) or to zeros in place.
   */
  zeroGrad(setToNone = true) {
    checkBoolean('setToNone', setToNone);
    for (const p of this.parameters()) {
      if (setToNone) p.grad = null;
      else p.grad?.fill(0);
    }
  }
}

/**
 * Adds the engine's accumulated gradient to a parameter: the array a
 * backward accumulated into (`grad`, the current one or fresh zeros) is the
 * parameter's gradient from now on, and `result` (the engine's copy of it)
 * is written into it, so that every backward updates the same array.
 */
export function keepGrad(owner, key, grad, result) {
  owner[`${key}Grad`] = grad;
  grad.set(result);
}

/** The gradient array a backward accumulates into: the current one, or zeros. */
export const gradOrZeros = (grad, length) => grad ?? new Float32Array(length);

/**
 * The activations a training forward kept, handed to one backward. Throws
 * (TypeError) when there are none, saying why.
 */
export class Kept {
  #value = null;
  #evalForward = false;
  #unsupported;

  /**
   * After a forward: in training mode, keeps what `make()` returns (called
   * only then: eval mode copies nothing); in eval mode, drops what it had.
   * `unsupported` (a reason) drops it too, and backward() then says why.
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

/** A value from a state dict as a Float32Array, or null. */
function toFloat32(value) {
  if (value instanceof Float32Array) return value;
  if (Array.isArray(value)) {
    const flat = value.flat(Infinity);
    if (flat.every((x) => typeof x === 'number')) return Float32Array.from(flat);
  }
  return null;
}
