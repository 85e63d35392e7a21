// Hugging Face checkpoints (config.json and safetensors tensors) mapped to
// the book's model layout (hf-families.mjs says what each model type needs):
// the configuration in the book's form and a state dict under the book's
// parameter names. Everything is checked before anything is built; each
// error is a TypeError or RangeError naming the config key or the tensors
// that are wrong, and nothing is returned half-done.
import { describe } from '../api/validate.mjs';
import { gpt2Plan, llamaPlan } from './hf-families.mjs';

/** @import { SafetensorsFile, SafetensorsTensor } from './safetensors.mjs' */
/** @import { GPTConfig, LlamaConfig, MappedCheckpoint } from './hf-families.mjs' */

/**
 * One shard's tensors: readSafetensors's result or its `tensors` Map.
 * @typedef {Map<string, SafetensorsTensor> | SafetensorsFile} TensorSource
 */
export const SUPPORTED_MODEL_TYPES = ['gpt2', 'llama'];
const LIST_AT_MOST = 5;

/**
 * @param {unknown} config
 * @returns {Record<string, unknown>}
 */
function parseConfig(config) {
  let value = config;
  if (typeof config === 'string') {
    try {
      value = JSON.parse(config);
    } catch (e) {
      throw new TypeError(`config must be a config.json object or its JSON text, got text that is not JSON (${e.message})`);
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`config must be a config.json object or its JSON text, got ${describe(value)}`);
  }
  return /** @type {Record<string, unknown>} */ (value);
}

const showShape = (/** @type {readonly number[]} */ shape) => `[${shape.join(', ')}]`;

/**
 * The shards' tensors as one Map; a name in two shards is an error.
 * @param {unknown} tensorsMap
 * @returns {Map<string, SafetensorsTensor>}
 */
function mergeShards(tensorsMap) {
  const shards = Array.isArray(tensorsMap) ? tensorsMap : [tensorsMap];
  /** @type {Map<string, SafetensorsTensor>} */
  const all = new Map();
  /** @type {Map<string, number>} */
  const shardOf = new Map();
  shards.forEach((shard, i) => {
    const map = shard instanceof Map ? shard : /** @type {{ tensors?: unknown }} */ (shard)?.tensors;
    if (!(map instanceof Map)) {
      const name = Array.isArray(tensorsMap) ? `tensorsMap[${i}]` : 'tensorsMap';
      throw new TypeError(`${name} must be a Map of tensors (or readSafetensors's result), got ${describe(shard)}`);
    }
    for (const [name, tensor] of map) {
      if (all.has(name)) {
        throw new RangeError(`tensorsMap: tensor '${name}' is in shard ${shardOf.get(name)} and again in shard ${i}`);
      }
      all.set(name, tensor);
      shardOf.set(name, i);
    }
  });
  return all;
}

/**
 * At most LIST_AT_MOST of `names`, then "and N more".
 * @param {string[]} names
 */
function listNames(names) {
  const shown = names.slice(0, LIST_AT_MOST).join(', ');
  return names.length > LIST_AT_MOST ? `${shown} and ${names.length - LIST_AT_MOST} more` : shown;
}

/**
 * Maps a Hugging Face checkpoint to the book's model: its config.json
 * (object or JSON text) and its tensors (readSafetensors's results, one
 * per shard, or their Maps). Names may carry the `transformer.` (gpt2) or
 * `model.` (llama) prefix. The state dict's tensors are Float32Arrays that
 * may be shared (see CheckpointStateDict).
 * @param {string | Record<string, unknown>} config
 * @param {TensorSource | TensorSource[]} tensorsMap
 * @returns {MappedCheckpoint}
 */
export function mapCheckpoint(config, tensorsMap) {
  const c = parseConfig(config);
  const type = c.model_type;
  if (typeof type !== 'string' || !SUPPORTED_MODEL_TYPES.includes(type)) {
    const Err = typeof type === 'string' ? RangeError : TypeError;
    throw new Err(`config.model_type must be one of ${SUPPORTED_MODEL_TYPES.map((t) => `'${t}'`).join(', ')}, got ${describe(type)}`);
  }
  const { cfg, plan } = type === 'gpt2' ? gpt2Plan(c) : llamaPlan(c);
  const tensors = mergeShards(tensorsMap);

  // Names without the prefix (lm_head.weight has none in either family).
  /** @type {Map<string, string>} */
  const fileName = new Map();
  let prefixed = false;
  for (const name of tensors.keys()) {
    const canonical = name.startsWith(plan.prefix) ? name.slice(plan.prefix.length) : name;
    prefixed ||= canonical !== name;
    const other = fileName.get(canonical);
    if (other !== undefined) {
      throw new RangeError(`tensorsMap: '${other}' and '${name}' are the same tensor (with and without the prefix '${plan.prefix}')`);
    }
    fileName.set(canonical, name);
  }
  const shown = (/** @type {string} */ canonical) =>
    fileName.get(canonical) ?? (prefixed && canonical !== 'lm_head.weight' ? plan.prefix + canonical : canonical);

  const missing = [...plan.needs].filter(([name, n]) => !n.optional && !fileName.has(name))
    .map(([name]) => `'${shown(name)}'` + (plan.missingNote.has(name) ? ` (${plan.missingNote.get(name)})` : ''));
  const unexpected = [...fileName].filter(([canonical]) => !plan.needs.has(canonical) && !plan.ignore.test(canonical))
    .map(([, name]) => `'${name}'`);
  if (missing.length || unexpected.length) {
    const s = (/** @type {number} */ n) => (n === 1 ? '' : 's');
    const problems = [];
    if (missing.length) problems.push(`missing ${missing.length} tensor${s(missing.length)}: ${listNames(missing)}`);
    if (unexpected.length) problems.push(`${unexpected.length} unexpected tensor${s(unexpected.length)}: ${listNames(unexpected)}`);
    throw new RangeError(`tensorsMap does not hold the ${type} model config describes: ${problems.join('; ')}`);
  }

  for (const [canonical, n] of plan.needs) {
    const name = fileName.get(canonical);
    if (name === undefined) continue;
    const tensor = /** @type {SafetensorsTensor} */ (tensors.get(name));
    if (tensor === null || typeof tensor !== 'object' || !Array.isArray(tensor.shape)) {
      throw new TypeError(`tensor '${name}' must be an object { dtype, shape, data } (as readSafetensors gives), got ${describe(tensor)}`);
    }
    if (!('data' in tensor) || !(tensor.data instanceof Float32Array)) {
      throw new TypeError(`tensor '${name}' has dtype ${tensor.dtype}, which is not read: the model needs it as F32, F16 or BF16`);
    }
    if (tensor.shape.join() !== n.shape.join()) {
      throw new RangeError(`tensor '${name}' must have shape ${showShape(n.shape)} (${n.how}), got ${showShape(tensor.shape)}`);
    }
    const length = n.shape.reduce((x, y) => x * y, 1);
    if (tensor.data.length !== length) {
      throw new RangeError(`tensor '${name}' of shape ${showShape(n.shape)} must hold ${length} values, got ${tensor.data.length}`);
    }
  }
  const get = (/** @type {string} */ canonical) => {
    const name = fileName.get(canonical);
    const tensor = name === undefined ? undefined : tensors.get(name);
    return tensor && 'data' in tensor ? tensor.data : undefined;
  };
  const stateDict = plan.build(get);
  return type === 'gpt2'
    ? { family: 'gpt2', cfg: /** @type {GPTConfig} */ (cfg), stateDict }
    : { family: 'llama', cfg: /** @type {LlamaConfig} */ (cfg), stateDict };
}
