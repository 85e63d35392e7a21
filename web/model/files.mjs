// Where a real model's files come from: the user's own (an <input type=file
// multiple>: config.json, one or more .safetensors shards, tokenizer.json
// for the Llama family) or the Hugging Face hub, fetched by the browser
// with progress and kept in the Cache API so a second visit reads them from
// disk. The hub's base URL is configurable (?hub=...): tests serve a small
// model from the page's own origin.

/** The models offered from the hub: label → repository. */
export const HUB_MODELS = {
  gpt2: 'openai-community/gpt2',
  distilgpt2: 'distilbert/distilgpt2',
  'SmolLM2-135M': 'HuggingFaceTB/SmolLM2-135M',
};

const CACHE = 'causal-attention-models-v1';

/**
 * The files a model needs, sorted out of what the user picked.
 * @param {FileList | File[]} list
 * @returns {Promise<{ config: string, safetensors: Uint8Array[], tokenizer: string | null, names: string[] }>}
 */
export async function readPicked(list) {
  const files = [...list];
  const config = files.find((f) => f.name === 'config.json');
  const shards = files.filter((f) => f.name.endsWith('.safetensors')).sort((a, b) => a.name.localeCompare(b.name));
  if (!config) throw new Error(`config.json is missing among the ${files.length} file(s) picked (${names(files)})`);
  if (!shards.length) throw new Error(`no .safetensors file among the files picked (${names(files)})`);
  const tokenizer = files.find((f) => f.name === 'tokenizer.json');
  return {
    config: await config.text(),
    safetensors: await Promise.all(shards.map(async (f) => new Uint8Array(await f.arrayBuffer()))),
    tokenizer: tokenizer ? await tokenizer.text() : null,
    names: files.map((f) => f.name),
  };
}

/** @param {File[]} files */
const names = (files) => files.map((f) => f.name).join(', ') || 'none';

/**
 * A repository's files from the hub (or the base URL given), with progress.
 * Sharded checkpoints (model.safetensors.index.json) load every shard.
 * @param {string} base  e.g. 'https://huggingface.co'
 * @param {string} repo
 * @param {(done: number, total: number, what: string) => void} progress
 */
export async function fetchFromHub(base, repo, progress) {
  const url = (file) => `${base.replace(/\/$/, '')}/${repo}/resolve/main/${file}`;
  const config = new TextDecoder().decode(await get(url('config.json'), progress));
  const type = JSON.parse(config).model_type;
  const tokenizer = type === 'gpt2' ? null : new TextDecoder().decode(await get(url('tokenizer.json'), progress));
  let shards = ['model.safetensors'];
  const index = await get(url('model.safetensors.index.json'), progress, { optional: true });
  if (index) shards = [...new Set(Object.values(JSON.parse(new TextDecoder().decode(index)).weight_map))].sort();
  const safetensors = [];
  for (const shard of shards) safetensors.push(/** @type {Uint8Array} */ (await get(url(shard), progress)));
  return { config, safetensors, tokenizer, names: ['config.json', ...shards] };
}

/**
 * One file's bytes: from the Cache API when it holds them, else fetched
 * (streamed, reporting progress) and stored there.
 * @param {string} url
 * @param {(done: number, total: number, what: string) => void} progress
 * @param {{ optional?: boolean }} [options]  a 404 gives null instead of an error
 * @returns {Promise<Uint8Array | null>}
 */
async function get(url, progress, { optional = false } = {}) {
  const cache = globalThis.caches ? await caches.open(CACHE).catch(() => null) : null;
  let response = await cache?.match(url);
  const fromCache = Boolean(response);
  if (!response) {
    response = await fetch(url);
    if (response.status === 404 && optional) return null;
    if (!response.ok) throw new Error(`${url} answered ${response.status} ${response.statusText}`);
  }
  const total = Number(response.headers.get('content-length')) || 0;
  const what = url.slice(url.lastIndexOf('/') + 1);
  const reader = /** @type {ReadableStream<Uint8Array>} */ (response.clone().body).getReader();
  const chunks = [];
  let done = 0;
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) break;
    chunks.push(value);
    done += value.length;
    progress(done, total, fromCache ? `${what} (cached)` : what);
  }
  const bytes = new Uint8Array(done);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  if (!fromCache) await cache?.put(url, response).catch(() => {});
  return bytes;
}
