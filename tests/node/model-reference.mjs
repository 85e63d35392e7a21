// The float64 reference of the book's GPTModel and its Llama 3.2 (written
// from the book's code), shared by models.test.mjs and head-hooks.test.mjs:
// logits, each layer's weights, the residual stream and what each head
// writes into it, with heads' outputs optionally replaced (patching).
import assert from 'node:assert/strict';
import { linearJs } from './helpers.mjs';

const linear = linearJs;

/** Small GPT and Llama configurations (the hooks' and the lens's tests). */
export const SMALL_CONFIGS = {
  gpt: { vocab_size: 23, context_length: 12, emb_dim: 16, n_heads: 4, n_layers: 2, drop_rate: 0.0, qkv_bias: true },
  llama: {
    vocab_size: 19, context_length: 32, emb_dim: 16, n_heads: 4, n_layers: 2, hidden_dim: 24, n_kv_groups: 2,
    rope_base: 10000,
  },
};

/** a [n, k] · b [k, m] in double. */
export function matmul(a, b, n, k, m) {
  const y = new Float64Array(n * m);
  for (let i = 0; i < n; i++) for (let j = 0; j < m; j++) {
    let s = 0;
    for (let e = 0; e < k; e++) s += a[i * k + e] * b[e * m + j];
    y[i * m + j] = s;
  }
  return y;
}
/** [r, c] → [c, r] in double. */
export const transpose = (a, r, c) => Float64Array.from({ length: r * c }, (_, i) => a[(i % r) * c + Math.floor(i / r)]);
export const frobenius = (a) => a.reduce((s, x) => s + x * x, 0) ** 0.5;

export function layerNorm(x, rows, d, scale, shift, eps = 1e-5) {
  const y = new Float64Array(rows * d);
  for (let r = 0; r < rows; r++) {
    let m = 0;
    for (let j = 0; j < d; j++) m += x[r * d + j];
    m /= d;
    let v = 0;
    for (let j = 0; j < d; j++) v += (x[r * d + j] - m) ** 2;
    const s = 1 / Math.sqrt(v / d + eps);
    for (let j = 0; j < d; j++) y[r * d + j] = scale[j] * (x[r * d + j] - m) * s + shift[j];
  }
  return y;
}

export function rmsNorm(x, rows, d, w, eps = 1e-5) {
  const y = new Float64Array(rows * d);
  for (let r = 0; r < rows; r++) {
    let q = 0;
    for (let j = 0; j < d; j++) q += x[r * d + j] ** 2;
    const s = 1 / Math.sqrt(q / d + eps);
    for (let j = 0; j < d; j++) y[r * d + j] = w[j] * x[r * d + j] * s;
  }
  return y;
}

export const gelu = (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
export const silu = (x) => x / (1 + Math.exp(-x));

/** The book's compute_rope_params inverse frequencies, in double. */
function invFreqs(hd, base, f) {
  return Array.from({ length: hd / 2 }, (_, i) => {
    const inv = 1 / base ** ((2 * i) / hd);
    if (!f) return inv;
    const wavelen = (2 * Math.PI) / inv;
    const low = f.original_context_length / f.low_freq_factor;
    const high = f.original_context_length / f.high_freq_factor;
    if (wavelen > low) return inv / f.factor;
    if (wavelen < high) return inv;
    const s = (f.original_context_length / wavelen - f.low_freq_factor) / (f.high_freq_factor - f.low_freq_factor);
    return (1 - s) * (inv / f.factor) + s * inv;
  });
}

/**
 * Causal attention of q [B, T, H·hd] against k, v [B, T, G·hd] (G KV heads,
 * H / G query heads each), RoPE first when `rope`; → [B, T, H·hd] and the weights.
 */
function attention(q, k, v, B, T, H, G, hd, rope) {
  const rot = (x, heads) => {
    if (!rope) return x;
    const y = Float64Array.from(x);
    for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) for (let h = 0; h < heads; h++) {
      const at = ((b * T + t) * heads + h) * hd;
      for (let i = 0; i < hd / 2; i++) {
        const a = t * rope[i];
        const [c, s] = [Math.cos(a), Math.sin(a)];
        y[at + i] = x[at + i] * c - x[at + i + hd / 2] * s;
        y[at + i + hd / 2] = x[at + i + hd / 2] * c + x[at + i] * s;
      }
    }
    return y;
  };
  const qr = rot(q, H);
  const kr = rot(k, G);
  const out = new Float64Array(B * T * H * hd);
  const weights = new Float64Array(B * H * T * T);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) {
    const g = Math.floor(h / (H / G));
    for (let i = 0; i < T; i++) {
      const sc = [];
      for (let j = 0; j <= i; j++) {
        let s = 0;
        for (let e = 0; e < hd; e++) s += qr[((b * T + i) * H + h) * hd + e] * kr[((b * T + j) * G + g) * hd + e];
        sc.push(s / Math.sqrt(hd));
      }
      const max = Math.max(...sc);
      const ex = sc.map((s) => Math.exp(s - max));
      const sum = ex.reduce((a, c) => a + c, 0);
      for (let j = 0; j <= i; j++) {
        const w = ex[j] / sum;
        weights[((b * H + h) * T + i) * T + j] = w;
        for (let e = 0; e < hd; e++) out[((b * T + i) * H + h) * hd + e] += w * v[((b * T + j) * G + g) * hd + e];
      }
    }
  }
  return { out, weights, qr, kr };
}

/**
 * Logits [B, T, V], each layer's weights, the residual stream entering each
 * layer (and leaving the last), and each layer's head outputs [B, H, T, E]
 * of a state dict `p` (Float64Arrays by name). `patches[l]` = { heads,
 * values [B, heads.length, T, E], positions? } replaces heads' outputs.
 */
export function referenceForward(family, cfg, p, ids, B, T, patches = []) {
  const E = cfg.emb_dim;
  const H = cfg.n_heads;
  const G = family === 'gpt' ? H : cfg.n_kv_groups;
  const hd = E / H;
  const rows = B * T;
  let x = new Float64Array(rows * E);
  for (let n = 0; n < rows; n++) {
    for (let j = 0; j < E; j++) {
      x[n * E + j] = p['tok_emb.weight'][ids[n] * E + j] + (family === 'gpt' ? p['pos_emb.weight'][(n % T) * E + j] : 0);
    }
  }
  const rope = family === 'llama' ? invFreqs(hd, cfg.rope_base, cfg.rope_freq) : null;
  const weights = [];
  const residual = [x];
  const headOutputs = [];
  for (let l = 0; l < cfg.n_layers; l++) {
    const w = (name) => p[`trf_blocks.${l}.${name}`] ?? null;
    const h = family === 'gpt'
      ? layerNorm(x, rows, E, w('norm1.scale'), w('norm1.shift'))
      : rmsNorm(x, rows, E, w('norm1.weight'));
    const q = linear(h, rows, E, H * hd, w('att.W_query.weight'), w('att.W_query.bias'));
    const k = linear(h, rows, E, G * hd, w('att.W_key.weight'), w('att.W_key.bias'));
    const v = linear(h, rows, E, G * hd, w('att.W_value.weight'), w('att.W_value.bias'));
    const a = attention(q, k, v, B, T, H, G, hd, rope);
    weights.push(a.weights);
    // Head hh's output: its context through its columns of out_proj.
    const wo = w('att.out_proj.weight');
    const heads = new Float64Array(B * H * T * E);
    for (let b = 0; b < B; b++) for (let hh = 0; hh < H; hh++) for (let t = 0; t < T; t++) {
      for (let o = 0; o < E; o++) {
        let sum = 0;
        for (let e = 0; e < hd; e++) sum += a.out[((b * T + t) * H + hh) * hd + e] * wo[o * E + hh * hd + e];
        heads[((b * H + hh) * T + t) * E + o] = sum;
      }
    }
    const patch = patches[l];
    if (patch) {
      patch.heads.forEach((hh, kk) => {
        for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) {
          if (patch.positions && !patch.positions.includes(t)) continue;
          for (let o = 0; o < E; o++) {
            heads[((b * H + hh) * T + t) * E + o] = patch.values[((b * patch.heads.length + kk) * T + t) * E + o];
          }
        }
      });
    }
    headOutputs.push(heads);
    const bias = w('att.out_proj.bias');
    const x1 = x.map((val, i) => {
      const b = Math.floor(i / (T * E));
      const t = Math.floor(i / E) % T;
      const o = i % E;
      let sum = val + (bias ? bias[o] : 0);
      for (let hh = 0; hh < H; hh++) sum += heads[((b * H + hh) * T + t) * E + o];
      return sum;
    });
    const h2 = family === 'gpt'
      ? layerNorm(x1, rows, E, w('norm2.scale'), w('norm2.shift'))
      : rmsNorm(x1, rows, E, w('norm2.weight'));
    let f;
    if (family === 'gpt') {
      const u = linear(h2, rows, E, 4 * E, w('ff.layers.0.weight'), w('ff.layers.0.bias')).map(gelu);
      f = linear(u, rows, 4 * E, E, w('ff.layers.2.weight'), w('ff.layers.2.bias'));
    } else {
      const D = cfg.hidden_dim;
      const a1 = linear(h2, rows, E, D, w('ff.fc1.weight'), null);
      const a2 = linear(h2, rows, E, D, w('ff.fc2.weight'), null);
      f = linear(a1.map((val, i) => silu(val) * a2[i]), rows, D, E, w('ff.fc3.weight'), null);
    }
    x = x1.map((val, i) => val + f[i]);
    residual.push(x);
  }
  const hn = family === 'gpt'
    ? layerNorm(x, rows, E, p['final_norm.scale'], p['final_norm.shift'])
    : rmsNorm(x, rows, E, p['final_norm.weight']);
  return { logits: linear(hn, rows, E, cfg.vocab_size, p['out_head.weight'], null), weights, residual, headOutputs };
}

export const toDouble = (sd) => Object.fromEntries(Object.entries(sd).map(([k, v]) => [k, Float64Array.from(v)]));

export function crossEntropy64(logits, targets, V) {
  let total = 0;
  for (let n = 0; n < targets.length; n++) {
    const row = logits.subarray(n * V, (n + 1) * V);
    const max = Math.max(...row);
    const lse = max + Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
    total += lse - row[targets[n]];
  }
  return total / targets.length;
}

export function closeTo(got, ref, tol, what) {
  assert.equal(got.length, ref.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < got.length; i++) {
    const err = Math.abs(got[i] - ref[i]) / (1 + Math.abs(ref[i]));
    worst = Math.max(worst, err);
    assert.ok(err <= tol, `${what}[${i}]: ${got[i]} vs ${ref[i]} (tol ${tol})`);
  }
  return worst;
}


/**
 * A model of `family` ('gpt' or 'llama') built from `cfg` under manualSeed(seed),
 * its norms and biases drawn too, so that no gradient is trivially 0 or 1.
 */
export function drawnModel(ca, family, cfg, seed) {
  ca.manualSeed(seed);
  const m = family === 'gpt' ? new ca.GPTModel(cfg) : new ca.Llama3Model(cfg);
  let s = seed;
  const rand = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5;
  for (const p of m.parameters()) {
    if (/norm/.test(p.name)) p.data.forEach((_, i) => { p.data[i] += 0.3 * rand(); });
    if (/bias|shift/.test(p.name)) p.data.forEach((_, i) => { p.data[i] = 0.2 * rand(); });
  }
  return m;
}
