// The decode table: one generation step (one new token per head against a
// KV cache of L tokens) for GPT-2-small- and Llama-3-8B-shaped layers, ours
// with the cache resident in wasm memory against ours through attention()
// (the whole cache copied in per call: with kvHeads, and with the KV heads
// repeated as before grouped-query attention), onnxruntime-web's
// GroupQueryAttention and plain JS; beside the machine's single-thread read
// bandwidth for the same number of bytes, measured in the same run. Then
// the many-sequence rows at the Llama-3-8B layer: one cache of 8 ragged sequences
// against 8 single-sequence caches, and a window cache after 32 768 tokens
// against the full cache with the window option, each against
// onnxruntime-web's GroupQueryAttention (seqlens_k, local_window_size).
//
// Timing as the attention table (bench/run.mjs): every case in its own
// worker, ours resident (1 and 2 threads) stay open per shape and every
// other case is timed interleaved with them. Every timed step starts with
// cold caches (an untimed sweep of other memory, bench/lib/memory.mjs): the
// state a layer's KV cache is in when the rest of a model ran since its
// last step, and the same for every row whatever ran before it.

import { fmtBytes, fmtMs, fmtPct, fmtX, table, targetLine } from './format.mjs';
import { measureReadBandwidth } from './read-bandwidth.mjs';
import { interleave, openCase } from './runner.mjs';
import { DECODE_LENGTHS, DECODE_SEQUENCE_SHAPES, DECODE_SHAPES, decodeBytes, shapeName } from './shapes.mjs';

const peer = (file) => new URL(`../peers/${file}`, import.meta.url);

/** The rows of each shape, in display order. `variant` null: the peer's fastest. */
const CASES = [
  { key: 'resident-1', label: 'ours, resident KV cache', peer: 'ours.mjs', variant: 'resident KV cache', threads: 1 },
  { key: 'resident-2', label: 'ours, resident KV cache', peer: 'ours.mjs', variant: 'resident KV cache', threads: 2 },
  { key: 'bf16-1', label: 'ours, resident KV cache, bfloat16', peer: 'ours.mjs', variant: 'resident KV cache, bfloat16', threads: 1, dtype: 'bfloat16' },
  { key: 'int8-1', label: 'ours, resident KV cache, int8', peer: 'ours.mjs', variant: 'resident KV cache, int8', threads: 1, dtype: 'int8' },
  { key: 'warm-1', label: 'ours, resident KV cache, warm', peer: 'ours.mjs', variant: 'resident KV cache, warm', threads: 1, warm: true },
  { key: 'copied-1', label: 'ours, attention() (K/V copied in)', peer: 'ours.mjs', variant: 'attention(), K/V copied in', threads: 1 },
  { key: 'copied-2', label: 'ours, attention() (K/V copied in)', peer: 'ours.mjs', variant: 'attention(), K/V copied in', threads: 2 },
  { key: 'repeated-1', label: 'ours, attention() (K/V repeated per head)', peer: 'ours.mjs', variant: 'attention(), K/V repeated per head', threads: 1 },
  { key: 'repeated-2', label: 'ours, attention() (K/V repeated per head)', peer: 'ours.mjs', variant: 'attention(), K/V repeated per head', threads: 2 },
  { key: 'ort-web-1', label: 'onnxruntime-web GroupQueryAttention', peer: 'ort-web.mjs', variant: null, threads: 1 },
  { key: 'ort-web-2', label: 'onnxruntime-web GroupQueryAttention', peer: 'ort-web.mjs', variant: null, threads: 2 },
  { key: 'plain-js-1', label: 'plain JS loops', peer: 'plain-js.mjs', variant: null, threads: 1 },
];

const ORT_CASES = CASES.filter((c) => c.peer === 'ort-web.mjs');

/**
 * The many-sequence rows (shapes.mjs DECODE_SEQUENCE_SHAPES): the first two are
 * the reference pair as above; a `same` row computes the same numbers as
 * the row it names another way, checked to 1e-6 (bench/peers/ours.mjs).
 */
const SEQUENCE_CASES = {
  ragged: [
    { key: 'resident-1', label: 'ours, one cache of 8 sequences, one step', peer: 'ours.mjs', variant: 'resident KV cache', threads: 1 },
    { key: 'resident-2', label: 'ours, one cache of 8 sequences, one step', peer: 'ours.mjs', variant: 'resident KV cache', threads: 2 },
    { key: 'separate-1', label: 'ours, 8 single-sequence caches, 8 steps', peer: 'ours.mjs', variant: 'one cache per sequence', threads: 1, same: 'the one cache' },
    ...ORT_CASES,
  ],
  window: [
    { key: 'resident-1', label: 'ours, window cache (capacity 2·W)', peer: 'ours.mjs', variant: 'window cache', threads: 1 },
    { key: 'resident-2', label: 'ours, window cache (capacity 2·W)', peer: 'ours.mjs', variant: 'window cache', threads: 2 },
    { key: 'full-1', label: 'ours, full cache + window option', peer: 'ours.mjs', variant: 'full cache, window option', threads: 1, same: 'the window cache' },
    ...ORT_CASES,
  ],
};

/** The rows of a shape, in display order. */
const casesOf = (shape) => SEQUENCE_CASES[shape.row] ?? CASES;

/**
 * Runs the table (`quick`: the shortest cache only; `rows`: only the shapes
 * whose `row` is listed, e.g. ['ragged', 'window']). Resolves to { shapes:
 * [{ shape, bytes, bandwidth (cold), warm, rows }] } (bandwidths in GB/s).
 */
export async function runDecodeTable({ policy, seed, log, quick = false, rows: only }) {
  const all = [...DECODE_SHAPES, ...DECODE_SEQUENCE_SHAPES];
  const shapes = only ? all.filter((s) => only.includes(s.row))
    : quick ? DECODE_SHAPES.filter((s) => s.cacheLength === DECODE_LENGTHS[0]) : all;
  const results = [];
  for (const shape of shapes) {
    log(`decode: ${shapeName(shape)}`);
    const bytes = decodeBytes(shape);
    const bandwidth = [measureReadBandwidth(bytes, { cold: true })];
    const rows = {};
    const open = async (c, variant, extra) => {
      const r = await openCase({
        peer: peer(c.peer), config: { threads: c.threads }, shape, variant, seed, policy: { ...policy }, ...extra,
      });
      if (r.status !== 'ready') log(`  ${c.key} ${variant}: ${r.status} ${r.reason ?? ''}`);
      return r;
    };
    // Ours resident, 1 and 2 threads: the reference output, and our scaling.
    let reference;
    const ours = [];
    const cases = casesOf(shape);
    for (const c of cases.slice(0, 2)) {
      const r = await open(c, c.variant, { returnOutput: !reference, reference });
      if (r.output) reference = r.output;
      delete r.output;
      if (r.status === 'ready') ours.push({ c, r });
      else rows[c.key] = { status: r.status, reason: r.reason };
    }
    if (ours.length) {
      const { stats, otherLoad } = await interleave(ours.map((o) => o.r), policy);
      ours.forEach(({ c, r }, i) => {
        rows[c.key] = { status: 'ok', variant: c.variant, threads: r.threads, ...stats[i], otherLoad };
      });
      if (ours.length === 2) rows['resident-2'].scaling = stats[0].medianMs / stats[1].medianMs;
    }
    for (const c of cases.slice(2)) {
      const peerModule = await import(peer(c.peer));
      const variants = c.variant ? [c.variant] : peerModule.variants(shape);
      if (!peerModule.variants(shape).includes(variants[0])) continue; // e.g. no repetition without GQA
      const tried = [];
      for (const variant of variants) {
        const r = await open(c, variant, { reference });
        if (r.status !== 'ready') {
          tried.push({ variant, status: r.status, reason: r.reason, maxAbsDiff: r.maxAbsDiff });
          continue;
        }
        const session = [...ours.map((o) => o.r), r];
        const { stats, otherLoad } = await interleave(session, policy);
        const mine = stats[stats.length - 1];
        const row = { status: 'ok', variant, threads: r.threads, ...mine, otherLoad, maxAbsDiff: r.maxAbsDiff };
        if (ours.length) Object.assign(row, { vsResident1: mine.medianMs / stats[0].medianMs, resident1Ms: stats[0].medianMs });
        if (ours.length === 2) row.vsResident2 = mine.medianMs / stats[1].medianMs;
        const { wasmBytes } = await r.close();
        row.wasmBytes = wasmBytes;
        log(`  ${c.key} ${variant}: ${fmtMs(row.medianMs)} ms`);
        tried.push(row);
      }
      const ok = tried.filter((t) => t.status === 'ok').sort((a, b) => a.medianMs - b.medianMs);
      rows[c.key] = { ...(ok[0] ?? tried[0]), tried };
    }
    for (const { c, r } of ours) {
      const { wasmBytes } = await r.close();
      rows[c.key].wasmBytes = wasmBytes;
      log(`  ${c.key}: ${fmtMs(rows[c.key].medianMs)} ms`);
    }
    // Other load only lowers a bandwidth reading: the higher of before and after.
    bandwidth.push(measureReadBandwidth(bytes, { cold: true }));
    results.push({ shape, bytes, bandwidth: Math.max(...bandwidth), warm: measureReadBandwidth(bytes), rows });
  }
  return { shapes: results };
}

const gbps = (bytes, ms) => bytes / (ms * 1e6);

/** The K+V bytes a row's cache holds: float32's, or a bfloat16 / int8 cache's (src/kv/kv_storage.h). */
function cacheBytes(c, shape, bytes) {
  const d = shape.headDim;
  if (c.dtype === 'bfloat16') return bytes / 2;
  if (c.dtype === 'int8') return (bytes * (d + 4 * Math.ceil(d / 32))) / (4 * d);
  return bytes;
}

/** The table, its notes and the issue's targets, as lines. */
export function renderDecode(decode) {
  const lines = [];
  const cells = [];
  for (const { shape, bytes, bandwidth, warm, rows } of decode.shapes) {
    for (const c of casesOf(shape)) {
      const r = rows[c.key];
      if (!r) continue;
      const head = [shapeName(shape), c.label, String(r.threads ?? c.threads)];
      if (r.status !== 'ok') {
        cells.push([...head, `${r.status}${r.reason ? `: ${String(r.reason).slice(0, 60)}` : ''}`, '', '', '', '', '', '']);
        continue;
      }
      const rate = gbps(cacheBytes(c, shape, bytes), r.medianMs);
      const how = c.key.startsWith('resident-2') && r.scaling ? `${fmtX(r.scaling)} over 1 thread`
        : c.same ? `max |Δ| ${r.maxAbsDiff === 0 ? '0' : r.maxAbsDiff.toExponential(1)} from ${c.same}`
        : (r.tried?.length > 1 ? `${r.variant} (vs ${r.tried.filter((t) => t.variant !== r.variant).map((t) =>
          `${t.variant}: ${t.status === 'ok' ? `${fmtMs(t.medianMs)} ms` : t.status}`).join('; ')})`
          : (c.variant ? '' : r.variant));
      cells.push([
        ...head, how, fmtMs(r.medianMs), rate.toFixed(1), fmtPct(rate / (c.warm ? warm : bandwidth)),
        r.vsResident1 === undefined ? '—' : fmtX(r.vsResident1),
        r.vsResident2 === undefined ? '—' : fmtX(r.vsResident2),
        r.wasmBytes == null ? '— (JS)' : fmtBytes(r.wasmBytes),
      ]);
    }
  }
  lines.push(table(
    ['decode step (heads/KV heads, head size), cache', 'implementation', 'thr', 'how', 'ms/token',
      'GB/s K+V', '% read BW', 'resident 1T speed-up', 'resident 2T speed-up', 'wasm memory'],
    cells, ['l', 'l', 'r', 'l', 'r', 'r', 'r', 'r', 'r', 'r'],
  ));
  lines.push('');
  lines.push('Single-thread read bandwidth measured in this run (bench/lib/read-bandwidth.mjs), one read of the K+V ' +
    'bytes of each row from cold caches (the "% read BW" column), and in brackets read again and again ' +
    '(warm: from the cache level that holds them): ' + decode.shapes.map((s) =>
    `${fmtBytes(s.bytes)} ${s.bandwidth.toFixed(1)} GB/s (warm ${s.warm.toFixed(1)})`).join(', ') + '.');
  lines.push('');
  lines.push(...[
    'A step: one new token per head (q [1, H, 1, D]) attends over a cache of L tokens; its own key and value ' +
      'are part of the step (ours resident: truncate to L − 1, append, attention; onnxruntime: past_key/' +
      'past_value [1, Hkv, L − 1, D] in, the new token\'s key/value beside the query). ms/token: median of ' +
      'the interleaved runs, after warm-up, each run from cold caches (128 MiB of other memory swept ' +
      'before it, untimed: a model\'s other layers run between two steps of one layer). GB/s K+V: the ' +
      'cache\'s keys and values (B·Hkv·L·D·2·4 bytes; a bfloat16 cache half that, an int8 one ' +
      '(D + 4·⌈D/32⌉)/(4·D) of it) over that time; % read BW: of the single-thread ' +
      'read bandwidth for one cold read of the same number of bytes.',
    'Ours resident: ca.createKVCache, keys and values stay in wasm memory; only q goes in, the output out ' +
      '(into a preallocated `out`). attention() routes: the whole cache copied into wasm memory on every ' +
      'call, with kvHeads, or with every KV head repeated for its query heads (the only route before ' +
      'kvHeads; Llama rows only).',
    'onnxruntime-web: com.microsoft GroupQueryAttention (wasm backend, SIMD, ort.env.wasm.numThreads), ' +
      'past K/V copied in per run; "present K/V out" also returns the updated cache, as a generation loop ' +
      'must to feed the next step; the fastest of the two is shown. Plain JS: the loops over the cache in ' +
      'doubles. Every output is checked against ours resident single-threaded (max |Δ| ≤ 1e-3) before timing.',
    'Speed-up columns: that row\'s median over ours resident\'s in the same interleaved session (> 1: ours ' +
      'resident is faster).',
    'bfloat16 / int8 rows (issue 20): the same resident step on a cache created with that dtype (append ' +
      'rounds; attention converts each key tile inside the kernel); checked against the float32 step within ' +
      '1e-2 / 3e-2; their speed-up column is their time over the float32 step\'s (< 1: faster).',
    '"warm" row (issue 20): the float32 resident step with one untimed step before each timed one instead ' +
      'of the sweep, so its cache is as warm as back-to-back steps leave it; its % read BW is of the warm ' +
      'read of the same bytes (in brackets below), its speed-up column its time over the cold step\'s.',
    'Many sequences and the window cache (issue 20; bench/lib/shapes.mjs DECODE_SEQUENCE_SHAPES, ' +
      'bench/peers/ours.mjs): "8 sequences of 512–4096": sequence b holds 512·(b + 1) tokens; ours in one ' +
      'cache of 8 sequences (one step: each sequence truncated to its L − 1, one token appended to each, one ' +
      'attention for all 8) against 8 caches of one sequence each (8 such steps); onnxruntime-web: one graph ' +
      'with seqlens_k per sequence over a past padded to 4095 tokens (without the present K/V output). ' +
      '"window 4096 of 32768": the 32 767 tokens before the step went through the cache once, untimed; ours ' +
      'in a window cache (createKVCache({ window: 4096, capacity: 8192 }): it holds ≤ 8192 tokens) against ' +
      'a cache of all 32 768 with attention\'s window { left: 4095 }; onnxruntime-web: local_window_size ' +
      '4095 over the whole past (its CPU kernel multiplies every past key and zeroes the scores outside the ' +
      'window), or the caller keeping the last 4095 tokens as the past (what a window cache holds); the ' +
      'faster is shown. GB/s K+V and % read BW count the keys and values a query sees (Σ L, or W per ' +
      'sequence); "max |Δ|": the output against the row named, before timing (must be ≤ 1e-6); the ' +
      'speed-up columns are over the shape\'s first two rows.',
  ].map((n, i) => `${i + 1}. ${n}`));
  lines.push('', 'Targets (issue 11, and issue 20\'s where marked), Llama-3-8B shape at 4096 cached tokens unless stated:');
  lines.push(...decodeTargets(decode));
  lines.push(...sequenceTargets(decode));
  return lines.join('\n');
}

/** The many-sequence rows: the ratios they exist to show, from one session each. */
function sequenceTargets(decode) {
  const out = [];
  const of = (row) => decode.shapes.find((s) => s.shape.row === row)?.rows ?? {};
  const ragged = of('ragged');
  const windowed = of('window');
  // a: the shape's first row; b: the same numbers another way, timed with it
  // (a's time from b's session: the one the ratio comes from).
  const pair = (a, b, what) => `${fmtMs(b.resident1Ms ?? a.medianMs)} against ${fmtMs(b.medianMs)} ms in one ` +
    `session (${what}: ${fmtX(b.vsResident1)} its time; outputs equal: max |Δ| ${b.maxAbsDiff})`;
  const ok = (...rs) => rs.every((r) => r?.status === 'ok');
  if (ok(ragged['resident-1'], ragged['separate-1'])) {
    out.push('- (issue 20) one step for 8 sequences of 512–4096 tokens in one cache against 8 single-sequence ' +
      `steps, one thread: ${pair(ragged['resident-1'], ragged['separate-1'], 'the 8 steps')}`);
  }
  if (ok(windowed['resident-1'], windowed['full-1'])) {
    const [win, full] = [windowed['resident-1'], windowed['full-1']];
    out.push('- (issue 20) the window cache (W 4096, capacity 8192) after 32 768 tokens against the full cache ' +
      `with the window option, one thread: ${pair(win, full, 'the full cache')}, in ${fmtBytes(win.wasmBytes)} ` +
      `of wasm memory against ${fmtBytes(full.wasmBytes)}`);
  }
  for (const [name, rows] of [['8 sequences (seqlens_k per sequence)', ragged], ['window', windowed]]) {
    const runs = [1, 2].filter((t) => rows[`ort-web-${t}`]).map((t) => {
      const r = rows[`ort-web-${t}`];
      return r.status === 'ok' ? `${t} thread(s): runs, ours ${fmtX(t === 1 ? r.vsResident1 : r.vsResident2)} ` +
        `faster (${r.variant})` : `${t} thread(s): ${r.status}${r.reason ? ` (${r.reason})` : ''}`;
    });
    if (runs.length) out.push(`- (issue 20) onnxruntime-web GroupQueryAttention on the ${name} rows: ${runs.join('; ')}`);
  }
  return out;
}

function decodeTargets(decode) {
  const at = decode.shapes.find((s) => s.shape.heads === 32 && s.shape.cacheLength === 4096 && !s.shape.row);
  if (!at) return ['- not measured in this run'];
  const { rows, bytes, bandwidth } = at;
  const r1 = rows['resident-1'];
  const r2 = rows['resident-2'];
  const out = [];
  const old = rows['repeated-1'];
  if (r1?.status === 'ok' && old?.status === 'ok') {
    out.push(targetLine('≥ 10× faster than today\'s route (attention() with K/V repeated, 1 thread)',
      old.vsResident1 >= 10, `${fmtX(old.vsResident1)}: ${fmtMs(old.medianMs)} → ${fmtMs(r1.medianMs)} ms in one session`));
  }
  if (r1?.status === 'ok') {
    const rate = gbps(bytes, r1.medianMs);
    const values = `${fmtPct(rate / bandwidth)}: ${rate.toFixed(1)} of ${bandwidth.toFixed(1)} GB/s`;
    out.push(targetLine('≥ 60 % of the measured read bandwidth on one thread', rate / bandwidth >= 0.6, values));
    out.push(targetLine('float32 step ≥ 50 % of the read bandwidth from cold caches, one thread',
      rate / bandwidth >= 0.5, values, 20));
  }
  const warm = rows['warm-1'];
  if (warm?.status === 'ok') {
    const rate = gbps(bytes, warm.medianMs);
    out.push(targetLine('float32 step ≥ 50 % of the read bandwidth warm (steps back to back, against a warm read ' +
      'of the same bytes), one thread', rate / at.warm >= 0.5,
    `${fmtPct(rate / at.warm)}: ${rate.toFixed(1)} of ${at.warm.toFixed(1)} GB/s; ${fmtMs(warm.medianMs)} ms`, 20));
  }
  if (r2?.scaling) out.push(targetLine('≥ 1.7× on two threads', r2.scaling >= 1.7, fmtX(r2.scaling)));
  for (const [key, name, most] of [['bf16-1', 'bfloat16', 0.6], ['int8-1', 'int8', 0.4]]) {
    const r = rows[key];
    if (r?.status !== 'ok' || r.vsResident1 === undefined) continue;
    out.push(targetLine(`${name} step ≤ ${most}× the float32 step's time, one thread`, r.vsResident1 <= most,
      `${fmtX(r.vsResident1)}: ${fmtMs(r.medianMs)} ms against ${fmtMs(r1.medianMs)} ms in one session`, 20));
  }
  const ort = decode.shapes.flatMap((s) => ['ort-web-1', 'ort-web-2'].map((k) => ({ s, r: s.rows[k], k })))
    .filter((x) => x.r?.status === 'ok');
  if (ort.length) {
    const ratio = (x) => (x.k === 'ort-web-1' ? x.r.vsResident1 : x.r.vsResident2);
    const worst = ort.reduce((a, b) => (ratio(a) < ratio(b) ? a : b));
    out.push(targetLine('Ahead of onnxruntime-web on every row (same thread count)', ort.every((x) => ratio(x) > 1),
      `smallest lead ${fmtX(ratio(worst))}, ${shapeName(worst.s.shape)}, ${worst.k.endsWith('1') ? 1 : 2} thread(s)`));
  }
  return out;
}
