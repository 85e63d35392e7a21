// A plain-JS attention (double precision), written independently of the
// C++ code from the definitions in src/causal_attention.h and
// src/simd/dropout.h: a second oracle for the wasm module.

const MASK64 = (1n << 64n) - 1n;

function splitMix64(x) {
  x = (x + 0x9e3779b97f4a7c15n) & MASK64;
  x = ((x ^ (x >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  x = ((x ^ (x >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return x ^ (x >> 31n);
}

function fmix32(x) {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** Whether dropout keeps weight (row, key); row = (b·H + h)·Tq + i. */
export function dropoutKeeps(seed, row, key, p) {
  const h = splitMix64(splitMix64(BigInt(seed)) ^ BigInt(row));
  const k0 = Number(h & 0xffffffffn);
  const k1 = Number(h >> 32n);
  let x = (Math.imul(key, 0x9e3779b9) ^ k0) >>> 0;
  x = (fmix32(x) ^ k1) >>> 0;
  const hash24 = fmix32(x) >>> 8;
  const threshold = Math.min(2 ** 24, Math.max(0, Math.floor(Math.fround(p) * 2 ** 24 + 0.5)));
  return hash24 >= threshold;
}

export function visibleEnd(causal, i, tq, tk) {
  let end;
  if (causal === true || causal === 'top-left') end = i + 1;
  else if (causal === 'bottom-right') end = i + 1 + tk - tq;
  else end = tk;
  return Math.max(0, Math.min(tk, end));
}

/**
 * attention(q, k, v, options) with the package's option names, output and
 * weights as Float32Arrays (computed in double). With kvHeads, query head h
 * reads KV head ⌊h / (heads / kvHeads)⌋ (PyTorch's enable_gqa).
 */
export function referenceAttention(q, k, v, o) {
  const r = referenceAttention64(q, k, v, o);
  return { output: Float32Array.from(r.output), weights: Float32Array.from(r.weights), logSumExp: Float32Array.from(r.logSumExp) };
}

/**
 * The visibility rules written from their statement, not from the C++: query i sits
 * at position p = i + queryOffset; key j is visible when the causal rule
 * (j <= p), the window (p - left <= j <= p + right), keyLengths (j <
 * keyLengths[b]) and a boolean mask all allow it; a score is
 * softcap·tanh(s·scale / softcap), then the additive mask is added; a sink
 * adds exp(sink_h) to each row's denominator (and to its log-sum-exp). A row
 * that sees no key (or only -Infinity scores): zero output and weights,
 * logSumExp -Infinity. Layout 'bshd': q [B, Tq, H, D], k and v [B, Tk, Hkv,
 * D|Dv], output [B, Tq, H, Dv]; weights stay [B, H, Tq, Tk].
 * Returns Float64Arrays: output, weights, logSumExp, and with returnScores
 * ('scaled' | 'softcapped' | 'masked') scores [B, H, Tq, Tk]: every key's
 * s·scale, after softcap, or after the additive mask with -Infinity for each
 * hidden key.
 */
export function referenceAttention64(q, k, v, o) {
  const B = o.batch, H = o.heads, tq = o.queryLength, tk = o.keyLength ?? tq;
  const kvHeads = o.kvHeads ?? H;
  const d = o.headDim, dv = o.valueDim ?? d;
  const causal = o.causal ?? true;
  const scale = o.scale ?? Math.fround(1 / Math.sqrt(d));
  const renormalize = (o.maskStrategy ?? 'neg-inf') === 'renormalize' && causal !== false;
  const p = o.dropout ?? 0;
  const drop = (o.training ?? false) && p > 0;
  const keepScale = Math.fround(1 / (1 - Math.fround(p)));
  const bshd = (o.layout ?? 'bhsd') === 'bshd';
  // Element offsets of row t of head h of batch item b in a tensor of `heads` heads, t rows, w wide.
  const at = (b, h, t, rows, heads, w) => (bshd ? ((b * rows + t) * heads + h) * w : ((b * heads + h) * rows + t) * w);
  const left = o.window?.left ?? Infinity, right = o.window?.right ?? Infinity;
  const softcap = o.softcap;
  const mask = o.mask;
  let mstride;
  if (mask) {
    const full = [B, H, tq, tk];
    const dims = [1, 1, 1, 1];
    o.maskShape.forEach((n, i) => { dims[4 - o.maskShape.length + i] = n; });
    const sizes = dims.map((n, i) => (n === 1 && full[i] !== 1 ? 0 : 1));
    mstride = [dims[1] * dims[2] * dims[3] * sizes[0], dims[2] * dims[3] * sizes[1], dims[3] * sizes[2], sizes[3]];
  }
  const output = new Float64Array(B * H * tq * dv);
  const weights = new Float64Array(B * H * tq * tk);
  const logSumExp = new Float64Array(B * H * tq);
  // returnScores: every key's score at that step (-Infinity where hidden when 'masked').
  const scores = o.returnScores ? new Float64Array(B * H * tq * tk) : undefined;
  for (let b = 0; b < B; b++) {
    const kl = o.keyLengths ? o.keyLengths[b] : tk;
    let offset = o.queryOffset;
    if (offset === undefined) offset = causal === 'bottom-right' ? kl - tq : 0;
    for (let h = 0; h < H; h++) {
      const kvh = Math.floor(h / (H / kvHeads));
      for (let i = 0; i < tq; i++) {
        const row = (b * H + h) * tq + i;
        const pos = i + offset;
        const qo = at(b, h, i, tq, H, d);
        const s = new Float64Array(tk).fill(-Infinity);
        const visible = new Uint8Array(tk);
        let bad = false;
        for (let j = 0; j < tk; j++) {
          let seen = j < kl && j >= pos - left && j <= pos + right && (causal === false || j <= pos);
          let ok = j < kl && j >= pos - left && j <= pos + right;
          if (causal !== false && !renormalize) ok &&= j <= pos;
          if (renormalize) ok = visibleEnd(causal, i, tq, tk) > 0; // scores of every key: the book's route
          const mo = mask ? b * mstride[0] + h * mstride[1] + i * mstride[2] + j * mstride[3] : 0;
          if (mask instanceof Uint8Array) {
            ok &&= mask[mo] !== 0;
            seen &&= mask[mo] !== 0;
          }
          if (!ok && !scores) continue;
          let dot = 0;
          const ko = at(b, kvh, j, tk, kvHeads, d);
          for (let c = 0; c < d; c++) dot += q[qo + c] * k[ko + c];
          let x = dot * scale;
          const scaled = x;
          if (ok && !Number.isFinite(x)) bad = true;
          if (softcap !== undefined) x = softcap * Math.tanh(x / softcap);
          const capped = x;
          if (mask instanceof Float32Array) x += mask[mo];
          if (scores) {
            scores[row * tk + j] = o.returnScores === 'scaled' ? scaled : o.returnScores === 'softcapped' ? capped
              : seen ? x : -Infinity;
          }
          if (!ok) continue;
          s[j] = x;
          if (x !== -Infinity) visible[j] = 1;
        }
        const w = new Float64Array(tk);
        let lse = -Infinity;
        if (visible.some((x) => x) && !bad) {
          const sink = o.sinks ? o.sinks[h] : -Infinity;
          const softmax = (end) => {
            let m = sink;
            for (let j = 0; j < end; j++) m = Math.max(m, s[j]);
            let sum = sink === -Infinity ? 0 : Math.exp(sink - m);
            for (let j = 0; j < end; j++) sum += (w[j] = Math.exp(s[j] - m));
            for (let j = 0; j < end; j++) w[j] /= sum;
            return m + Math.log(sum);
          };
          lse = softmax(tk);
          if (renormalize) {
            const ve = visibleEnd(causal, i, tq, tk);
            for (let j = ve; j < tk; j++) w[j] = 0;
            let total = 0;
            for (let j = 0; j < ve; j++) total += w[j];
            if (total > 0) for (let j = 0; j < ve; j++) w[j] /= total;
            else { s.fill(-Infinity, ve); softmax(ve); }
          }
          if (drop) {
            for (let j = 0; j < tk; j++) w[j] = dropoutKeeps(o.seed, row, j, p) ? w[j] * keepScale : 0;
          }
        }
        logSumExp[row] = bad ? NaN : lse;
        const oo = at(b, h, i, tq, H, dv);
        for (let c = 0; c < dv; c++) {
          let acc = 0;
          for (let j = 0; j < tk; j++) if (w[j] !== 0) acc += w[j] * v[at(b, kvh, j, tk, kvHeads, dv) + c];
          output[oo + c] = bad ? NaN : acc;
        }
        for (let j = 0; j < tk; j++) weights[row * tk + j] = bad ? NaN : w[j];
      }
    }
  }
  return { output, weights, logSumExp, scores };
}

/** Largest |a - b| / (1 + |b|); NaN positions must coincide (else Infinity). */
export function maxRelativeError(a, b) {
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    if (Number.isNaN(a[i]) || Number.isNaN(b[i])) {
      if (Number.isNaN(a[i]) !== Number.isNaN(b[i])) return Infinity;
      continue;
    }
    if (a[i] === b[i]) continue; // equal infinities too (scores of hidden keys)
    worst = Math.max(worst, Math.abs(a[i] - b[i]) / (1 + Math.abs(b[i])));
  }
  return worst;
}

/**
 * Largest |got − want| over the largest |want| (NaN where want has NaN is
 * skipped), or Infinity on a length or NaN mismatch: the bound of the
 * quantised paths (int8 attention, bfloat16/int8 caches and weights).
 */
export function errorOfLargest(got, want) {
  if (got.length !== want.length) return Infinity;
  let largest = 0, worst = 0;
  for (let i = 0; i < want.length; i++) {
    if (Number.isNaN(want[i]) !== Number.isNaN(got[i])) return Infinity;
    if (Number.isNaN(want[i])) continue;
    largest = Math.max(largest, Math.abs(want[i]));
    worst = Math.max(worst, Math.abs(got[i] - want[i]));
  }
  return largest > 0 ? worst / largest : worst;
}

/** Deterministic pseudo-random Float32Array in [-1, 1) (xorshift32). */
export function randomArray(n, seed = 1) {
  let x = seed >>> 0 || 1;
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    a[i] = x / 2 ** 31 - 1;
  }
  return a;
}

/**
 * The gradients of sum(gradOutput ∘ attention(q, k, v)) with respect to q, k
 * and v in double, from scratch (the softmax recomputed from q and k, not
 * from a log-sum-exp), with the package's option names (kvHeads: query head
 * h reads key/value head h / (heads / kvHeads)). Both mask strategies have
 * the visible softmax's gradient. Also returns each row's log-sum-exp.
 */
export function referenceAttentionBackward(gradOutput, q, k, v, o) {
  const B = o.batch, H = o.heads, tq = o.queryLength, tk = o.keyLength ?? tq;
  const kvH = o.kvHeads ?? H, group = H / kvH;
  const d = o.headDim, dv = o.valueDim ?? d;
  const causal = o.causal ?? true;
  const scale = o.scale ?? Math.fround(1 / Math.sqrt(d));
  const p = o.dropout ?? 0;
  const drop = (o.training ?? false) && p > 0;
  const keepScale = Math.fround(1 / (1 - Math.fround(p)));
  const gradQ = new Float64Array(q.length);
  const gradK = new Float64Array(k.length);
  const gradV = new Float64Array(v.length);
  const logSumExp = new Float64Array(B * H * tq);
  // returnScores: every key's score at that step (-Infinity where hidden when 'masked').
  const scores = o.returnScores ? new Float64Array(B * H * tq * tk) : undefined;
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      const bh = b * H + h;
      const kv = b * kvH + Math.floor(h / group);
      for (let i = 0; i < tq; i++) {
        const row = bh * tq + i;
        const ve = visibleEnd(causal, i, tq, tk);
        if (ve === 0) {
          logSumExp[row] = -Infinity;
          continue;
        }
        const s = new Float64Array(ve);
        let m = -Infinity;
        for (let j = 0; j < ve; j++) {
          let dot = 0;
          for (let c = 0; c < d; c++) dot += q[row * d + c] * k[(kv * tk + j) * d + c];
          s[j] = dot * scale;
          m = Math.max(m, s[j]);
        }
        let sum = 0;
        for (let j = 0; j < ve; j++) sum += Math.exp(s[j] - m);
        logSumExp[row] = m + Math.log(sum);
        const w = s.map((x) => Math.exp(x - m) / sum);
        const mask = w.map((_, j) => (!drop ? 1 : dropoutKeeps(o.seed, row, j, p) ? keepScale : 0));
        // dP̃_j = dO_i · v_j; D_i = sum_j P_j M_j dP̃_j (= dO_i · O_i).
        const dpt = new Float64Array(ve);
        let D = 0;
        for (let j = 0; j < ve; j++) {
          for (let c = 0; c < dv; c++) dpt[j] += gradOutput[row * dv + c] * v[(kv * tk + j) * dv + c];
          D += w[j] * mask[j] * dpt[j];
        }
        for (let j = 0; j < ve; j++) {
          for (let c = 0; c < dv; c++) gradV[(kv * tk + j) * dv + c] += w[j] * mask[j] * gradOutput[row * dv + c];
          const ds = w[j] * (mask[j] * dpt[j] - D) * scale;
          for (let c = 0; c < d; c++) {
            gradQ[row * d + c] += ds * k[(kv * tk + j) * d + c];
            gradK[(kv * tk + j) * d + c] += ds * q[row * d + c];
          }
        }
      }
    }
  }
  return { gradQ, gradK, gradV, logSumExp };
}

/** k or v [B, kvHeads, T, X] with each head repeated for its group: [B, heads, T, X]. */
export function repeatKv(x, batch, heads, kvHeads) {
  const per = x.length / (batch * kvHeads);
  const out = new Float32Array(batch * heads * per);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < heads; h++) {
      const src = (b * kvHeads + Math.floor(h / (heads / kvHeads))) * per;
      out.set(x.subarray(src, src + per), (b * heads + h) * per);
    }
  }
  return out;
}

/**
 * The book's compute_rope_params inverse frequencies in float32 steps, as
 * PyTorch computes them: 1 / base^(2i / hd), then, with freqConfig
 * ({ factor, lowFreqFactor, highFreqFactor, originalContextLength }, the
 * book's freq_config of Llama 3.1 / 3.2), its adjustment. In PyTorch a Python
 * scalar meets a float32 tensor as a float32, scalar / tensor is
 * tensor.reciprocal() * scalar, and every op rounds to float32.
 */
export function ropeInverseFrequencies(base, hd, freqConfig = null) {
  const f = Math.fround;
  const inv = Array.from({ length: hd / 2 }, (_, i) => f(1 / f(f(base) ** f(f(2 * i) / hd))));
  if (!freqConfig) return inv;
  const { factor, lowFreqFactor: low, highFreqFactor: high, originalContextLength: ctx } = freqConfig;
  const lowWavelen = f(ctx / low);
  const highWavelen = f(ctx / high);
  return inv.map((fr) => {
    const wavelen = f(f(1 / fr) * f(2 * Math.PI));
    const divided = f(fr / f(factor));
    if (wavelen > lowWavelen) return divided;
    if (wavelen < highWavelen) return fr;
    const smooth = f(f(f(f(1 / wavelen) * f(ctx)) - f(low)) / f(high - low));
    return f(f(f(1 - smooth) * divided) + f(smooth * fr));
  });
}

/** float32 -> bfloat16 -> float32, round to nearest even. */
function roundBf16(x) {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer);
  if (Number.isNaN(x)) return x;
  u[0] = ((u[0] + 0x7fff + ((u[0] >>> 16) & 1)) >>> 16) << 16;
  return f[0];
}

/** Round half to even. */
function roundEven(x) {
  const r = Math.round(x);
  return Math.abs(x - Math.trunc(x)) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Rows of `width` values as a bfloat16 or int8 KV cache stores them (the
 * README's rule, not the C++), read back as float32: int8 with one scale (largest magnitude / 127) per block of 32 values of a row.
 */
export function storedKv(a, width, dtype) {
  if (dtype === 'float32') return a;
  if (dtype === 'bfloat16') return a.map(roundBf16);
  const out = new Float32Array(a.length);
  for (let r = 0; r < a.length; r += width) {
    for (let b = r; b < r + width; b += 32) {
      const end = Math.min(b + 32, r + width);
      let max = 0;
      for (let i = b; i < end; i++) max = Math.max(max, Math.abs(a[i]));
      const scale = Math.fround(max / 127);
      for (let i = b; i < end; i++) {
        const q = scale > 0 ? Math.max(-127, Math.min(127, roundEven(Math.fround(a[i] / scale)))) : 0;
        out[i] = Math.fround(q * scale);
      }
    }
  }
  return out;
}
