// The book's GPTModel as an ONNX graph with the same weights (for the real-
// model table: onnxruntime runs what ca.GPTModel runs). From a state dict
// with the book's names (PyTorch layouts, [out, in] weights), for input_ids
// [1, T] (int64):
//   x = Gather(tok_emb, ids) + Gather(pos_emb, 0 … T − 1)
//   per block: h = LayerNormalization(x) (opset 17, eps 1e-5);
//              q, k, v = h · Wᵀ + b; com.microsoft MultiHeadAttention
//              (unidirectional: causal); x += out_proj(·);
//              h = LayerNormalization(x); x += W2 · FastGelu(W1 · h, b1) + b2
//              (com.microsoft FastGelu: the tanh form, the book's GELU)
//   logits = LayerNormalization(x) · out_headᵀ                 [1, T, V]
import { encodeModel } from './onnx.mjs';

/**
 * [out, in] → [in, out] (ONNX MatMul takes x · W).
 * @param {Float32Array} w
 * @param {number} out
 * @param {number} inF
 */
function transposed(w, out, inF) {
  const t = new Float32Array(w.length);
  for (let o = 0; o < out; o++) for (let i = 0; i < inF; i++) t[i * out + o] = w[o * inF + i];
  return t;
}

/**
 * The graph's bytes.
 * @param {{ vocab: number, emb: number, heads: number, layers: number, tokens: number }} cfg
 * @param {Record<string, Float32Array>} sd  the book's state dict (GPTModel.stateDict())
 */
export function gptModelBytes({ vocab, emb: E, heads, layers, tokens: T }, sd) {
  const initializers = [
    { name: 'tok_emb', dims: [vocab, E], data: sd['tok_emb.weight'] },
    { name: 'pos_emb', dims: [T, E], data: sd['pos_emb.weight'].subarray(0, T * E) },
    { name: 'positions', dims: [1, T], data: BigInt64Array.from({ length: T }, (_, t) => BigInt(t)) },
    { name: 'out_head', dims: [E, vocab], data: transposed(sd['out_head.weight'], vocab, E) },
  ];
  const nodes = [
    { op: 'Gather', inputs: ['tok_emb', 'input_ids'], outputs: ['te'] },
    { op: 'Gather', inputs: ['pos_emb', 'positions'], outputs: ['pe'] },
    { op: 'Add', inputs: ['te', 'pe'], outputs: ['x0'] },
  ];
  const norm = (x, name, out) => {
    initializers.push({ name: `${name}.scale`, dims: [E], data: sd[`${name}.scale`] },
      { name: `${name}.shift`, dims: [E], data: sd[`${name}.shift`] });
    nodes.push({ op: 'LayerNormalization', inputs: [x, `${name}.scale`, `${name}.shift`], outputs: [out],
      attrs: { axis: -1, epsilon: { f: 1e-5 } } });
  };
  const linear = (x, name, out, outF, inF, { bias = true, biasInto = true } = {}) => {
    initializers.push({ name: `${name}.W`, dims: [inF, outF], data: transposed(sd[`${name}.weight`], outF, inF) });
    if (!bias) {
      nodes.push({ op: 'MatMul', inputs: [x, `${name}.W`], outputs: [out] });
      return;
    }
    initializers.push({ name: `${name}.b`, dims: [outF], data: sd[`${name}.bias`] });
    if (!biasInto) {
      nodes.push({ op: 'MatMul', inputs: [x, `${name}.W`], outputs: [out] });
      return;
    }
    nodes.push({ op: 'MatMul', inputs: [x, `${name}.W`], outputs: [`${out}.mm`] },
      { op: 'Add', inputs: [`${out}.mm`, `${name}.b`], outputs: [out] });
  };
  let x = 'x0';
  for (let l = 0; l < layers; l++) {
    const p = `trf_blocks.${l}`;
    norm(x, `${p}.norm1`, `${p}.h1`);
    for (const w of ['W_query', 'W_key', 'W_value']) linear(`${p}.h1`, `${p}.att.${w}`, `${p}.${w}`, E, E);
    nodes.push({
      op: 'MultiHeadAttention', domain: 'com.microsoft', inputs: [`${p}.W_query`, `${p}.W_key`, `${p}.W_value`],
      outputs: [`${p}.ctx`], attrs: { num_heads: heads, unidirectional: 1, scale: { f: Math.fround(1 / Math.sqrt(E / heads)) } },
    });
    linear(`${p}.ctx`, `${p}.att.out_proj`, `${p}.a`, E, E);
    nodes.push({ op: 'Add', inputs: [x, `${p}.a`], outputs: [`${p}.x1`] });
    norm(`${p}.x1`, `${p}.norm2`, `${p}.h2`);
    linear(`${p}.h2`, `${p}.ff.layers.0`, `${p}.u`, 4 * E, E, { biasInto: false });
    nodes.push({ op: 'FastGelu', domain: 'com.microsoft', inputs: [`${p}.u`, `${p}.ff.layers.0.b`], outputs: [`${p}.g`] });
    linear(`${p}.g`, `${p}.ff.layers.2`, `${p}.f`, E, 4 * E);
    nodes.push({ op: 'Add', inputs: [`${p}.x1`, `${p}.f`], outputs: [`${p}.x2`] });
    x = `${p}.x2`;
  }
  norm(x, 'final_norm', 'hn');
  nodes.push({ op: 'MatMul', inputs: ['hn', 'out_head'], outputs: ['logits'] });
  return encodeModel({
    nodes,
    inputs: [{ name: 'input_ids', dims: [1, T], type: 'int64' }],
    outputs: [{ name: 'logits', dims: [1, T, vocab] }],
    initializers,
    opsets: [['', 17], ['com.microsoft', 1]],
    irVersion: 8,
  });
}
