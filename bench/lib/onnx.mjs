// Builds small ONNX models as protobuf bytes, with no dependency: just the
// fields of onnx.proto (ModelProto, GraphProto, NodeProto, TensorProto,
// ValueInfoProto, AttributeProto) that the benchmark graphs need.
//
// Graphs (all float32, tensors row-major):
//   plainAttentionModel  q,k,v [B,H,T,D] → MatMul(q, Transpose(k)) → Mul(scale)
//                        → Add(causal mask [T,T], -inf above the diagonal)
//                        → Softmax(axis -1) → MatMul(·, v) → out [B,H,T,D]
//   onnxAttentionModel   the ONNX Attention op (opset 23), is_causal=1, 4-D q,k,v
//   msMhaModel           com.microsoft MultiHeadAttention, unidirectional=1:
//                        q,k,v transposed to [B,T,H·D] and back
//   gqaDecodeModel       com.microsoft GroupQueryAttention, one decode step:
//                        the new token's query [B,1,H·D], key/value [B,1,Hkv·D]
//                        and the cache so far past_key/value [B,Hkv,L-1,D] →
//                        out [B,1,H·D] (and present_key/value [B,Hkv,L,D])
//   mhaModuleModel       the book's MultiHeadAttention module: x [B,T,dIn] →
//                        Q/K/V projections (no bias) → causal attention per head
//                        → out_proj (with bias) → [B,T,dOut]

// ---------------------------------------------------------------------------
// Protobuf wire format

class Writer {
  constructor() {
    this.chunks = [];
    this.length = 0;
  }

  push(bytes) {
    this.chunks.push(bytes);
    this.length += bytes.length;
  }

  varint(value) {
    let v = BigInt(value);
    if (v < 0n) v += 1n << 64n; // two's complement, as protobuf encodes negative int64
    const out = [];
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v !== 0n) byte |= 0x80;
      out.push(byte);
    } while (v !== 0n);
    this.push(Uint8Array.from(out));
  }

  tag(field, wireType) {
    this.varint((field << 3) | wireType);
  }

  int(field, value) {
    this.tag(field, 0);
    this.varint(value);
  }

  float(field, value) {
    this.tag(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    this.push(b);
  }

  bytes(field, bytes) {
    this.tag(field, 2);
    this.varint(bytes.length);
    this.push(bytes);
  }

  string(field, s) {
    this.bytes(field, new TextEncoder().encode(s));
  }

  // The nested message's chunks are appended, not copied: a model of
  // hundreds of MB of initializers is copied once, by finish().
  message(field, build) {
    const w = new Writer();
    build(w);
    this.tag(field, 2);
    this.varint(w.length);
    for (const c of w.chunks) this.push(c);
  }

  finish() {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}

const FLOAT = 1; // TensorProto.DataType
const INT32 = 6;
const INT64 = 7;
const ATTR_FLOAT = 1; // AttributeProto.AttributeType
const ATTR_INT = 2;
const ATTR_INTS = 7;

// ---------------------------------------------------------------------------
// Graph description → bytes

/** A node: { op, inputs, outputs, domain?, attrs?: { name: number | number[] | {f} } } */
function writeNode(w, node, index) {
  w.message(1, (n) => {
    for (const i of node.inputs) n.string(1, i);
    for (const o of node.outputs) n.string(2, o);
    n.string(3, `${node.op}_${index}`);
    n.string(4, node.op);
    for (const [name, value] of Object.entries(node.attrs ?? {})) {
      n.message(5, (a) => {
        a.string(1, name);
        if (Array.isArray(value)) {
          for (const v of value) a.int(8, v);
          a.int(20, ATTR_INTS);
        } else if (typeof value === 'object') {
          a.float(2, value.f);
          a.int(20, ATTR_FLOAT);
        } else {
          a.int(3, value);
          a.int(20, ATTR_INT);
        }
      });
    }
    if (node.domain) n.string(7, node.domain);
  });
}

/** An initializer: { name, dims, data: Float32Array | Int32Array | BigInt64Array } */
function writeTensor(w, field, t) {
  w.message(field, (m) => {
    for (const d of t.dims) m.int(1, d);
    m.int(2, t.data instanceof BigInt64Array ? INT64 : t.data instanceof Int32Array ? INT32 : FLOAT);
    m.string(8, t.name);
    m.bytes(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  });
}

/** A graph input or output: { name, dims (a string is a symbolic dim), type?: 'int64' (default float) }. */
function writeValueInfo(w, field, { name, dims, type }) {
  w.message(field, (vi) => {
    vi.string(1, name);
    vi.message(2, (t) => t.message(1, (tensor) => {
      tensor.int(1, type === 'int64' ? INT64 : FLOAT);
      tensor.message(2, (shape) => {
        for (const d of dims) shape.message(1, (dim) => (typeof d === 'string' ? dim.string(2, d) : dim.int(1, d)));
      });
    }));
  });
}

/**
 * Serialises a ModelProto. `opsets`: [[domain, version], ...] ('' is ai.onnx).
 */
export function encodeModel({ nodes, inputs, outputs, initializers = [], opsets, irVersion = 10 }) {
  const w = new Writer();
  w.int(1, irVersion);
  w.string(2, 'causal-attention bench');
  w.message(7, (g) => {
    nodes.forEach((node, i) => writeNode(g, node, i));
    g.string(2, 'graph');
    for (const t of initializers) writeTensor(g, 5, t);
    for (const i of inputs) writeValueInfo(g, 11, i);
    for (const o of outputs) writeValueInfo(g, 12, o);
  });
  for (const [domain, version] of opsets) {
    w.message(8, (o) => {
      if (domain) o.string(1, domain);
      o.int(2, version);
    });
  }
  return w.finish();
}

// ---------------------------------------------------------------------------
// The benchmark graphs

/** [T, T] float: 0 on and below the diagonal, -inf above (top-left causal). */
export function causalMask(t) {
  const m = new Float32Array(t * t);
  for (let i = 0; i < t; ++i) m.fill(-Infinity, i * t + i + 1, (i + 1) * t);
  return m;
}

const scalar = (name, value) => ({ name, dims: [], data: Float32Array.of(value) });
const qkvInputs = (dims) => ['q', 'k', 'v'].map((name) => ({ name, dims }));

/** MatMul → Mul → Add(mask) → Softmax → MatMul, on [B, H, T, D]. */
export function plainAttentionModel({ batch, heads, length, headDim }) {
  const dims = [batch, heads, length, headDim];
  return encodeModel({
    nodes: [
      { op: 'Transpose', inputs: ['k'], outputs: ['kt'], attrs: { perm: [0, 1, 3, 2] } },
      { op: 'MatMul', inputs: ['q', 'kt'], outputs: ['s'] },
      { op: 'Mul', inputs: ['s', 'scale'], outputs: ['ss'] },
      { op: 'Add', inputs: ['ss', 'mask'], outputs: ['sm'] },
      { op: 'Softmax', inputs: ['sm'], outputs: ['w'], attrs: { axis: -1 } },
      { op: 'MatMul', inputs: ['w', 'v'], outputs: ['out'] },
    ],
    inputs: qkvInputs(dims),
    outputs: [{ name: 'out', dims }],
    initializers: [
      scalar('scale', Math.fround(1 / Math.sqrt(headDim))),
      { name: 'mask', dims: [length, length], data: causalMask(length) },
    ],
    opsets: [['', 17]],
    irVersion: 8,
  });
}

/** The ONNX Attention operator (opset 23) with is_causal, on [B, H, T, D]. */
export function onnxAttentionModel({ batch, heads, length, headDim }) {
  const dims = [batch, heads, length, headDim];
  return encodeModel({
    nodes: [{
      op: 'Attention', inputs: ['q', 'k', 'v'], outputs: ['out'],
      attrs: { is_causal: 1, scale: { f: Math.fround(1 / Math.sqrt(headDim)) } },
    }],
    inputs: qkvInputs(dims),
    outputs: [{ name: 'out', dims }],
    opsets: [['', 23]],
    irVersion: 11,
  });
}

/**
 * com.microsoft MultiHeadAttention (unidirectional = causal). It takes
 * q, k, v as [B, T, H·D], so the graph transposes [B, H, T, D] in and out.
 */
export function msMhaModel({ batch, heads, length, headDim }) {
  const dims = [batch, heads, length, headDim];
  const bsd = [batch, length, heads * headDim];
  const shape = { name: 'bsd', dims: [3], data: BigInt64Array.from(bsd.map(BigInt)) };
  const shape4 = { name: 'bthd', dims: [4], data: BigInt64Array.from([batch, length, heads, headDim].map(BigInt)) };
  const nodes = [];
  for (const x of ['q', 'k', 'v']) {
    nodes.push({ op: 'Transpose', inputs: [x], outputs: [`${x}t`], attrs: { perm: [0, 2, 1, 3] } });
    nodes.push({ op: 'Reshape', inputs: [`${x}t`, 'bsd'], outputs: [`${x}3`] });
  }
  nodes.push({
    op: 'MultiHeadAttention', domain: 'com.microsoft', inputs: ['q3', 'k3', 'v3'], outputs: ['o3'],
    attrs: { num_heads: heads, unidirectional: 1, scale: { f: Math.fround(1 / Math.sqrt(headDim)) } },
  });
  nodes.push({ op: 'Reshape', inputs: ['o3', 'bthd'], outputs: ['o4'] });
  nodes.push({ op: 'Transpose', inputs: ['o4'], outputs: ['out'], attrs: { perm: [0, 2, 1, 3] } });
  return encodeModel({
    nodes,
    inputs: qkvInputs(dims),
    outputs: [{ name: 'out', dims }],
    initializers: [shape, shape4],
    opsets: [['', 17], ['com.microsoft', 1]],
    irVersion: 8,
  });
}

/**
 * onnxruntime's GroupQueryAttention (com.microsoft) for one decode step of a
 * cache of L tokens (L - 1 past plus the new one): seqlens_k = L - 1 and
 * total_sequence_length = L as int32 initializers, no rotary, default scale
 * 1/√D. With `present`, the updated cache (past + new, [B,Hkv,L,D]) is a
 * graph output too, as a generation loop needs it for the next step. A
 * ragged batch (`lengths`): seqlens_k[b] = lengths[b] - 1 over a past padded
 * to the longest; a window W: local_window_size = W - 1 (GQA's window holds
 * the query's own key and the local_window_size before it).
 */
export function gqaDecodeModel({ batch, heads, kvHeads, headDim, cacheLength, lengths, window }, present) {
  const L = cacheLength;
  const past = [batch, kvHeads, L - 1, headDim];
  const outputs = [{ name: 'out', dims: [batch, 1, heads * headDim] }];
  if (present) {
    for (const n of ['present_key', 'present_value']) outputs.push({ name: n, dims: [batch, kvHeads, L, headDim] });
  }
  return encodeModel({
    nodes: [{
      op: 'GroupQueryAttention', domain: 'com.microsoft',
      inputs: ['query', 'key', 'value', 'past_key', 'past_value', 'seqlens_k', 'total_sequence_length'],
      outputs: ['out', 'present_key', 'present_value'],
      attrs: { num_heads: heads, kv_num_heads: kvHeads, ...(window ? { local_window_size: window - 1 } : {}) },
    }],
    inputs: [
      { name: 'query', dims: [batch, 1, heads * headDim] },
      { name: 'key', dims: [batch, 1, kvHeads * headDim] },
      { name: 'value', dims: [batch, 1, kvHeads * headDim] },
      { name: 'past_key', dims: past },
      { name: 'past_value', dims: past },
    ],
    outputs,
    initializers: [
      { name: 'seqlens_k', dims: [batch], data: Int32Array.from(lengths ?? new Array(batch).fill(L), (n) => n - 1) },
      { name: 'total_sequence_length', dims: [], data: Int32Array.of(L) },
    ],
    opsets: [['', 17], ['com.microsoft', 1]],
    irVersion: 8,
  });
}

/**
 * The book's MultiHeadAttention module as a graph, weights as initializers
 * (W_query, W_key, W_value [dIn, dOut] without bias; out_proj [dOut, dOut]
 * with bias). `attention`: 'graph' (reshape/transpose + the plain MatMul
 * graph per head) or 'com.microsoft MultiHeadAttention' (the fused op on
 * [B, T, dOut]).
 */
export function mhaModuleModel({ batch, length, dIn, dOut, heads }, weights, attention) {
  const headDim = dOut / heads;
  const int64 = (name, values) => ({ name, dims: [values.length], data: BigInt64Array.from(values.map(BigInt)) });
  const initializers = [
    { name: 'Wq', dims: [dIn, dOut], data: weights.wq },
    { name: 'Wk', dims: [dIn, dOut], data: weights.wk },
    { name: 'Wv', dims: [dIn, dOut], data: weights.wv },
    { name: 'Wo', dims: [dOut, dOut], data: weights.wo },
    { name: 'bo', dims: [dOut], data: weights.bo },
  ];
  const nodes = [
    { op: 'MatMul', inputs: ['x', 'Wq'], outputs: ['q'] },
    { op: 'MatMul', inputs: ['x', 'Wk'], outputs: ['k'] },
    { op: 'MatMul', inputs: ['x', 'Wv'], outputs: ['v'] },
  ];
  const scale = Math.fround(1 / Math.sqrt(headDim));
  if (attention === 'graph') {
    initializers.push(
      int64('bthd', [batch, length, heads, headDim]),
      int64('btd', [batch, length, dOut]),
      scalar('scale', scale),
      { name: 'mask', dims: [length, length], data: causalMask(length) },
    );
    for (const x of ['q', 'k', 'v']) nodes.push({ op: 'Reshape', inputs: [x, 'bthd'], outputs: [`${x}4`] });
    nodes.push(
      { op: 'Transpose', inputs: ['q4'], outputs: ['qh'], attrs: { perm: [0, 2, 1, 3] } },
      { op: 'Transpose', inputs: ['k4'], outputs: ['kt'], attrs: { perm: [0, 2, 3, 1] } },
      { op: 'Transpose', inputs: ['v4'], outputs: ['vh'], attrs: { perm: [0, 2, 1, 3] } },
      { op: 'MatMul', inputs: ['qh', 'kt'], outputs: ['s'] },
      { op: 'Mul', inputs: ['s', 'scale'], outputs: ['ss'] },
      { op: 'Add', inputs: ['ss', 'mask'], outputs: ['sm'] },
      { op: 'Softmax', inputs: ['sm'], outputs: ['w'], attrs: { axis: -1 } },
      { op: 'MatMul', inputs: ['w', 'vh'], outputs: ['ctx'] },
      { op: 'Transpose', inputs: ['ctx'], outputs: ['ctxt'], attrs: { perm: [0, 2, 1, 3] } },
      { op: 'Reshape', inputs: ['ctxt', 'btd'], outputs: ['ctx3'] },
    );
  } else {
    nodes.push({
      op: 'MultiHeadAttention', domain: 'com.microsoft', inputs: ['q', 'k', 'v'], outputs: ['ctx3'],
      attrs: { num_heads: heads, unidirectional: 1, scale: { f: scale } },
    });
  }
  nodes.push(
    { op: 'MatMul', inputs: ['ctx3', 'Wo'], outputs: ['y0'] },
    { op: 'Add', inputs: ['y0', 'bo'], outputs: ['out'] },
  );
  return encodeModel({
    nodes,
    inputs: [{ name: 'x', dims: [batch, length, dIn] }],
    outputs: [{ name: 'out', dims: [batch, length, dOut] }],
    initializers,
    opsets: [['', 17], ['com.microsoft', 1]],
    irVersion: 8,
  });
}

/** Random module weights (uniform ±1/√fan_in, like nn.Linear's init), deterministic. */
export function randomModuleWeights({ dIn, dOut }, makeUniform) {
  const scaled = (n, fanIn) => makeUniform(n).map((x) => x / Math.sqrt(fanIn));
  return {
    wq: scaled(dIn * dOut, dIn),
    wk: scaled(dIn * dOut, dIn),
    wv: scaled(dIn * dOut, dIn),
    wo: scaled(dOut * dOut, dOut),
    bo: scaled(dOut, dOut),
  };
}

/** The attention graphs by variant name. */
export const ATTENTION_MODELS = {
  'MatMul graph': plainAttentionModel,
  'ONNX Attention op': onnxAttentionModel,
  'com.microsoft MultiHeadAttention': msMhaModel,
};

export const MODULE_VARIANTS = ['graph', 'com.microsoft MultiHeadAttention'];

/** The decode step's graphs by variant name. */
export const DECODE_MODELS = {
  'GroupQueryAttention, present K/V out': (shape) => gqaDecodeModel(shape, true),
  GroupQueryAttention: (shape) => gqaDecodeModel(shape, false),
};
