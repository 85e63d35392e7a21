// A plain-JS attention (double precision), written independently of the
// C++ code from the definitions in src/causal_attention.h and
// src/dropout.h: a second oracle for the wasm module.

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
 * attention(q, k, v, options) with the package's option names. With kvHeads,
 * query head h reads KV head ⌊h / (heads / kvHeads)⌋ (PyTorch's enable_gqa).
 */
export function referenceAttention(q, k, v, o) {
  const B = o.batch, H = o.heads, tq = o.queryLength, tk = o.keyLength ?? tq;
  const kvHeads = o.kvHeads ?? H;
  const kvOf = (bh) => Math.floor(bh / H) * kvHeads + Math.floor((bh % H) / (H / kvHeads));
  const d = o.headDim, dv = o.valueDim ?? d;
  const causal = o.causal ?? true;
  const scale = o.scale ?? Math.fround(1 / Math.sqrt(d));
  const renormalize = (o.maskStrategy ?? 'neg-inf') === 'renormalize' && causal !== false;
  const p = o.dropout ?? 0;
  const drop = (o.training ?? false) && p > 0;
  const keepScale = Math.fround(1 / (1 - Math.fround(p)));
  const output = new Float32Array(B * H * tq * dv);
  const weights = new Float32Array(B * H * tq * tk);
  for (let bh = 0; bh < B * H; bh++) {
    for (let i = 0; i < tq; i++) {
      const ve = visibleEnd(causal, i, tq, tk);
      const n = ve === 0 ? 0 : renormalize ? tk : ve;
      const s = new Float64Array(n);
      let bad = false;
      for (let j = 0; j < n; j++) {
        let dot = 0;
        for (let c = 0; c < d; c++) dot += q[(bh * tq + i) * d + c] * k[(kvOf(bh) * tk + j) * d + c];
        s[j] = dot * scale;
        if (!Number.isFinite(s[j])) bad = true;
      }
      const w = new Float64Array(tk);
      if (ve > 0 && !bad) {
        const softmax = (len) => {
          let m = -Infinity;
          for (let j = 0; j < len; j++) m = Math.max(m, s[j]);
          let sum = 0;
          for (let j = 0; j < len; j++) sum += (w[j] = Math.exp(s[j] - m));
          for (let j = 0; j < len; j++) w[j] /= sum;
        };
        softmax(n);
        if (renormalize) {
          for (let j = ve; j < tk; j++) w[j] = 0;
          let visible = 0;
          for (let j = 0; j < ve; j++) visible += w[j];
          if (visible > 0) for (let j = 0; j < ve; j++) w[j] /= visible;
          else softmax(ve);
        }
        if (drop) {
          for (let j = 0; j < ve; j++) {
            w[j] = dropoutKeeps(o.seed, bh * tq + i, j, p) ? w[j] * keepScale : 0;
          }
        }
      }
      for (let c = 0; c < dv; c++) {
        let acc = 0;
        for (let j = 0; j < ve; j++) acc += w[j] * v[(kvOf(bh) * tk + j) * dv + c];
        output[(bh * tq + i) * dv + c] = bad ? NaN : acc;
      }
      for (let j = 0; j < tk; j++) weights[(bh * tq + i) * tk + j] = bad ? NaN : w[j];
    }
  }
  return { output, weights };
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
    worst = Math.max(worst, Math.abs(a[i] - b[i]) / (1 + Math.abs(b[i])));
  }
  return worst;
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
