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

import { checkBoolean, checkTensor, describe } from '../api/validate.mjs';
import { product } from '../engine/heap.mjs';
import { checkWeightsDtype } from './weights-dtype.mjs';

/**
 * @import { KVCacheOptions } from '../api/attention.d.ts'
 * @import { ForwardResult, RopeFreqConfig } from './attention-modules.d.ts'
 * @import { Module as PublicModule, StateDict, StateDictInput } from './layers.d.ts'
 */
/** @import { KVCache } from '../api/kv-cache.mjs' */
/** @import { WeightsDtype } from './weights-dtype.mjs' */
/** @import { resolveAttentionOptions } from '../api/attention-options.mjs' */
/** @import { MT19937 } from '../api/random.mjs' */
/** @import { ModuleClasses } from './modules.mjs' */

/**
 * What a runtime gives its modules (index.mjs builds it and passes it to
 * defineModules): the one contract between the engine layer and nn/.
 * @typedef {object} Engine
 * @property {MT19937} generator  the runtime's generator (manualSeed):
 *   initialisation and default dropout seeds
 * @property {() => void} checkAlive  throws (TypeError) after dispose
 * @property {() => boolean} alive  false after dispose
 * @property {boolean} skipInit  true while a runtime builds a model whose
 *   parameters it is about to load (loadPretrained): Linear and Embedding
 *   start from zeros instead of drawing (no time spent, no draw taken from
 *   the generator)
 * @property {(call: LayerCall) => LayerResult} layerForward  src/model/layer.h's
 *   layer on copies of the arrays; with call.keep, also `saved`
 * @property {(call: LayerBackwardCall) => { gradX: Float32Array, grads: LayerGrads }} layerBackward
 *   its backward: `grads` are the ones passed in plus this backward's, as
 *   new arrays (an array for each array passed in)
 * @property {import('../engine/engine.mjs').Engine['linearForward']} linearForward  src/gemm/linear.h's Linear
 *   (stored_linear.h's StoredLinear on a stored weight)
 * @property {(x: Float32Array, rows: number, inFeatures: number, outFeatures: number,
 *   weight: Float32Array, gradY: Float32Array, weightGrad: Float32Array, biasGrad: Float32Array | null)
 *   => LinearGradients} linearBackward  LinearBackward, accumulating into copies of weightGrad and biasGrad
 * @property {import('../engine/engine.mjs').Engine['storeWeights']} storeWeights  a Linear's weight
 *   stored as bfloat16 or int8 in a heap block of its own (linearForward takes it)
 * @property {import('../engine/engine.mjs').Engine['storedValues']} storedValues  the values a stored
 *   weight holds, widened to float32
 * @property {import('../engine/engine.mjs').Engine['freeBlock']} freeWeights  frees that block
 * @property {import('../engine/engine.mjs').Engine['normForward']} normForward  src/model/norm.h's
 *   LayerNorm / RMSNorm: y and the row statistics
 * @property {import('../engine/engine.mjs').Engine['normBackward']} normBackward  their backward
 * @property {import('../engine/engine.mjs').Engine['activation']} activation  GELU, SiLU, SiLU(a) · b
 * @property {import('../engine/engine.mjs').Engine['activationBackward']} activationBackward  their backward
 * @property {(layout: Required<Omit<KVCacheOptions, 'window'>> & Pick<KVCacheOptions, 'window'>) => KVCache} createCache
 *   a KVCache for useCache
 */

/**
 * The layer's call and result types are the engine's (engine/engine.mjs),
 * named here as the modules use them.
 * @typedef {import('../engine/engine.d.ts').LinearGradients} LinearGradients
 * @typedef {import('../engine/engine.d.ts').LayerParamArrays} LayerParams
 * @typedef {import('../engine/engine.d.ts').LayerGradArrays} LayerGrads
 * @typedef {import('../engine/engine.d.ts').LayerCallOptions} LayerOptions
 * @typedef {import('../engine/engine.d.ts').LayerForwardCall} LayerCall
 * @typedef {import('../engine/engine.d.ts').LayerForwardResult} LayerResult
 * @typedef {import('../engine/engine.d.ts').LayerBackwardCall} LayerBackwardCall
 * @typedef {import('../engine/embind.mjs').Activations<Float32Array>} LayerSaved
 * @typedef {typeof import('../engine/embind.mjs').PROJECTIONS[number]} LayerArrayName
 */

/** The static property of a runtime's subclasses: { engine, classes }. */
const BINDING = Symbol('causal-attention runtime binding');

/**
 * A runtime's binding: its engine and its classes (the subclasses by name).
 * @typedef {{ readonly engine: Engine, readonly classes: ModuleClasses }} Binding
 */

/**
 * A class being constructed (`new.target`), bound to a runtime or not.
 * @typedef {{ readonly name: string, readonly [BINDING]?: Binding }} BindableClass
 */

/**
 * The runtime binding of the class being constructed (`new.target`):
 * { engine, classes } (classes: the runtime's subclasses by name).
 * @param {BindableClass | undefined} newTarget
 * @returns {Binding}
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
 * The runtime's classes: for each base class, a subclass bound to `engine`,
 * named by its key. Returns them by name.
 * @param {Engine} engine
 * @param {Record<string, new (...args: any[]) => Module>} bases  by name
 * @returns {ModuleClasses}
 */
export function bindClasses(engine, bases) {
  // Filled below: each entry a subclass with its base's signature, which is
  // what ModuleClasses says.
  const classes = /** @type {ModuleClasses} */ ({});
  const binding = Object.freeze({ engine, classes });
  /** @type {Record<string, unknown>} */
  const byName = classes;
  // By key, not Base.name: a minifier renames the classes (a production
  // bundle's Linear.name is 't'), never the keys.
  for (const [name, Base] of Object.entries(bases)) {
    // A computed key names the class (ca.Linear.name === 'Linear').
    byName[name] = { [name]: class extends Base { static [BINDING] = binding; } }[name];
  }
  return { ...classes };
}

/**
 * One parameter of a module, as an optimizer sees it: its name (as in the
 * state dict), `data` (the live Float32Array) and `grad` (the live gradient
 * array, or null before the first backward and after zeroGrad()).
 */
export class Parameter {
  /** The module, read by property name. */
  #owner;
  #key;

  /**
   * @param {string} name
   * @param {Module} owner  holds the array at `key` and its gradient at `${key}Grad`
   * @param {string} key
   * @param {readonly number[]} shape  PyTorch's shape of the flat array
   */
  constructor(name, owner, key, shape) {
    this.name = name;
    this.shape = shape;
    this.#owner = owner;
    this.#key = key;
    Object.freeze(this);
  }

  /** @returns {Float32Array} */
  get data() {
    return /** @type {Float32Array} */ (props(this.#owner)[this.#key]);
  }

  /**
   * How the parameter is stored: 'float32', or a quantized Linear's
   * weightsDtype for its weight (which no optimizer updates).
   * @returns {WeightsDtype}
   */
  get weightsDtype() {
    const dtype = this.#key === 'weight' ? props(this.#owner).weightsDtype : undefined;
    return typeof dtype === 'string' ? /** @type {WeightsDtype} */ (dtype) : 'float32';
  }

  /** @returns {Float32Array | null} */
  get grad() {
    return /** @type {Float32Array | null} */ (props(this.#owner)[`${this.#key}Grad`]);
  }

  /** @param {Float32Array | null} value */
  set grad(value) {
    props(this.#owner)[`${this.#key}Grad`] = value;
  }
}

/** Called on every module of a tree after loadStateDict() wrote new values (Linear re-stores its weight). */
export const PARAMETERS_LOADED = Symbol('parametersLoaded');
/** Called on a module with the property's name when a new array is assigned to one of its parameters. */
export const PARAMETER_REPLACED = Symbol('parameterReplaced');
/**
 * module[DEFER_PARAMETER](key, materialize): the parameter at `key` lets go
 * of its array and reads `materialize()` when it is next read (Linear's
 * stored weight: no float32 copy in JS until something asks for one).
 */
export const DEFER_PARAMETER = Symbol('deferParameter');

/** nn.Module: modes, children, parameters, state dicts and gradients. */
export class Module {
  /** The runtime it was constructed through (null for an unbound subclass). */
  #engine;
  /** @type {Map<string, Module>} Child modules by state-dict name, in registration order. */
  #children = new Map();
  /** @type {[string, string, readonly number[]][]} Own parameters: [state-dict name, property, shape] (its gradient is property + 'Grad'). */
  #parameters = [];
  /** @type {Map<string, (materialize: () => Float32Array) => void>} Defers each own parameter's array (DEFER_PARAMETER). */
  #deferrers = new Map();

  constructor() {
    this.#engine = /** @type {BindableClass} */ (new.target)[BINDING]?.engine ?? null;
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
   * @template {PublicModule} M  any module the declarations allow (checked
   *   here: an instance of this class)
   * @param {string} name
   * @param {M} module
   * @returns {M}
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
   * `name` (default `key`) of shape `shape` (default [its length]); its
   * gradient lives at `${key}Grad` (null until a backward). From then on
   * the property is checked where it is set: only a Float32Array of the
   * same length is taken, so no forward reads past a user's array.
   * @param {string} name
   * @param {string} [key]
   * @param {readonly number[]} [shape]
   */
  registerParameter(name, key = name, shape) {
    const own = props(this);
    const initial = own[key];
    if (!(initial instanceof Float32Array)) {
      throw new TypeError(`this.${key} must be a Float32Array, got ${describe(initial)}`);
    }
    const dims = Object.freeze(shape === undefined ? [initial.length] : [...shape]);
    if (!dims.every((d) => Number.isInteger(d) && d >= 0) || product(...dims) !== initial.length) {
      throw new RangeError(`shape must be whole numbers whose product is this.${key}'s length ${initial.length}, ` +
        `got ${describe(shape)}`);
    }
    const label = `${this.constructor.name}.${key}`;
    const length = initial.length;
    /** @type {Float32Array | null} null while deferred */
    let data = initial;
    /** @type {(() => Float32Array) | null} */
    let deferred = null;
    const replaced = () => /** @type {{ [PARAMETER_REPLACED]?: (key: string) => void }} */ (this)[PARAMETER_REPLACED]?.(key);
    Object.defineProperty(this, key, {
      configurable: true,
      enumerable: true,
      get: () => {
        if (deferred) {
          data = deferred();
          deferred = null;
        }
        return data;
      },
      set: (value) => {
        data = checkTensor(label, value, length, `shape [${dims.join(', ')}]`);
        deferred = null;
        replaced();
      },
    });
    this.#deferrers.set(key, (materialize) => {
      data = null;
      deferred = materialize;
    });
    this.#parameters.push([name, key, dims]);
    own[`${key}Grad`] ??= null;
  }

  /**
   * See DEFER_PARAMETER.
   * @param {string} key
   * @param {() => Float32Array} materialize
   */
  [DEFER_PARAMETER](key, materialize) {
    const defer = this.#deferrers.get(key);
    if (!defer) throw new TypeError(`this.${key} is not a registered parameter`);
    defer(materialize);
  }

  /**
   * Stores the weight of every Linear in this module and its submodules as
   * `weightsDtype` ('int8', 'bfloat16', or 'float32' to undo), for
   * inference: see Linear.quantize(). Embeddings and norms stay float32.
   * Returns this.
   * @param {WeightsDtype} weightsDtype
   * @returns {this}
   */
  quantize(weightsDtype) {
    checkWeightsDtype('weightsDtype', weightsDtype);
    this.#engine?.checkAlive();
    for (const child of this.#children.values()) child.quantize(weightsDtype);
    return this;
  }

  /**
   * Frees the wasm memory this module and its submodules hold (stored
   * weights, KV caches); the module stays usable (float32, no cache).
   * Harmless twice.
   */
  dispose() {
    for (const child of this.#children.values()) child.dispose();
  }

  [Symbol.dispose]() {
    this.dispose();
  }

  /** Sets training mode here and in every submodule (dropout acts, forward keeps what backward needs). Returns this. */
  /**
   * @param {boolean} [mode]
   * @returns {this}
   */
  train(mode = true) {
    checkBoolean('mode', mode);
    this.training = mode;
    for (const child of this.#children.values()) child.train(mode);
    return this;
  }

  /**
   * Evaluation mode: train(false). Returns this.
   * @returns {this}
   */
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
   * @param {string} [prefix]
   * @returns {[string, Parameter][]}
   */
  namedParameters(prefix = '') {
    /** @type {[string, Parameter][]} */
    const own = this.#parameters.map(([name, key, shape]) => [`${prefix}${name}`, new Parameter(`${prefix}${name}`, this, key, shape)]);
    const nested = [...this.#children].flatMap(([name, child]) => child.namedParameters(`${prefix}${name}.`));
    return [...own, ...nested];
  }

  /** Every parameter, in the state dict's order (see Parameter). */
  parameters() {
    return this.namedParameters().map(([, p]) => p);
  }

  /**
   * Parameters by PyTorch name (copies of the arrays), `prefix` prepended.
   * @param {string} [prefix]
   * @returns {StateDict}
   */
  stateDict(prefix = '') {
    return Object.fromEntries(this.namedParameters(prefix).map(([name, p]) => [name, p.data.slice()]));
  }

  /**
   * Loads parameters by PyTorch name. Values may be Float32Arrays, flat
   * number arrays or nested arrays (tensor.tolist()). Every name and size
   * is checked first; all problems are reported in one error (RangeError,
   * or TypeError when a value is not numeric) and nothing is loaded.
   * @param {StateDictInput} dict
   * @returns {this}
   */
  loadStateDict(dict) {
    this.#engine?.checkAlive();
    if (dict === null || typeof dict !== 'object' || Array.isArray(dict)) {
      throw new TypeError(`stateDict must be an object of named parameters, got ${describe(dict)}`);
    }
    const expected = new Map(this.namedParameters());
    /** @type {string[]} */
    const problems = [];
    let typeProblem = false;
    /** @type {[Parameter, Float32Array][]} */
    const loaded = [];
    for (const [name, p] of expected) {
      const length = p.data.length;
      if (!(name in dict)) {
        problems.push(`missing '${name}' (${length} values)`);
        continue;
      }
      const values = toFloat32(dict[name]);
      const nested = nestedShape(dict[name]);
      if (!values) {
        typeProblem = true;
        problems.push(`'${name}' must be a Float32Array or an array of numbers, got ${describe(dict[name])}`);
      } else if (nested?.length === 0) {
        problems.push(`'${name}' is a nested array whose rows differ in length or depth`);
      } else if (nested && nested.join() !== p.shape.join()) {
        problems.push(`size mismatch for '${name}': copying a param with shape [${nested.join(', ')}] ` +
          `from the state dict, the shape in the current model is [${p.shape.join(', ')}]`);
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
    this.#parametersLoaded();
    return this;
  }

  #parametersLoaded() {
    /** @type {{ [PARAMETERS_LOADED]?: () => void }} */ (this)[PARAMETERS_LOADED]?.();
    for (const child of this.#children.values()) child.#parametersLoaded();
  }

  /**
   * The parameters' gradients by state-dict name: the live arrays (so that,
   * as with PyTorch's .grad, clipping them in place changes what an
   * optimizer sees), or null for a parameter no backward has reached.
   * @returns {Record<string, Float32Array | null>}
   */
  gradients() {
    return Object.fromEntries(this.namedParameters().map(([name, p]) => [name, p.grad]));
  }

  /**
   * Resets every gradient: to null (setToNone, the default, as PyTorch's
   * zero_grad()) or to zeros in place.
   * @param {boolean} [setToNone]
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
 * @param {Module} owner
 * @param {string} key
 * @param {Float32Array} grad
 * @param {Float32Array} result
 */
export function keepGrad(owner, key, grad, result) {
  props(owner)[`${key}Grad`] = grad;
  if (result !== grad) grad.set(result);
}

/**
 * Makes a module's sizes and submodules read-only after its constructor
 * set them (as the declarations say): a forward reads them to size its
 * arrays, so a changed inFeatures or contextLength would read past the
 * parameters. Assigning one is a TypeError naming it.
 * @param {object} module
 * @param {...string} keys
 */
export function fixFields(module, ...keys) {
  for (const key of keys) {
    const value = /** @type {Record<string, unknown>} */ (module)[key];
    const label = `${module.constructor.name}.${key}`;
    Object.defineProperty(module, key, {
      enumerable: true,
      configurable: false,
      get: () => value,
      set: (/** @type {unknown} */ other) => {
        throw new TypeError(`${label} is fixed when the module is constructed (${describe(value)}), got ${describe(other)}: ` +
          'construct a new module instead');
      },
    });
  }
}

/**
 * A parameter a module was constructed without (a Linear's bias with
 * bias false, sinks without options.sinks): `module[key]` stays null, and
 * setting it is a TypeError saying why (`reason`), as no forward, backward,
 * state dict or optimizer would include it.
 * @param {Module} module
 * @param {string} key
 * @param {string} reason
 */
export function absentParameter(module, key, reason) {
  const label = `${module.constructor.name}.${key}`;
  Object.defineProperty(module, key, {
    configurable: true,
    enumerable: true,
    get: () => null,
    set: (value) => {
      if (value === null) return;
      throw new TypeError(`${label} cannot be set: ${reason}, so it has no ${key} (got ${describe(value)})`);
    },
  });
}

/**
 * A module's properties by name: parameters and their gradients are
 * registered by property name (registerParameter), so read and written so.
 * @param {Module} module
 * @returns {Record<string, unknown>}
 */
const props = (module) => /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (module));

/**
 * The shape of a nested array (tensor.tolist()); [] for a ragged one
 * (rows of different lengths or depths); null for a flat one (a
 * Float32Array or an array of numbers, checked by its length alone).
 * @param {unknown} value
 * @returns {number[] | null}
 */
function nestedShape(value) {
  if (!Array.isArray(value) || !Array.isArray(value[0])) return null;
  /** @type {number[]} */
  const shape = [];
  for (let level = value; Array.isArray(level); level = level[0]) shape.push(level.length);
  /** @type {(v: unknown, depth: number) => boolean} */
  const rectangular = (v, depth) => depth === shape.length
    ? !Array.isArray(v)
    : Array.isArray(v) && v.length === shape[depth] && v.every((x) => rectangular(x, depth + 1));
  return rectangular(value, 0) ? shape : [];
}

/**
 * A value from a state dict as a Float32Array, or null.
 * @param {unknown} value
 * @returns {Float32Array | null}
 */
export function toFloat32(value) {
  if (value instanceof Float32Array) return value;
  if (Array.isArray(value)) {
    const flat = value.flat(Infinity);
    if (flat.every((x) => typeof x === 'number')) return Float32Array.from(flat);
  }
  return null;
}
