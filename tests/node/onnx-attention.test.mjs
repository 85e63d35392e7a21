// The ONNX Attention operator's conformance cases (onnx/onnx
// onnx/backend/test/case/node/attention.py, 87 cases over opsets 23-25)
// through ca.attention, against our port of the reference semantics
// (onnx-reference.mjs). Each case's inputs are regenerated in JS (uniform in
// [0, 1) like np.random.rand; fp16 cases fed as float32) and mapped to the
// package's options as a user would: 3-D inputs with layout 'bshd';
// past_key/past_value concatenated in JS, the causal frontier after them by
// queryOffset; nonpad_kv_seqlen as keyLengths (with causal 'bottom-right');
// attn_mask right-padded to the key length as the spec pads it, boolean as a
// Uint8Array, float as a Float32Array; softcap; left/right_window_size as
// window. qk_matmul_output mode 3 (the softmax) is compared with the
// weights, modes 0-2 (scores before the softmax) with returnScores:
// 'softcapped' for modes 0 and 1 (the reference returns the capped scores
// for both), 'masked' for mode 2.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { init } from 'causal-attention';
import { ONNX_ATTENTION_CASES } from './onnx-attention-cases.mjs';
import { onnxAttention } from './onnx-reference.mjs';
import { maxRelativeError, referenceAttention64 } from './js-reference.mjs';

/** Uniform [0, 1) in float32 steps, deterministic per seed (mulberry32). */
function uniform(n, seed) {
  let a = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  }
  return out;
}

const size = (shape) => shape.reduce((a, b) => a * b, 1);

/** A case's input tensors: { data, shape, bool? } by input name. */
function inputsOf(c, index) {
  const x = {};
  Object.entries(c.tensors).forEach(([name, t], n) => {
    if (!c.inputs.includes(name)) return;
    if (t.special) return;
    const data = t.data ? Float32Array.from(t.data) : uniform(size(t.shape), 1000 * index + n + 1);
    x[name] = { data, shape: t.shape, bool: t.dtype === 'bool' };
  });
  // The cases that write slices or fill with constants, built as the Python does.
  switch (c.name) {
    case 'test_attention_3d_transpose_verification': {
      const Q = new Float32Array(1 * 2 * 12);
      for (let s = 0; s < 2; s++) for (let h = 0; h < 3; h++) Q.fill(h + 1, s * 12 + h * 4, s * 12 + h * 4 + 4);
      x.Q = { data: Q, shape: [1, 2, 12] };
      x.K = { data: new Float32Array(24).fill(0.1), shape: [1, 2, 12] };
      x.V = { data: new Float32Array(24).fill(0.1), shape: [1, 2, 12] };
      break;
    }
    case 'test_attention_4d_softcap_neginf_mask':
    case 'test_attention_4d_softcap_neginf_mask_poison': {
      const m = new Float32Array(4 * 6);
      for (let i = 0; i < 4; i++) m.fill(-Infinity, i * 6 + 4, i * 6 + 6);
      x.attn_mask = { data: m, shape: [4, 6] };
      if (c.name.endsWith('poison')) for (let j = 4; j < 6; j++) x.V.data.fill(1000, j * 8, j * 8 + 8);
      break;
    }
    case 'test_attention_bidirectional_window':
      x.Q = { data: new Float32Array(5), shape: [1, 1, 5, 1] };
      x.K = { data: new Float32Array(5), shape: [1, 1, 5, 1] };
      x.V = { data: Float32Array.from([0, 1, 2, 3, 4]), shape: [1, 1, 5, 1] };
      break;
    case 'test_attention_local_window_ext_cache_float16_mask':
      x.Q = { data: new Float32Array(2 * 3 * 4 * 8), shape: [2, 3, 4, 8] };
      x.K = { data: new Float32Array(2 * 3 * 8 * 8), shape: [2, 3, 8, 8] };
      x.V = { data: new Float32Array(2 * 3 * 8 * 8).fill(1), shape: [2, 3, 8, 8] };
      x.attn_mask = { data: new Float32Array(8), shape: [1, 8] };
      break;
    case 'test_attention_local_window_gqa_rank4_mask': {
      const m = new Float32Array(2 * 4 * 4 * 6).fill(1);
      for (let bh = 0; bh < 8; bh++) m.fill(0, bh * 24, bh * 24 + 6);
      x.attn_mask = { data: m, shape: [2, 4, 4, 6], bool: true };
      break;
    }
    default:
  }
  if (x.nonpad_kv_seqlen) x.nonpad_kv_seqlen = x.nonpad_kv_seqlen.data;
  return x;
}

/** [B, H, S, D] data as [B, S, H, D]. */
function toBshd(t) {
  const [B, H, S, D] = t.shape;
  const out = new Float32Array(t.data.length);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      for (let s = 0; s < S; s++) {
        for (let d = 0; d < D; d++) out[((b * S + s) * H + h) * D + d] = t.data[((b * H + h) * S + s) * D + d];
      }
    }
  }
  return out;
}

/** Concatenates along the sequence axis (1 in bshd, 2 in bhsd) of [B, ·, ·, W] tensors. */
function concat(a, b, batch, outer, aRows, bRows, width, bshd) {
  if (bshd) {
    // [B, P, H·W] then [B, S, H·W]: per batch item, past rows then new rows.
    const row = outer * width;
    const out = new Float32Array(batch * (aRows + bRows) * row);
    for (let n = 0; n < batch; n++) {
      out.set(a.subarray(n * aRows * row, (n + 1) * aRows * row), n * (aRows + bRows) * row);
      out.set(b.subarray(n * bRows * row, (n + 1) * bRows * row), (n * (aRows + bRows) + aRows) * row);
    }
    return out;
  }
  const out = new Float32Array(batch * outer * (aRows + bRows) * width);
  for (let n = 0; n < batch * outer; n++) {
    out.set(a.subarray(n * aRows * width, (n + 1) * aRows * width), n * (aRows + bRows) * width);
    out.set(b.subarray(n * bRows * width, (n + 1) * bRows * width), (n * (aRows + bRows) + aRows) * width);
  }
  return out;
}

/**
 * A case as ca.attention's q, k, v and options; `returnWeights` when the
 * case asks for the softmax (mode 3).
 */
function toPackage(c, x) {
  const a = c.attrs;
  const rank3 = x.Q.shape.length === 3;
  const batch = x.Q.shape[0];
  let heads, kvHeads, queryLength, keyLength, headDim, valueDim;
  if (rank3) {
    heads = a.q_num_heads; kvHeads = a.kv_num_heads;
    queryLength = x.Q.shape[1]; keyLength = x.K.shape[1];
    headDim = x.Q.shape[2] / heads; valueDim = x.V.shape[2] / kvHeads;
  } else {
    [, heads, queryLength, headDim] = x.Q.shape;
    [, kvHeads, keyLength] = x.K.shape;
    valueDim = x.V.shape[3];
  }
  let k = x.K.data, v = x.V.data;
  const past = x.past_key ? x.past_key.shape[2] : 0;
  if (past) {
    const pk = rank3 ? toBshd(x.past_key) : x.past_key.data;
    const pv = rank3 ? toBshd(x.past_value) : x.past_value.data;
    k = concat(pk, k, batch, kvHeads, past, keyLength, headDim, rank3);
    v = concat(pv, v, batch, kvHeads, past, keyLength, valueDim, rank3);
    keyLength += past;
  }
  const o = { batch, heads, kvHeads, queryLength, keyLength, headDim, valueDim, causal: false };
  if (rank3) o.layout = 'bshd';
  if (a.scale !== undefined) o.scale = a.scale;
  if (a.softcap > 0) o.softcap = a.softcap;
  const left = a.left_window_size ?? -1, right = a.right_window_size ?? -1;
  const windowed = left >= 0 || right >= 0;
  if (windowed) o.window = { ...(left >= 0 && { left }), ...(right >= 0 && { right }) };
  if (x.nonpad_kv_seqlen) o.keyLengths = Array.from(x.nonpad_kv_seqlen);
  if (a.is_causal) {
    // After a past of n keys the frontier is at n; with nonpad_kv_seqlen
    // (no past) per batch item at keyLengths[b] − Tq: 'bottom-right'.
    o.causal = x.nonpad_kv_seqlen ? 'bottom-right' : true;
    if (past) o.queryOffset = past;
  } else if (windowed && (past || x.nonpad_kv_seqlen)) {
    if (x.nonpad_kv_seqlen) throw new Error('a window without causal after nonpad_kv_seqlen has per-batch offsets: not mapped');
    o.queryOffset = past;
  }
  if (x.attn_mask) {
    const m = x.attn_mask;
    const last = m.shape[m.shape.length - 1];
    const rows = m.data.length / last;
    const data = m.bool ? new Uint8Array(rows * keyLength) : new Float32Array(rows * keyLength).fill(-Infinity);
    for (let r = 0; r < rows; r++) {
      for (let j = 0; j < last; j++) data[r * keyLength + j] = m.bool ? (m.data[r * last + j] ? 1 : 0) : m.data[r * last + j];
    }
    o.mask = data;
    o.maskShape = [...m.shape.slice(0, -1), keyLength];
  }
  const mode = c.outputs.length > 3 && c.outputs[3] ? a.qk_matmul_output_mode ?? 0 : null;
  if (mode === 3) o.returnWeights = true;
  // Modes 0 and 1: the reference returns the capped scores for both
  // (softcap comes before the mask); mode 2: with the mask.
  if (mode !== null && mode < 3) o.returnScores = mode === 2 ? 'masked' : 'softcapped';
  return { q: x.Q.data, k, v, o, mode };
}

const TOLERANCE = 1e-5;

describe('ONNX Attention conformance cases (onnx/onnx attention.py, opsets 23-25)', () => {
  let ca;
  before(async () => { ca = await init(); });
  after(() => ca?.dispose());

  it('has the 87 cases', () => {
    assert.equal(ONNX_ATTENTION_CASES.length, 87);
    assert.equal(new Set(ONNX_ATTENTION_CASES.map((c) => c.name)).size, 87);
  });

  it('the ONNX port gives the outputs its cases assert', () => {
    const byName = (name) => {
      const index = ONNX_ATTENTION_CASES.findIndex((c) => c.name === name);
      const c = ONNX_ATTENTION_CASES[index];
      return onnxAttention(inputsOf(c, index), c.attrs);
    };
    // test_attention_bidirectional_window: Y = [1, 1.5, 2.5, 3, 3.5].
    assert.deepEqual(Array.from(byName('test_attention_bidirectional_window').Y.data), [1, 1.5, 2.5, 3, 3.5]);
    // A fully masked row is zero; rows that see keys are not.
    const y = byName('test_attention_4d_causal_nonpad_negative_offset_structural_empty').Y.data;
    assert.ok(y.subarray(0, 16).every((n) => n === 0) && y.subarray(16, 32).some((n) => n !== 0));
    // Poison values behind a -inf mask do not leak through the softcap.
    assert.ok(byName('test_attention_4d_softcap_neginf_mask_poison').Y.data.every((n) => n >= 0 && n <= 1));
  });

  /** Per case: the JS reference on the package's options vs the ONNX port. */
  it('the package\'s options express every case: the JS reference with them matches the ONNX port (Y and the mode-3 softmax)', () => {
    ONNX_ATTENTION_CASES.forEach((c, index) => {
      const x = inputsOf(c, index);
      const want = onnxAttention(x, c.attrs);
      const { q, k, v, o, mode } = toPackage(c, x);
      const got = referenceAttention64(q, k, v, o);
      // Both in double; they differ by the package's float32 default scale and
      // the spec's √scale · √scale.
      const errY = maxRelativeError(got.output, want.Y.data);
      assert.ok(errY < 1e-6, `${c.name}: Y off by ${errY}`);
      if (mode === 3) {
        const errW = maxRelativeError(got.weights, want.qk_matmul_output.data);
        assert.ok(errW < 1e-6, `${c.name}: weights off by ${errW}`);
      }
      if (mode !== null && mode < 3) {
        const errS = maxRelativeError(got.scores, want.qk_matmul_output.data);
        assert.ok(errS < 1e-6, `${c.name}: mode-${mode} scores off by ${errS}`);
      }
    });
  });

  it('ca.attention passes all 87 cases: Y, and qk_matmul_output in every mode', (t) => {
    let passed = 0, scoreCases = 0;
    ONNX_ATTENTION_CASES.forEach((c, index) => {
      const x = inputsOf(c, index);
      const want = onnxAttention(x, c.attrs);
      const { q, k, v, o, mode } = toPackage(c, x);
      const got = ca.attention(q, k, v, o);
      const errY = maxRelativeError(got.output, want.Y.data);
      assert.ok(errY < TOLERANCE, `${c.name}: Y off by ${errY}`);
      if (mode === 3) {
        const errW = maxRelativeError(got.weights, want.qk_matmul_output.data);
        assert.ok(errW < TOLERANCE, `${c.name}: the mode-3 softmax off by ${errW}`);
      }
      if (mode !== null && mode < 3) {
        const errS = maxRelativeError(got.scores, want.qk_matmul_output.data);
        assert.ok(errS < TOLERANCE, `${c.name}: qk_matmul_output mode ${mode} (returnScores '${o.returnScores}') off by ${errS}`);
        scoreCases++;
      }
      passed++;
    });
    t.diagnostic(`ONNX Attention cases passing through ca.attention: ${passed}/87 (${scoreCases} of them compare returnScores)`);
    assert.equal(passed, 87);
    // The cases that ask for the scores before the softmax (modes 0-2).
    assert.equal(scoreCases, 12);
  });
});
