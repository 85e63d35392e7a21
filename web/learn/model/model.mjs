// The Learn section's model: a small attention-only transformer (Elhage et
// al. 2021, "A Mathematical Framework for Transformer Circuits"), built only
// from the package's public API:
//
//   x      = tokenEmbedding(ids) + positionEmbedding(0 … T − 1)     [B, T, d]
//   x      = x + MultiHeadAttention_l(x)        for each layer l (residual)
//   logits = Linear(d, vocab)(x)                                     [B, T, vocab]
//
// No MLPs and no layer norm: every path from input to output goes through
// attention heads, so what the model learns is visible in their weights. A
// previous-token head in layer 1 and a head in layer 2 that reads its
// output form an induction head.
//
// `ca` is a runtime from init() (synchronous calls: the training worker
// imports the package itself). `attention` picks the layers' kind
// (learn-variants.mjs; 'full' by default): the variants with RoPE have no
// position embedding.

import { attentionLayer, learnsPositions } from './variants.mjs';

export class AttentionOnlyTransformer {
  /** The attention layers' outputs, one buffer reused (each is added to x before the next layer runs). */
  #scratch = new Float32Array(0);
  /** Position ids of the last #embed call's shape, reused while the shape holds. */
  #positions = new Int32Array(0);
  #positionsKey = '';

  /**
   * { vocab, layers, heads, dModel, contextLength }: dModel must be a
   * multiple of heads (each head has dModel / heads dimensions). Parameters
   * come from the runtime's generator: call ca.manualSeed(seed) first.
   */
  constructor(ca, { vocab, layers, heads, dModel, contextLength, attention = 'full', window = contextLength }) {
    Object.assign(this, { vocab, layers, heads, dModel, contextLength });
    // One module tree, named as the book's GPTModel names its parts:
    // train()/eval(), parameters() and the state dict reach every layer.
    this.net = new ca.Module();
    this.tokenEmbedding = this.net.registerModule('tok_emb', new ca.Embedding(vocab, dModel));
    this.positionEmbedding = learnsPositions(attention)
      ? this.net.registerModule('pos_emb', new ca.Embedding(contextLength, dModel)) : null;
    const layer = { attention, window, dModel, heads, contextLength };
    this.attention = this.net.registerModule('layers', new ca.ModuleList(Array.from({ length: layers },
      () => attentionLayer(ca, layer))));
    this.unembed = this.net.registerModule('out_head', new ca.Linear(dModel, vocab));
  }

  /**
   * The model's parts (token and position embeddings, the attention layers'
   * ModuleList, the unembedding), for the optimizer: their parameters are
   * the model's, in order.
   */
  modules() {
    return this.net.children();
  }

  /** Training mode (or evaluation mode with false) for every layer. Returns the model. */
  train(mode = true) {
    this.net.train(mode);
    return this;
  }

  eval() {
    return this.train(false);
  }

  /** Number of trainable values. */
  parameterCount() {
    return this.net.parameters().reduce((n, p) => n + p.data.length, 0);
  }

  // Token plus position embeddings of `ids` [batch, tokens] at positions
  // start … start + tokens − 1.
  #embed(ids, batch, tokens, start = 0) {
    const x = this.tokenEmbedding.forward(ids, [batch, tokens]);
    if (!this.positionEmbedding) return x;
    const key = `${batch} ${tokens} ${start}`;
    if (this.#positionsKey !== key) {
      this.#positions = Int32Array.from({ length: batch * tokens }, (_, k) => start + (k % tokens));
      this.#positionsKey = key;
    }
    const p = this.positionEmbedding.forward(this.#positions, [batch, tokens]);
    for (let k = 0; k < x.length; k++) x[k] += p[k];
    return x;
  }

  /**
   * ids: [batch, tokens] (Int32Array). Returns { logits: [batch, tokens,
   * vocab], weights: per layer [batch, heads, tokens, tokens] (with
   * returnWeights) }. In training mode every module keeps what backward()
   * needs. headMasks: per layer a Float32Array [heads] (the modules'
   * headMask: 0 knocks a head out) or null.
   */
  forward(ids, batch, tokens, { returnWeights = false, headMasks = null } = {}) {
    const shape = [batch, tokens, this.dModel];
    const x = this.#embed(ids, batch, tokens);
    if (this.#scratch.length !== x.length) this.#scratch = new Float32Array(x.length);
    const weights = [];
    for (const [l, attention] of [...this.attention].entries()) {
      const r = attention.forward(x, shape, { returnWeights, headMask: headMasks?.[l] ?? undefined, out: this.#scratch });
      const h = returnWeights ? r.output : r;
      if (returnWeights) weights.push(r.weights);
      // The module kept its own copy of x: adding in place is safe.
      for (let k = 0; k < x.length; k++) x[k] += h[k];
    }
    return { logits: this.unembed.forward(x, shape), weights };
  }

  /**
   * forward with the package's interpretability hooks (lab.mjs): every
   * layer's heads' outputs summed by the module (returnHeadOutputs; `patches[l]`
   * its patchHeads), the residual stream entering each layer and leaving
   * the last. Returns { logits, residual: [layers + 1][batch·tokens·dModel],
   * headOutputs: per layer [batch, heads, tokens, dModel] }. Runs in the
   * model's mode (training mode keeps what backward needs).
   */
  forwardHooked(ids, batch, tokens, { patches = [] } = {}) {
    const shape = [batch, tokens, this.dModel];
    const x = this.#embed(ids, batch, tokens);
    const residual = [x.slice()];
    const headOutputs = [];
    for (const [l, attention] of [...this.attention].entries()) {
      const r = attention.forward(x, shape, { returnHeadOutputs: true, ...(patches[l] ? { patchHeads: patches[l] } : {}) });
      headOutputs.push(r.headOutputs);
      for (let k = 0; k < x.length; k++) x[k] += r.output[k];
      residual.push(x.slice());
    }
    return { logits: this.unembed.forward(x, shape), residual, headOutputs };
  }

  /**
   * The rest of the network from layer `from` (0-based; `layers`: the
   * unembedding only) on residual streams x [batch, tokens, dModel]
   * (changed in place), the fused forward in the model's mode: the logits
   * [batch, tokens, vocab]. The lab's patching grid runs its rows so.
   */
  forwardFrom(x, batch, tokens, from) {
    const shape = [batch, tokens, this.dModel];
    if (this.#scratch.length !== x.length) this.#scratch = new Float32Array(x.length);
    for (let l = from; l < this.attention.length; l++) {
      const h = this.attention[l].forward(x, shape, { out: this.#scratch });
      for (let k = 0; k < x.length; k++) x[k] += h[k];
    }
    return this.unembed.forward(x, shape);
  }

  /**
   * The residual stream entering layer `layer` (0-based) for `ids` (one
   * sequence of `tokens`), in eval mode: the embeddings plus the earlier
   * layers' outputs, [tokens, dModel] (the pipeline panels' input).
   */
  layerInput(ids, tokens, layer) {
    this.eval();
    const shape = [1, tokens, this.dModel];
    const x = this.#embed(ids, 1, tokens);
    for (let l = 0; l < layer; l++) {
      const h = this.attention[l].forward(x, shape);
      for (let k = 0; k < x.length; k++) x[k] += h[k];
    }
    return x;
  }

  /**
   * The backward of the last training forward: gradLogits [batch, tokens,
   * vocab] (crossEntropy's gradLogits); every parameter's gradient
   * accumulates. The residual stream's gradient is the sum of the skip
   * path's and the attention's.
   */
  backward(gradLogits) {
    const dx = this.unembed.backward(gradLogits);
    /** Per layer, the gradient of the stream its attention writes into (lab.mjs's attribution). */
    const streamGrads = [];
    for (let l = this.attention.length - 1; l >= 0; l--) {
      streamGrads[l] = dx.slice();
      const d = this.attention[l].backward(dx);
      for (let k = 0; k < dx.length; k++) dx[k] += d[k];
    }
    this.tokenEmbedding.backward(dx);
    this.positionEmbedding?.backward(dx);
    return streamGrads;
  }

  /** Tokens in the KV caches (the generated sequence's length so far). */
  get cacheLength() {
    return this.attention[0].cacheLength;
  }

  /** Empties every layer's KV cache (frees its wasm memory). */
  resetCache() {
    for (const attention of this.attention) attention.resetCache();
  }

  /**
   * Generation with the KV caches (eval mode): `ids` (one sequence) are the
   * next tokens after the cached ones. Each layer attends over the cache plus
   * these (keys and values of earlier tokens are not recomputed). Returns
   * { logits: the last token's [vocab], weights: per layer [heads, n,
   * cacheLength] (the new tokens' query rows) }. At most contextLength
   * tokens in all (the position table's size). headMasks: as forward's.
   */
  forwardCached(ids, { headMasks = null } = {}) {
    const n = ids.length;
    const start = this.cacheLength;
    if (start + n > this.contextLength) {
      throw new RangeError(`the sequence would have ${start + n} tokens, past the context length ${this.contextLength}`);
    }
    const shape = [1, n, this.dModel];
    const x = this.#embed(ids, 1, n, start);
    const weights = [];
    for (const [l, attention] of [...this.attention].entries()) {
      const r = attention.forward(x, shape, { useCache: true, returnWeights: true, headMask: headMasks?.[l] ?? undefined });
      weights.push(r.weights);
      for (let k = 0; k < x.length; k++) x[k] += r.output[k];
    }
    const last = x.subarray((n - 1) * this.dModel);
    return { logits: this.unembed.forward(last, [1, this.dModel]), weights };
  }
}
