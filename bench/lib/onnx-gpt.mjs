// The book's GPTModel (ch. 4) as an ONNX graph for onnxruntime, with the
// weights of a state dict under the book's names as initializers, and the
// random state dict the model table loads into both (bench/lib/model.mjs).
//
// Graph (float32; T new tokens, P cached ones, symbolic):
//   input_ids, position_ids [1, T] int64 → Gather(tok_emb) + Gather(pos_emb)
//   per block l: LayerNormalization (opset 17, eps 1e-5) → MatMul + Add for
//     W_query, W_key, W_value (weights transposed to [in, out]) →
//     com.microsoft MultiHeadAttention (unidirectional = causal, scale 1/√D,
//     past_key_l / past_value_l [1, H, P, D] in, present_key_l /
//     present_value_l [1, H, P + T, D] out) → MatMul + Add (out_proj) → + x
//     → LayerNormalization → MatMul → com.microsoft FastGelu (the tanh
//     approximation, with the first bias) → MatMul + Add → + x
//   final LayerNormalization → MatMul(out_head transposed) → logits [1, T, V]
// A prefill feeds a past of 0 tokens; a generation step feeds the presents
// of the step before as the past (what a generation loop over
// InferenceSession.run does).

import { encodeModel } from './onnx.mjs';
import { mulberry32 } from './shapes.mjs';

/** GPT_CONFIG_124M (drop_rate 0: inference). */
export const GPT2_SMALL = {
  vocab_size: 50257, context_length: 1024, emb_dim: 768, n_heads: 12, n_layers: 12, drop_rate: 0, qkv_bias: true,
};

/**
 * A random state dict under the book's names (GPTModel.state_dict()),
 * deterministic in `seed`: Linear weights and biases uniform ±1/√in (PyTorch
 * layout [out, in]), embeddings uniform ±1, LayerNorm scale 1 ± 0.1 and
 * shift ± 0.1. `alloc(n)`: the arrays (e.g. over SharedArrayBuffers, to
 * hand one dict to several workers without a copy).
 */
export function gptStateDict(cfg, seed = 124, alloc = (n) => new Float32Array(n)) {
  const random = mulberry32(seed);
  const u = (n, scale, offset = 0) => {
    const a = alloc(n);
    for (let i = 0; i < n; ++i) a[i] = offset + scale * (random() * 2 - 1);
    return a;
  };
  const { vocab_size: V, context_length: C, emb_dim: E, n_layers: N } = cfg;
  const d = { 'tok_emb.weight': u(V * E, 1), 'pos_emb.weight': u(C * E, 1) };
  const linear = (name, inF, outF, bias = true) => {
    d[`${name}.weight`] = u(outF * inF, 1 / Math.sqrt(inF));
    if (bias) d[`${name}.bias`] = u(outF, 1 / Math.sqrt(inF));
  };
  const norm = (name) => {
    d[`${name}.scale`] = u(E, 0.1, 1);
    d[`${name}.shift`] = u(E, 0.1);
  };
  for (let l = 0; l < N; ++l) {
    const p = `trf_blocks.${l}`;
    for (const w of ['W_query', 'W_key', 'W_value']) linear(`${p}.att.${w}`, E, E, cfg.qkv_bias);
    linear(`${p}.att.out_proj`, E, E);
    linear(`${p}.ff.layers.0`, E, 4 * E);
    linear(`${p}.ff.layers.2`, 4 * E, E);
    norm(`${p}.norm1`);
    norm(`${p}.norm2`);
  }
  norm('final_norm');
  linear('out_head', E, V, false);
  return d;
}

/** Parameters that multiply (every Linear's weight and bias): 2 FLOPs each per token. */
export function gptMatmulParams(cfg) {
  const { vocab_size: V, emb_dim: E, n_layers: N } = cfg;
  const block = 4 * E * E + (cfg.qkv_bias ? 3 * E : 0) + E + 2 * 4 * E * E + 4 * E + E;
  return N * block + E * V;
}

/** Every parameter (the book's count: 163,009,536 for GPT_CONFIG_124M). */
export function gptParams(cfg) {
  const { vocab_size: V, context_length: C, emb_dim: E, n_layers: N } = cfg;
  return gptMatmulParams(cfg) + (V + C) * E + N * 4 * E + 2 * E;
}

/** [out, in] → [in, out]. */
function transpose(w, outF, inF) {
  const t = new Float32Array(w.length);
  for (let o = 0; o < outF; ++o) {
    const row = o * inF;
    for (let i = 0; i < inF; ++i) t[i * outF + o] = w[row + i];
  }
  return t;
}

/** The model's bytes: `dict` from gptStateDict (or GPTModel.stateDict()). */
export function gptModelBytes(cfg, dict) {
  const { vocab_size: V, context_length: C, emb_dim: E, n_heads: H, n_layers: N } = cfg;
  const D = E / H;
  const initializers = [];
  const init = (name, dims, data) => initializers.push({ name, dims, data });
  const nodes = [];
  const node = (op, inputs, outputs, attrs, domain) => nodes.push({ op, inputs, outputs, attrs, domain });
  const eps = { f: 1e-5 };
  const layerNorm = (x, name, y) => {
    init(`${name}.scale`, [E], dict[`${name}.scale`]);
    init(`${name}.shift`, [E], dict[`${name}.shift`]);
    node('LayerNormalization', [x, `${name}.scale`, `${name}.shift`], [y], { axis: -1, epsilon: eps });
  };
  // y = x · Wᵀ (+ b): MatMul with the weight transposed, then Add unless `fuseBias`.
  const linear = (x, name, inF, outF, y, { bias = true, fuseBias = false } = {}) => {
    init(`${name}.wt`, [inF, outF], transpose(dict[`${name}.weight`], outF, inF));
    if (!bias) return node('MatMul', [x, `${name}.wt`], [y]);
    init(`${name}.bias`, [outF], dict[`${name}.bias`]);
    if (fuseBias) return node('MatMul', [x, `${name}.wt`], [y]);
    node('MatMul', [x, `${name}.wt`], [`${y}.mm`]);
    return node('Add', [`${y}.mm`, `${name}.bias`], [y]);
  };
  init('tok_emb.weight', [V, E], dict['tok_emb.weight']);
  init('pos_emb.weight', [C, E], dict['pos_emb.weight']);
  node('Gather', ['tok_emb.weight', 'input_ids'], ['tok'], { axis: 0 });
  node('Gather', ['pos_emb.weight', 'position_ids'], ['pos'], { axis: 0 });
  node('Add', ['tok', 'pos'], ['h0']);
  const past = [1, H, 'P', D];
  const present = [1, H, 'L', D];
  const inputs = [
    { name: 'input_ids', dims: [1, 'T'], type: 'int64' },
    { name: 'position_ids', dims: [1, 'T'], type: 'int64' },
  ];
  const outputs = [{ name: 'logits', dims: [1, 'T', V] }];
  let h = 'h0';
  for (let l = 0; l < N; ++l) {
    const p = `trf_blocks.${l}`;
    layerNorm(h, `${p}.norm1`, `${p}.a`);
    for (const [w, y] of [['W_query', 'q'], ['W_key', 'k'], ['W_value', 'v']]) {
      linear(`${p}.a`, `${p}.att.${w}`, E, E, `${p}.${y}`, { bias: cfg.qkv_bias });
    }
    node('MultiHeadAttention', [`${p}.q`, `${p}.k`, `${p}.v`, '', '', '', `past_key_${l}`, `past_value_${l}`],
      [`${p}.ctx`, `present_key_${l}`, `present_value_${l}`],
      { num_heads: H, unidirectional: 1, scale: { f: Math.fround(1 / Math.sqrt(D)) } }, 'com.microsoft');
    inputs.push({ name: `past_key_${l}`, dims: past }, { name: `past_value_${l}`, dims: past });
    outputs.push({ name: `present_key_${l}`, dims: present }, { name: `present_value_${l}`, dims: present });
    linear(`${p}.ctx`, `${p}.att.out_proj`, E, E, `${p}.o`);
    node('Add', [h, `${p}.o`], [`${p}.h1`]);
    layerNorm(`${p}.h1`, `${p}.norm2`, `${p}.b`);
    linear(`${p}.b`, `${p}.ff.layers.0`, E, 4 * E, `${p}.f0`, { fuseBias: true });
    node('FastGelu', [`${p}.f0`, `${p}.ff.layers.0.bias`], [`${p}.g`], {}, 'com.microsoft');
    linear(`${p}.g`, `${p}.ff.layers.2`, 4 * E, E, `${p}.f`);
    h = `${p}.out`;
    node('Add', [`${p}.h1`, `${p}.f`], [h]);
  }
  layerNorm(h, 'final_norm', 'hf');
  linear('hf', 'out_head', E, V, 'logits', { bias: false });
  return encodeModel({
    nodes, inputs, outputs, initializers, opsets: [['', 17], ['com.microsoft', 1]], irVersion: 8,
  });
}
