// The options table: each of ca.attention's masking options
// against our own plain call on the same inputs, one thread (the
// single-threaded build), timed interleaved run by run in this process so
// that each ratio compares numbers taken under the same machine load; and
// onnxruntime-web's ONNX Attention op (opset 24, one thread) with the
// feature against itself without it, where it has the feature, and ours
// against it head to head with that feature. Not a test:
// nothing here asserts on time.
//
//   node bench/run.mjs --options [--quick] [--rows=padding,bshd]   (--rows: the rows whose name has one of these)

import { encodeModel } from './onnx.mjs';
import { makeUniform } from './shapes.mjs';
import { median, now, planRuns, warmUp } from './timing.mjs';

/**
 * The rows: a shape, the plain call's options, the option's, and the
 * speed target (the option's time / the plain call's).
 */
function rows(quick) {
  const long = quick ? 2048 : 8192;
  const causal = { batch: 1, heads: 8, queryLength: long, headDim: 64, causal: true };
  // Padding without causal (an encoder's padded batch): the work is T·keyLengths[b].
  const pad = { batch: 8, heads: 8, queryLength: 1024, headDim: 64, causal: false };
  const mid = { batch: 1, heads: 8, queryLength: quick ? 512 : 2048, headDim: 64, causal: true };
  // keyLengths averaging half of 1024: 64, 192, ..., 960.
  const keyLengths = Int32Array.from({ length: 8 }, (_, b) => Math.round(1024 * (b + 0.5) / 8));
  const tq = mid.queryLength;
  // A relative-position bias (ALiBi-like, finite), on the causal call: what
  // reading a float mask tile by tile costs.
  const floatMask = new Float32Array(tq * tq);
  for (let i = 0; i < tq; i++) for (let j = 0; j < tq; j++) floatMask[i * tq + j] = -0.01 * Math.abs(i - j);
  return [
    { name: `sliding window 512, T ${long} (8 heads, D 64, causal)`, shape: causal, option: { window: { left: 511 } }, target: 0.2 },
    { name: 'padding: batch 8, T 1024 (not causal), keyLengths averaging half', shape: pad, option: { keyLengths }, target: 0.65 },
    { name: `softcap 50, T ${tq}`, shape: mid, option: { softcap: 50 }, target: 1.35 },
    { name: `sinks, T ${tq}`, shape: mid, option: { sinks: new Float32Array(8).fill(0.5) }, target: 1.05 },
    { name: `a [Tq, Tk] float mask (a position bias), T ${tq}`, shape: mid, option: { mask: floatMask, maskShape: [tq, tq] }, target: 1.5 },
    { name: `'bshd' layout, T ${tq}`, shape: mid, option: { layout: 'bshd' }, target: 1.1 },
  ];
}

/** Times two runs interleaved: median ms of each (also the int8 table's, int8.mjs). */
export async function pair(runA, runB, policy) {
  const a = await warmUp(runA, policy);
  const b = await warmUp(runB, policy);
  const runs = planRuns(a.estimateMs + b.estimateMs, Math.max(a.estimateMs, b.estimateMs), policy);
  const ta = [], tb = [];
  for (let r = 0; r < runs; r++) {
    for (const [run, times] of r % 2 ? [[runB, tb], [runA, ta]] : [[runA, ta], [runB, tb]]) {
      const t0 = now();
      await run();
      times.push(now() - t0);
    }
  }
  return { plainMs: median(ta), optionMs: median(tb), runs };
}

/** The ONNX Attention op (opset 24) on [B, H, T, D], is_causal; softcap or a [T, T] float mask as asked. */
export function ortModel({ batch, heads, queryLength: t, headDim }, { softcap, mask }) {
  const dims = [batch, heads, t, headDim];
  const inputs = ['q', 'k', 'v'].map((name) => ({ name, dims }));
  if (mask) inputs.push({ name: 'attn_mask', dims: [t, t] });
  return encodeModel({
    nodes: [{
      op: 'Attention', inputs: ['q', 'k', 'v', ...(mask ? ['attn_mask'] : [])], outputs: ['out'],
      attrs: { is_causal: 1, ...(softcap && { softcap: { f: softcap } }) },
    }],
    inputs,
    outputs: [{ name: 'out', dims }],
    opsets: [['', 24]],
    irVersion: 11,
  });
}

/**
 * Runs the table. Returns its rows: { name, target, plainMs, optionMs,
 * ratio } for ours, and onnxruntime-web's where it has the feature.
 * @param {{ policy: object, log: (...a: unknown[]) => void, quick?: boolean, seed: number, only?: string[] }} o
 */
export async function runOptionsTable({ policy, log, quick = false, seed, only }) {
  const { init } = await import('causal-attention');
  const ca = await init({ build: 'single' });
  const uniform = makeUniform(seed);
  const results = [];
  const inputsFor = (s) => {
    const n = s.batch * s.heads * s.queryLength * s.headDim;
    return { q: uniform(n), k: uniform(n), v: uniform(n), out: new Float32Array(n) };
  };
  for (const row of rows(quick).filter((r) => !only || only.some((word) => r.name.includes(word)))) {
    const { q, k, v, out } = inputsFor(row.shape);
    const plain = { ...row.shape, out };
    const withOption = { ...plain, ...row.option };
    try {
      const r = await pair(() => ca.attention(q, k, v, plain), () => ca.attention(q, k, v, withOption), policy);
      results.push({ who: 'ours', name: row.name, target: row.target, ...r, ratio: r.optionMs / r.plainMs });
      log(`  ours ${row.name}: ${r.optionMs.toFixed(1)} ms vs ${r.plainMs.toFixed(1)} ms plain: ×${(r.optionMs / r.plainMs).toFixed(3)} (target ≤ ${row.target})`);
    } catch (e) {
      results.push({ who: 'ours', name: row.name, target: row.target, status: 'n/a', reason: e.message });
      log(`  ours ${row.name}: n/a (${e.message})`);
    }
  }
  if (!only) results.push(...await ortRows({ policy, log, quick, inputsFor, ca }));
  ca.dispose();
  return results;
}

/**
 * onnxruntime-web's Attention op: softcap and a float mask, against its
 * is_causal call; and head to head, ours with the feature against its with
 * the same feature on the same inputs (who 'ours ÷ onnxruntime-web': the
 * option column holds ours, the plain column onnxruntime-web's).
 */
async function ortRows({ policy, log, quick, inputsFor, ca }) {
  const out = [];
  let ort;
  try {
    const { createRequire } = await import('node:module');
    const { dirname } = await import('node:path');
    const { pathToFileURL } = await import('node:url');
    ort = await import('onnxruntime-web');
    ort.env.wasm.numThreads = 1;
    ort.env.wasm.proxy = false;
    ort.env.logLevel = 'error';
    ort.env.wasm.wasmPaths = `${pathToFileURL(dirname(createRequire(import.meta.url).resolve('onnxruntime-web'))).href}/`;
  } catch (e) {
    return [{ who: 'onnxruntime-web', name: 'all', status: 'n/a', reason: e.message }];
  }
  const shape = { batch: 1, heads: 8, queryLength: quick ? 512 : 2048, headDim: 64 };
  const t = shape.queryLength;
  const mask = new Float32Array(t * t);
  for (let i = 0; i < t; i++) for (let j = 0; j < t; j++) mask[i * t + j] = -0.01 * Math.abs(i - j);
  const { q, k, v } = inputsFor(shape);
  const dims = [1, 8, t, 64];
  const session = async (feature) => {
    const s = await ort.InferenceSession.create(ortModel(shape, feature), { executionProviders: ['wasm'] });
    const feeds = { q: new ort.Tensor('float32', q, dims), k: new ort.Tensor('float32', k, dims), v: new ort.Tensor('float32', v, dims) };
    if (feature.mask) feeds.attn_mask = new ort.Tensor('float32', mask, [t, t]);
    return { run: () => s.run(feeds), release: () => s.release() };
  };
  const plain = await session({});
  for (const [name, feature] of [[`softcap 50, T ${t}`, { softcap: 50 }], [`a [Tq, Tk] float mask (a position bias), T ${t}`, { mask: true }]]) {
    try {
      const s = await session(feature);
      const r = await pair(plain.run, s.run, policy);
      out.push({ who: 'onnxruntime-web', name, ...r, ratio: r.optionMs / r.plainMs });
      log(`  onnxruntime-web ${name}: ${r.optionMs.toFixed(1)} ms vs ${r.plainMs.toFixed(1)} ms is_causal: ×${(r.optionMs / r.plainMs).toFixed(3)}`);
      const o = { ...shape, causal: true, out: new Float32Array(q.length),
        ...(feature.softcap && { softcap: feature.softcap }), ...(feature.mask && { mask, maskShape: [t, t] }) };
      const h = await pair(s.run, () => ca.attention(q, k, v, o), policy);
      await s.release();
      out.push({ who: 'ours ÷ onnxruntime-web', name, ...h, ratio: h.optionMs / h.plainMs });
      log(`  ours ${name}: ${h.optionMs.toFixed(1)} ms vs onnxruntime-web's ${h.plainMs.toFixed(1)} ms: ×${(h.optionMs / h.plainMs).toFixed(3)}`);
    } catch (e) {
      out.push({ who: 'onnxruntime-web', name, status: 'n/a', reason: String(e.message ?? e).split('\n')[0] });
      log(`  onnxruntime-web ${name}: n/a (${String(e.message ?? e).split('\n')[0]})`);
    }
  }
  await plain.release();
  return out;
}

/** The table as text. */
export function renderOptions(results) {
  const lines = ['| who | option | option ms | plain ms | ratio | target |', '|---|---|---:|---:|---:|---:|'];
  for (const r of results) {
    if (r.status === 'n/a') lines.push(`| ${r.who} | ${r.name} | n/a: ${r.reason} | | | |`);
    else lines.push(`| ${r.who} | ${r.name} | ${r.optionMs.toFixed(1)} | ${r.plainMs.toFixed(1)} | ${r.ratio.toFixed(3)} | ${r.target ? `≤ ${r.target}` : ''} |`);
  }
  return lines.join('\n');
}
