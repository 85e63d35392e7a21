// A tiny model trained on a fixed task, shared by the Node and browser tests
// (the browser test sends this function's source to the page as it is: no
// imports, nothing from outside the function).
//
// Task: copy the previous token (target i = token i - 1; position 0 is
// ignored), which a model can only solve by attending to the key right
// before the query. Model: token and position Embedding → MultiHeadAttention
// (2 heads, dropout 0.1) → Linear to the vocabulary; crossEntropy, AdamW.
// Everything random comes from ca.manualSeed(0): the same losses, bit for
// bit, on every build, thread count and engine.
export async function trainTinyModel(ca, steps = 200) {
  const vocab = 8, tokens = 8, batch = 8, width = 16;
  ca.manualSeed(0);
  const tokenEmbedding = new ca.Embedding(vocab, width);
  const positionEmbedding = new ca.Embedding(tokens, width);
  const attention = new ca.MultiHeadAttention(width, width, tokens, 0.1, 2);
  const head = new ca.Linear(width, vocab);
  const optimizer = new ca.optim.AdamW([tokenEmbedding, positionEmbedding, attention, head], { lr: 1e-2 });
  const positions = Int32Array.from({ length: batch * tokens }, (_, i) => i % tokens);
  const losses = [];
  for (let step = 0; step < steps; step++) {
    const ids = ca.randint(0, vocab, [batch, tokens]);
    const targets = ids.map((id, i) => (i % tokens === 0 ? -100 : ids[i - 1]));
    const x = tokenEmbedding.forward(ids, [batch, tokens]);
    const p = positionEmbedding.forward(positions, [batch, tokens]);
    for (let i = 0; i < x.length; i++) x[i] += p[i];
    const h = attention.forward(x, [batch, tokens, width]);
    const logits = head.forward(h, [batch, tokens, width]);
    const { loss, gradLogits } = ca.crossEntropy(logits, targets);
    losses.push(loss);
    optimizer.zeroGrad();
    const dx = attention.backward(head.backward(gradLogits));
    tokenEmbedding.backward(dx);
    positionEmbedding.backward(dx);
    optimizer.step();
  }
  return losses;
}
