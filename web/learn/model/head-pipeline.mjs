// "Open in the pipeline": one head of the Learn model, on the
// probe, in the shape of pipeline.mjs's runPipeline result, so that the
// page's pipeline panels (scores → scaled → masked → softmax → context)
// show a head that learned something. Computed in the training worker with
// the model's own module: layers[l].forward(x, [1, T, d], { returnWeights,
// returnScores }) with x the residual stream entering layer l. No DOM.

/** The pipeline result for head `head` of layer `layer` (0-based) under the trainer's current weights. */
export function headInPipeline(trainer, layer, head) {
  const started = performance.now();
  const { model, probeIds: ids, tokens: T, settings: s } = trainer;
  const d = model.dModel;
  const H = model.heads;
  const hd = d / H;
  const x = model.layerInput(ids, T, layer);
  const t0 = performance.now();
  const r = model.attention[layer].forward(x, [1, T, d], { returnWeights: true, returnScores: true });
  const forwardMs = performance.now() - t0;
  const kind = s.attention === 'full' ? 'MultiHeadAttention' : 'GroupedQueryAttention';
  const caveat = {
    full: '',
    rope: ' Its queries and keys are rotated by position (RoPE) before the scores.',
    gqa: ' Its queries and keys are rotated by position (RoPE); heads share key/value heads in groups.',
    window: ` RoPE; its sliding window of ${s.window} also gives keys more than ${s.window - 1} back weight 0 ` +
      '(panel 3 greys the causal mask only).',
    sinks: ' RoPE; its learned sink takes part of each row\u2019s weight, so the rows sum to less than 1.',
  }[s.attention];
  return {
    mod: { kind, headDim: hd, outDim: d, listing: 'Learn' },
    route: {
      kind: 'learn',
      line: `A trained head from Learn: layer ${layer + 1}, head ${head + 1} of ${H} (${kind}, d_model ${d}, ` +
        `step ${trainer.step}) on the probe, ${T} tokens. Computed by layers[${layer}].forward(x, [1, ${T}, ${d}]) ` +
        `in eval mode, x the residual stream entering layer ${layer + 1}.${caveat} Change a setting above to ` +
        'go back to the book\u2019s example.',
    },
    title: `The pipeline: Learn\u2019s layer ${layer + 1}, head ${head + 1}`,
    layer, T, Tq: T, q0: 0, H, hd, head, outDim: d, dIn: d, x,
    scale: Math.fround(1 / Math.sqrt(hd)),
    maskShift: 0,
    dropoutActive: false,
    dropoutScale: 1,
    scores: r.scores, weights: r.weights, dropped: null, output: r.output, renorm: null,
    forwardMs, computeMs: performance.now() - started,
    ids,
  };
}
