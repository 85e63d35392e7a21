// The training table of `npm run bench`: forward + backward of causal
// attention and of the book's MultiHeadAttention module, ours (single and
// threads) against tfjs-backend-wasm (tf.grads of the composed attention)
// and plain JS loops, 1 and 2 threads, and the wasm memory of one long
// sequence's forward + backward. Cases run in their own workers and are
// timed interleaved with ours (bench/lib/runner.mjs), as the forward table.
//
// Targets: ours' backward ≤ 2.0× ours' forward at (1,12,1024,64) on one
// thread (≤ 2.5× for two threads); forward + backward ≥ 20× faster than
// tfjs; (1,1,16384,64) forward + backward in < 64 MiB.
import {
  fmtBytes, fmtMs, fmtRate, fmtSeconds, fmtX, table, targetLine,
} from './format.mjs';
import { interleave, openCase } from './runner.mjs';
import { attentionFlops, shapeName } from './shapes.mjs';
import { gflops } from './timing.mjs';

export const TRAINING_SHAPES = [
  { batch: 1, heads: 12, length: 512, headDim: 64 },
  { batch: 1, heads: 12, length: 1024, headDim: 64 },
  { batch: 1, heads: 1, length: 4096, headDim: 64 },
].map((s) => ({ kind: 'attention-train', ...s }));

/** The book's bonus notebook module (B 8, T 1024, d 768, 12 heads), forward + backward. */
export const TRAINING_MODULE = { kind: 'mha-train', batch: 8, length: 1024, dIn: 768, dOut: 768, heads: 12 };

/** One long head, forward + backward, single-threaded build: its wasm memory. */
export const TRAINING_MEMORY = { kind: 'attention-train', batch: 1, heads: 1, length: 16384, headDim: 64 };

const MIB64 = 64 * 2 ** 20;

/** A peer that takes minutes per run: one warm-up run, one timed run. */
const ONE_RUN = {
  warmupRuns: 1, warmupMs: 0, slowWarmupRuns: 1, budgetMs: 0, minRuns: 1, slowMinRuns: 1, maxRuns: 1,
};

/** A row label: [B,H,T,D] for attention, the module's own. */
export const trainingShapeName = (s) => (s.kind === 'mha-train'
  ? `MHA module (B ${s.batch}, T ${s.length}, d ${s.dIn}, ${s.heads} heads)` : shapeName(s));

/**
 * FLOPs of a training step: attention forward 2 causal products (Q·Kᵀ,
 * P·V), backward 5 (Q·Kᵀ again, dO·Vᵀ, Pᵀ·dO, dSᵀ·Q, dS·K); the module adds
 * 4 projections forward and 2 products each backward (dX, dW).
 */
export function trainingFlops(s) {
  if (s.kind === 'mha-train') {
    const projections = 2 * s.batch * s.length * s.dIn * s.dOut * 3 + 2 * s.batch * s.length * s.dOut * s.dOut;
    const attention = attentionFlops({ batch: s.batch, heads: s.heads, length: s.length, headDim: s.dOut / s.heads });
    return 3 * projections + 3.5 * attention;
  }
  return 3.5 * attentionFlops(s);
}

const PEERS = {
  ours: new URL('../peers/ours-train.mjs', import.meta.url),
  'tfjs-wasm': new URL('../peers/tfjs-train.mjs', import.meta.url),
  'plain-js': new URL('../peers/plain-js-train.mjs', import.meta.url),
};
const PEER_CONFIGS = [
  { key: 'tfjs-wasm-1', peer: 'tfjs-wasm', threads: 1 },
  { key: 'tfjs-wasm-2', peer: 'tfjs-wasm', threads: 2 },
  { key: 'plain-js-1', peer: 'plain-js', threads: 1 },
];

/**
 * Runs the table. `ctx`: { policy, slowPolicy, capMs, seed, log }. Ours
 * opens its variants (forward+backward, forward, backward) on 1 and 2
 * threads, all timed together; each peer is then timed interleaved with
 * ours' forward+backward on the same thread count... and with both of ours.
 */
export async function runTrainingTable(ctx) {
  const { log } = ctx;
  const rates = new Map(); // peer key → GFLOP/s on the latest attention shape
  const na = new Map(); // peer key → why it cannot run at all
  const open = async (peer, threads, shape, variant, extra) => {
    const c = await openCase({
      peer: PEERS[peer], config: { threads }, shape, variant, seed: ctx.seed, ...extra,
    });
    if (c.status !== 'ready') log(`  ${trainingShapeName(shape)} ${peer} ${threads}T ${variant}: ${c.status} ${c.reason ?? ''}`);
    return c;
  };

  const runShape = async (shape, {
    peers = true, shapePolicy = ctx.policy, peerPolicy = ctx.slowPolicy, capped = true, threadCounts = [1, 2],
  } = {}) => {
    log(`training ${trainingShapeName(shape)}`);
    const entry = { shape, ours: {}, peers: {} };
    const { variants } = await import(PEERS.ours);
    const opened = [];
    let reference;
    for (const threads of threadCounts) {
      for (const variant of variants(shape)) {
        const c = await open('ours', threads, shape, variant, {
          policy: shapePolicy, returnOutput: !reference && variant === 'forward+backward',
          reference: variant === 'forward' ? undefined : reference,
        });
        if (c.output) reference = c.output;
        delete c.output;
        if (c.status === 'ready') opened.push({ threads, variant, c });
        else entry.ours[`${threads}/${variant}`] = { status: c.status, reason: c.reason };
      }
    }
    const { stats, otherLoad } = await interleave(opened.map((o) => o.c), shapePolicy);
    opened.forEach((o, i) => {
      entry.ours[`${o.threads}/${o.variant}`] = { status: 'ok', ...stats[i], otherLoad, threads: o.c.threads };
      log(`  ours ${o.threads}T ${o.variant}: ${fmtMs(stats[i].medianMs)} ms`);
    });
    if (peers) {
      for (const config of PEER_CONFIGS) {
        if (na.has(config.key)) {
          entry.peers[config.key] = { status: 'n/a', reason: na.get(config.key) };
          continue;
        }
        const { variants: peerVariants } = await import(PEERS[config.peer]);
        const variant = peerVariants(shape)[0];
        if (!variant) continue;
        const rate = rates.get(config.key);
        const estimateMs = rate ? trainingFlops(shape) / (rate * 1e6) : 0;
        if (capped && estimateMs > ctx.capMs) {
          entry.peers[config.key] = { status: 'skipped', estimateMs, variant };
          continue;
        }
        const c = await open(config.peer, config.threads, shape, variant, { policy: peerPolicy, reference });
        if (c.status !== 'ready') {
          if (c.status === 'n/a' && c.level === 'config') na.set(config.key, c.reason);
          entry.peers[config.key] = { status: c.status, reason: c.reason, maxAbsDiff: c.maxAbsDiff, variant };
          continue;
        }
        // Interleaved with ours' forward+backward on 1 and 2 threads.
        const mine = opened.filter((o) => o.variant === 'forward+backward');
        const session = await interleave([...mine.map((o) => o.c), c], peerPolicy);
        const row = { status: 'ok', variant, threads: c.threads, ...session.stats[mine.length] };
        mine.forEach((o, i) => { row[`vsOurs${o.threads}`] = row.medianMs / session.stats[i].medianMs; });
        row.wasmBytes = (await c.close()).wasmBytes;
        if (shape.kind === 'attention-train') rates.set(config.key, gflops(trainingFlops(shape), row.medianMs));
        log(`  ${config.peer} ${config.threads}T: ${fmtMs(row.medianMs)} ms`);
        entry.peers[config.key] = row;
      }
    }
    for (const o of opened) {
      const { wasmBytes } = await o.c.close();
      entry.ours[`${o.threads}/${o.variant}`].wasmBytes = wasmBytes;
    }
    return entry;
  };

  // Ours' six cases per attention shape share each round: a longer budget
  // gives each about as many runs as a forward-table case gets.
  const oursPolicy = { ...ctx.policy, budgetMs: 3 * ctx.policy.budgetMs, maxRuns: 31 };
  const shapes = [];
  for (const shape of TRAINING_SHAPES) shapes.push(await runShape(shape, { shapePolicy: oursPolicy }));
  // The module: tfjs takes a minute and more per run, so one warm-up and
  // one timed run, whatever the skip estimate says.
  const module = ctx.skipModule ? null : await runShape(TRAINING_MODULE, {
    shapePolicy: ctx.slowPolicy, peerPolicy: ONE_RUN, capped: false,
  });
  const memory = await runShape(TRAINING_MEMORY, { peers: false, shapePolicy: ctx.slowPolicy, threadCounts: [1] });
  return { shapes, module, memory, capMs: ctx.capMs };
}

/** The table and its notes, as text (terminal and RESULTS.md). */
export function renderTrainingSection(training) {
  const rows = [];
  const targets = [];
  const label = trainingShapeName;
  const oursRows = (entry) => {
    for (const threads of [1, 2]) {
      const fb = entry.ours[`${threads}/forward+backward`];
      const fw = entry.ours[`${threads}/forward`];
      if (!fb) continue;
      if (fb.status !== 'ok') {
        rows.push([label(entry.shape), `ours (${threads === 1 ? 'single' : 'threads'})`, String(threads), `${fb.status} ${fb.reason ?? ''}`, '', '', '', '', '', '', '']);
        continue;
      }
      const bw = entry.ours[`${threads}/backward`];
      const backwardMs = bw?.status === 'ok' ? bw.medianMs : fb.medianMs - fw.medianMs;
      rows.push([
        label(entry.shape), `ours (${threads === 1 ? 'single' : 'threads'})`, String(fb.threads ?? threads),
        fmtMs(fw.medianMs), `${fmtMs(backwardMs)}${bw?.status === 'ok' ? '' : ' (f+b − f)'}`,
        fmtMs(fb.medianMs), fmtX(backwardMs / fw.medianMs),
        fmtRate(gflops(trainingFlops(entry.shape), fb.medianMs)), '—', '—', fmtBytes(fb.wasmBytes),
      ]);
      if (entry.shape.length === 1024 && entry.shape.heads === 12 && entry.shape.kind === 'attention-train') {
        const most = threads === 1 ? 2.0 : 2.5;
        const x = backwardMs / fw.medianMs;
        targets.push(targetLine(`backward ≤ ${most.toFixed(1)}× the forward at ${shapeName(entry.shape)}, ${threads} ` +
          `thread${threads > 1 ? 's' : ''}`, x <= most, `${fmtX(x)}: ${fmtMs(backwardMs)} against ${fmtMs(fw.medianMs)} ms`,
        threads === 1 ? 21 : 12));
      }
    }
  };
  const peerRows = (entry) => {
    for (const config of PEER_CONFIGS) {
      const r = entry.peers[config.key];
      if (!r) continue;
      const head = [label(entry.shape), config.key.replace(/-\d$/, ''), String(r.threads ?? config.threads)];
      if (r.status === 'skipped') {
        rows.push([...head, '', '', `skipped (est. ${fmtSeconds(r.estimateMs)})`, '', '', '', '', '']);
      } else if (r.status !== 'ok') {
        rows.push([...head, '', '', `${r.status}${r.maxAbsDiff ? ` (max |Δ| ${r.maxAbsDiff.toExponential(1)})` : ''}: ${String(r.reason ?? '').slice(0, 90)}`, '', '', '', '', '']);
      } else {
        rows.push([...head, '', '', fmtMs(r.medianMs), '', fmtRate(gflops(trainingFlops(entry.shape), r.medianMs)),
          fmtX(r.vsOurs1), fmtX(r.vsOurs2), r.wasmBytes == null ? '— (JS)' : fmtBytes(r.wasmBytes)]);
        if (config.peer === 'tfjs-wasm') {
          const threads = r.threads ?? config.threads;
          targets.push(targetLine(`forward + backward ≥ 20× tfjs-wasm at ${label(entry.shape)}, ${threads} ` +
            `thread${threads > 1 ? 's' : ''} each`, (threads === 1 ? r.vsOurs1 : r.vsOurs2) >= 20, `ours single ${fmtX(r.vsOurs1)} faster` +
            `${r.vsOurs2 ? `, ours threads ${fmtX(r.vsOurs2)}` : ''}`, 21));
        }
      }
    }
  };
  for (const entry of [...training.shapes, training.module].filter(Boolean)) {
    oursRows(entry);
    peerRows(entry);
  }
  const mem = training.memory?.ours['1/forward+backward'];
  if (mem?.status === 'ok') {
    const fw = training.memory.ours['1/forward'];
    const bw = training.memory.ours['1/backward'];
    rows.push([`${shapeName(training.memory.shape)} memory check`, 'ours (single)', '1', fmtMs(fw.medianMs),
      fmtMs(bw.medianMs), fmtMs(mem.medianMs), fmtX(bw.medianMs / fw.medianMs),
      fmtRate(gflops(trainingFlops(training.memory.shape), mem.medianMs)), '—', '—', fmtBytes(mem.wasmBytes)]);
    targets.push(targetLine(`${shapeName(training.memory.shape)} forward + backward in < 64 MiB of wasm memory`,
      mem.wasmBytes < MIB64, fmtBytes(mem.wasmBytes), 12));
  }
  const headers = ['shape [B,H,T,D]', 'implementation', 'thr', 'forward ms', 'backward ms',
    'forward + backward ms', 'backward / forward', 'GFLOP/s (f+b)', 'ours 1T speed-up', 'ours 2T speed-up', 'wasm memory'];
  const align = ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'];
  const notes = [
    'Training step: ours = ca.attention(..., { returnLogSumExp: true }) then ca.attentionBackward (the ' +
      'module: MultiHeadAttention.forward in training mode, then backward, the weights of the forward table); ' +
      'forward, backward and forward + backward are timed as separate cases, all interleaved (the module\'s ' +
      'backward needs a forward before it: backward = (f+b) − f). Peers: forward + backward, interleaved with ' +
      'ours\' forward + backward; speed-up = peer median / ours median. Every gradient is checked against ours ' +
      'single\'s before timing (max |Δ| ≤ 1e-3).',
    'tfjs-backend-wasm: tf.grads of the composed attention per (b, h) head (2-D matMuls on XNNPACK, the ' +
      '[T,T] scores, mask and softmax kept by autodiff); the module per batch element (its 12 heads sliced ' +
      'from the projections), with one warm-up and one timed run (over a minute each). Threads are off in ' +
      'Node (see the forward table). Its gradients come from the union package @tensorflow/tfjs (same ' +
      'tfjs-core): tfjs-core\'s Node bundle registers none.',
    'plain JS: the forward\'s loops, then the backward\'s (P recomputed per row), in doubles.',
    `GFLOP/s: causal FLOPs of a training step, 7 products of 2·B·H·D·T(T+1)/2 (forward 2, backward 5); the ` +
      `module adds 3× its projection FLOPs. Skips: a peer is skipped when its rate on a previous shape predicts ` +
      `more than ${fmtSeconds(training.capMs)} per run.`,
  ];
  return { table: table(headers, rows, align), notes, targets };
}

/** The section as printed (table, targets, notes). */
export function renderTrainingText(training) {
  const { table: t, notes, targets } = renderTrainingSection(training);
  return [
    '## Training: forward + backward (issue 12)', '', t, '',
    ...targets, '',
    ...notes.map((n, i) => `[${i + 1}] ${n}`),
  ].join('\n');
}
