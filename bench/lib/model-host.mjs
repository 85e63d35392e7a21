// Worker thread holding one implementation of the GPT-2-small-shaped model
// for the model table (bench/lib/model.mjs): ours (GPTModel, single or
// threads build) or onnxruntime (web: wasm backend; node: CPU execution
// provider) on the graph of bench/lib/onnx-gpt.mjs, both with the weights
// of gptStateDict(cfg, seed). The model loads once; the main thread then
// drives its rows run by run, so that the implementations are interleaved.
//
// Messages (one at a time):
//   open    { impl, threads, cfg, seed, check: { ids, next }, weightsDtype?, cacheDtype? (ours) } → { status, label, threads, loadMs,
//           prefill, step }  (logits of the check: prefill of `ids`, then one cached step of `next`)
//   prepare { row: { kind: 'prefill' | 'step', tokens, steps } } → {}  (a step row: prefill
//           tokens − steps tokens into the cache, untimed; its last step attends over `tokens`)
//   run     { count } → { samples: ms[] }  (the prepared row; a step row advances the cache)
//   memory  {} → { wasmBytes, jsBytes }
//   split   { row } → where ours' time goes (see splitOurs)
import { parentPort } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { installWasmMemoryTracker, trackedWasmBytes } from './memory.mjs';
import { gptModelBytes } from './onnx-gpt.mjs';
import { now } from './timing.mjs';

installWasmMemoryTracker();

/** Token ids 0.. of a row: the same for every implementation. */
export const tokenIds = (n, vocab, offset = 0) => Int32Array.from({ length: n }, (_, i) => ((offset + i) * 7919 + 13) % vocab);

async function createOurs({ threads, cfg, dict, weightsDtype = 'float32', cacheDtype = 'float32' }) {
  const { init } = await import('causal-attention');
  const ca = await init(threads === 1 ? { build: 'single' } : { build: 'threads', threads });
  const m = new ca.GPTModel(cfg).eval();
  m.loadStateDict(dict);
  // bfloat16 / int8: every Linear's weight stored in wasm memory, read there.
  m.quantize(weightsDtype);
  // The parameters' arrays stay in JS (a float32 Linear stages its weight into wasm memory per call).
  const jsBytes = m.parameters().reduce((s, p) => s + p.data.byteLength, 0);
  return {
    label: `ours (${ca.build}${weightsDtype === 'float32' ? '' : `, ${weightsDtype} weights`}` +
      `${cacheDtype === 'float32' ? '' : `, ${cacheDtype} KV cache`})`,
    threads: ca.threads,
    forward: (ids) => m.forward(ids, [1, ids.length]),
    prefillCache(ids) {
      m.resetCache();
      return m.forward(ids, [1, ids.length], { useCache: true, cacheDtype });
    },
    step: (id) => m.forward(Int32Array.of(id), [1, 1], { useCache: true, cacheDtype }),
    memory: () => ({ wasmBytes: ca.memoryBytes, jsBytes }),
    split: (r) => splitOurs(m, r, cfg),
  };
}

/**
 * Where ours' time goes on a row (prefill of `tokens`, or `steps` cached
 * steps on the cache prepare() left, before the row's own), each module's
 * forward timed by wrapping it on the instance (the package unchanged):
 * the FeedForward and out_head Linears (their GEMM, staging weight and
 * bias into wasm memory, the output out), the attention layer (one C++
 * layer call: its Q/K/V/out projections with their four weights staged,
 * the attention kernel, the KV cache append), LayerNorm, GELU,
 * embeddings; the rest is the model's JS glue (residual adds, positions).
 * Beside each group: its weights' bytes, and one JS copy of them
 * (TypedArray.set into a preallocated array): what the staging copies per call.
 */
function splitOurs(m, { kind, tokens, steps = 3 }, cfg) {
  const acc = new Map();
  const wrapped = [];
  const wrap = (mod, key) => {
    const inner = mod.forward;
    mod.forward = (...a) => {
      const t0 = now();
      const r = inner.apply(mod, a);
      acc.set(key, (acc.get(key) ?? 0) + now() - t0);
      return r;
    };
    wrapped.push(mod);
  };
  const groups = { linear: [], attention: [] };
  const KEYS = { Linear: 'linear', LayerNorm: 'norm', GELU: 'gelu', Embedding: 'embedding', MultiHeadAttention: 'attention' };
  const walk = (mod, inAttention) => {
    const type = mod.constructor.name;
    if (type === 'Linear') groups[inAttention ? 'attention' : 'linear'].push(mod);
    if (KEYS[type] && !inAttention) wrap(mod, KEYS[type]);
    for (const [, child] of mod.namedChildren()) walk(child, inAttention || type === 'MultiHeadAttention');
  };
  walk(m, false);
  const once = () => {
    acc.clear();
    const t0 = now();
    if (kind === 'prefill') m.forward(tokenIds(tokens, cfg.vocab_size), [1, tokens]);
    else m.forward(Int32Array.of(7), [1, 1], { useCache: true });
    return { totalMs: now() - t0, ...Object.fromEntries(acc) };
  };
  const samples = [];
  for (let i = 0; i < (kind === 'step' ? steps : 2); ++i) samples.push(once());
  for (const mod of wrapped) delete mod.forward; // the prototype's again
  const last = samples.slice(1);
  const mean = (k) => last.reduce((s, x) => s + (x[k] ?? 0), 0) / last.length;
  const all = [...groups.linear, ...groups.attention];
  const scratch = new Float32Array(Math.max(...all.map((l) => l.weight.length)));
  const copyMs = (list) => {
    const times = [];
    for (let r = 0; r < 5; ++r) {
      const t0 = now();
      for (const l of list) {
        scratch.set(l.weight);
        if (l.bias) scratch.set(l.bias);
      }
      times.push(now() - t0);
    }
    return Math.min(...times); // the first touches the scratch's pages
  };
  const bytes = (list) => list.reduce((n, l) => n + 4 * (l.weight.length + (l.bias?.length ?? 0)), 0);
  return {
    kind, totalMs: mean('totalMs'), linearMs: mean('linear'), attentionMs: mean('attention'), normMs: mean('norm'),
    geluMs: mean('gelu'), embeddingMs: mean('embedding'),
    linearBytes: bytes(groups.linear), linearCopyMs: copyMs(groups.linear),
    attentionBytes: bytes(groups.attention), attentionCopyMs: copyMs(groups.attention),
  };
}

async function createOrt({ impl, threads, cfg, dict }) {
  let ort;
  let sessionOptions;
  if (impl === 'ort-web') {
    ort = await import('onnxruntime-web');
    const dist = dirname(createRequire(import.meta.url).resolve('onnxruntime-web'));
    Object.assign(ort.env.wasm, { numThreads: threads, simd: true, proxy: false, wasmPaths: `${pathToFileURL(dist).href}/` });
    sessionOptions = { executionProviders: ['wasm'], graphOptimizationLevel: 'all' };
  } else {
    const mod = await import('onnxruntime-node');
    ort = mod.InferenceSession ? mod : mod.default;
    sessionOptions = {
      executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: threads, interOpNumThreads: 1,
      executionMode: 'sequential',
    };
  }
  ort.env.logLevel = 'error';
  const session = await ort.InferenceSession.create(gptModelBytes(cfg, dict), sessionOptions);
  const { n_layers: N, n_heads: H, emb_dim: E } = cfg;
  const empty = new ort.Tensor('float32', new Float32Array(0), [1, H, 0, E / H]);
  let cache = null; // the presents of the latest run
  let length = 0;
  const run = async (ids, start, past) => {
    const int64 = (f) => new ort.Tensor('int64', BigInt64Array.from(ids, (_, i) => BigInt(f(i))), [1, ids.length]);
    const feeds = { input_ids: int64((i) => ids[i]), position_ids: int64((i) => start + i) };
    for (let l = 0; l < N; ++l) {
      for (const kv of ['key', 'value']) feeds[`past_${kv}_${l}`] = past?.[`present_${kv}_${l}`] ?? empty;
    }
    return session.run(feeds);
  };
  return {
    label: impl === 'ort-web' ? 'onnxruntime-web' : 'onnxruntime-node',
    threads,
    async forward(ids) {
      return (await run(ids, 0, null)).logits.data;
    },
    async prefillCache(ids) {
      cache = await run(ids, 0, null);
      length = ids.length;
      return cache.logits.data;
    },
    // A step row's cache: `n` cached tokens of zeros, without a prefill (the
    // kernels do the same work whatever the values; the check in open()
    // ran a real prefill and step).
    zeroCache(n) {
      cache = {};
      for (let l = 0; l < N; ++l) {
        for (const kv of ['key', 'value']) {
          cache[`present_${kv}_${l}`] = new ort.Tensor('float32', new Float32Array(n * E), [1, H, n, E / H]);
        }
      }
      length = n;
    },
    async step(id) {
      cache = await run([id], length, cache);
      length += 1;
      return cache.logits.data;
    },
    memory: () => ({ wasmBytes: trackedWasmBytes(), jsBytes: 0 }),
  };
}

let model;
let cfg;
let row = null;
let stepsDone = 0;

const handlers = {
  async open(msg) {
    cfg = msg.cfg;
    const t0 = now();
    model = await (msg.impl === 'ours' ? createOurs(msg) : createOrt(msg));
    const loadMs = now() - t0;
    const { ids, next } = msg.check;
    const prefill = Float32Array.from(await model.forward(Int32Array.from(ids)));
    await model.prefillCache(Int32Array.from(ids));
    const step = Float32Array.from(await model.step(next));
    return {
      status: 'ready', label: model.label, threads: model.threads, loadMs, prefill: prefill.buffer, step: step.buffer,
    };
  },
  async prepare(msg) {
    row = msg.row;
    if (row.kind === 'step') {
      const n = row.tokens - row.steps;
      if (model.zeroCache) model.zeroCache(n);
      else await model.prefillCache(tokenIds(n, cfg.vocab_size));
      stepsDone = 0;
    }
    return {};
  },
  async run({ count }) {
    const samples = [];
    for (let i = 0; i < count; ++i) {
      if (row.kind === 'step' && stepsDone >= row.steps) throw new Error(`more than the ${row.steps} steps prepared`);
      const ids = row.kind === 'prefill' ? tokenIds(row.tokens, cfg.vocab_size) : null;
      const t0 = now();
      if (ids) await model.forward(ids);
      else await model.step(tokenIds(1, cfg.vocab_size, stepsDone++)[0]);
      samples.push(now() - t0);
    }
    return { samples };
  },
  memory: () => model.memory(),
  split: ({ row: r }) => model.split?.(r) ?? {},
};

parentPort.on('message', async (msg) => {
  let reply;
  try {
    reply = await handlers[msg.op](msg);
  } catch (e) {
    reply = { status: 'error', reason: String(e?.message ?? e).split('\n')[0] };
  }
  const transfer = [reply.prefill, reply.step].filter(Boolean);
  parentPort.postMessage(reply, transfer);
});
