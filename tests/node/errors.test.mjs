// Bad input: every case throws a TypeError or RangeError whose message names
// the argument and shows the expected and the actual value, and afterwards
// the same runtime still computes a correct result.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { init } from 'causal-attention';
import { CAUSAL, KV_DTYPE, MASK_STRATEGY, PRECISION, Status, checkStatus } from '../../dist/engine/codes.mjs';
import { Structs } from '../../dist/engine/embind.mjs';
import { Engine } from '../../dist/engine/engine.mjs';
import { loadModule } from '../../dist/engine/loader.mjs';
import { maxRelativeError, randomArray, referenceAttention } from './js-reference.mjs';

const shape = { batch: 1, heads: 2, queryLength: 3, headDim: 4 };
const good = () => ({
  q: randomArray(24, 1), k: randomArray(24, 2), v: randomArray(24, 3),
});
const expected = (() => {
  const { q, k, v } = good();
  return referenceAttention(q, k, v, shape).output;
})();

// [description, (ca, q, k, v, ctx) => call, ErrorType, message pattern]
// ctx.module is a MultiHeadAttention(3, 4, 6, 0, 2) and ctx.linear a Linear(3, 2);
// ctx.cache a KV cache { batch 1, kvHeads 1, headDim 4, capacity 8 } holding
// 3 tokens, ctx.gqa a GroupedQueryAttention(3, 4, 2, 1, { contextLength: 6 }).
const cases = [
  ['q is an Array', (ca, q, k, v) => ca.attention(Array.from(q), k, v, shape), TypeError, /^q must be a Float32Array, got an Array of length 24$/],
  ['k is a Float64Array', (ca, q, k, v) => ca.attention(q, new Float64Array(24), v, shape), TypeError, /^k must be a Float32Array, got a Float64Array of length 24$/],
  ['v is null', (ca, q, k) => ca.attention(q, k, null, shape), TypeError, /^v must be a Float32Array, got null$/],
  ['q is a string', (ca, q, k, v) => ca.attention('q', k, v, shape), TypeError, /^q must be a Float32Array, got the string "q"$/],
  ['q too short', (ca, q, k, v) => ca.attention(q.subarray(1), k, v, shape), RangeError, /^q must have length 24 \(batch 1 × heads 2 × queryLength 3 × headDim 4\), got length 23$/],
  ['k too long', (ca, q, k, v) => ca.attention(q, new Float32Array(25), v, shape), RangeError, /^k must have length 24 .*got length 25$/],
  ['v does not match valueDim', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, valueDim: 5 }), RangeError, /^v must have length 30 \(.*valueDim 5\), got length 24$/],
  ['options missing', (ca, q, k, v) => ca.attention(q, k, v), TypeError, /^options must be an object/],
  ['options is a number', (ca, q, k, v) => ca.attention(q, k, v, 3), TypeError, /^options must be an options object, got 3$/],
  ['batch missing', (ca, q, k, v) => ca.attention(q, k, v, { heads: 2, queryLength: 3, headDim: 4 }), TypeError, /^options.batch must be an integer >= 1, got undefined$/],
  ['batch zero', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, batch: 0 }), RangeError, /^options.batch must be an integer >= 1, got 0$/],
  ['heads negative', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, heads: -2 }), RangeError, /^options.heads must be an integer >= 1, got -2$/],
  ['queryLength fractional', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, queryLength: 2.5 }), RangeError, /^options.queryLength must be an integer >= 1, got 2.5$/],
  ['headDim NaN', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, headDim: NaN }), RangeError, /^options.headDim must be an integer >= 1, got NaN$/],
  ['keyLength Infinity', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, keyLength: Infinity }), RangeError, /^options.keyLength must be an integer >= 1, got Infinity$/],
  ['valueDim a string', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, valueDim: '4' }), TypeError, /^options.valueDim must be an integer >= 1, got the string "4"$/],
  ['dropout 1', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, dropout: 1 }), RangeError, /^options.dropout must be a number in \[0, 1\), got 1$/],
  ['dropout negative', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, dropout: -0.1 }), RangeError, /^options.dropout must be a number in \[0, 1\), got -0.1$/],
  ['dropout NaN', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, dropout: NaN }), RangeError, /^options.dropout .*got NaN$/],
  ['dropout a string', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, dropout: '0.1' }), TypeError, /^options.dropout must be a number in \[0, 1\), got the string "0.1"$/],
  ['scale Infinity', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, scale: Infinity }), RangeError, /^options.scale must be a finite number, got Infinity$/],
  ['scale NaN', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, scale: NaN }), RangeError, /^options.scale must be a finite number, got NaN$/],
  ['scale beyond float32', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, scale: 1e39 }), RangeError, /^options.scale must fit a float32, got 1e\+39$/],
  ['causal unknown string', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, causal: 'top-right' }), RangeError, /^options.causal must be one of false, true, 'top-left', 'bottom-right', got the string "top-right"$/],
  ['causal a number', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, causal: 1 }), TypeError, /^options.causal must be one of .*got 1$/],
  ['maskStrategy unknown', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, maskStrategy: 'zero' }), RangeError, /^options.maskStrategy must be one of 'neg-inf', 'renormalize', got the string "zero"$/],
  ['training not boolean', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, training: 1 }), TypeError, /^options.training must be true or false, got 1$/],
  ['returnWeights not boolean', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, returnWeights: 'yes' }), TypeError, /^options.returnWeights must be true or false, got the string "yes"$/],
  ['seed negative', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, seed: -1 }), RangeError, /^options.seed must be in \[0, 2\^64\), got -1$/],
  ['seed fractional', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, seed: 1.5 }), RangeError, /^options.seed must be an integer .*got 1.5$/],
  ['seed BigInt too large', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, seed: 1n << 64n }), RangeError, /^options.seed must be in \[0, 2\^64\), got 18446744073709551616n$/],
  ['seed a string', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, seed: '7' }), TypeError, /^options.seed must be an integer or a BigInt, got the string "7"$/],
  ['unknown option (typo)', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, head: 2 }), TypeError, /^options has an unknown option 'head'; known options: batch, heads, /],
  ['out of the wrong length', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, out: new Float32Array(5) }), RangeError, /^options.out must have length 24 .*got length 5$/],
  ['out of the wrong type', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, out: [] }), TypeError, /^options.out must be a Float32Array, got an Array of length 0$/],
  ['weightsOut without returnWeights', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, weightsOut: new Float32Array(18) }), TypeError, /^options.weightsOut is only used with returnWeights: true$/],
  ['tensors beyond a wasm32 heap', (ca) => {
    // Small inputs, but 40000² weights (5.96 GiB): rejected before any
    // allocation.
    const s = { batch: 1, heads: 1, queryLength: 40000, keyLength: 40000, headDim: 1, returnWeights: true };
    const t = new Float32Array(40000);
    return ca.attention(t, t, t, s);
  }, RangeError, /^options.returnWeights: the weights \[batch 1, heads 1, queryLength 40000, keyLength 40000\] would take 5\.96 GiB, more than one block of a wasm32 heap holds \(2\.00 GiB\); without returnWeights no such matrix is allocated$/],
  ['attentionReference with a bad tensor', (ca, q, k) => ca.attentionReference(q, k, new Int32Array(24), shape), TypeError, /^v must be a Float32Array, got an Int32Array of length 24$/],
  ['manualSeed with a string', (ca) => ca.manualSeed('x'), TypeError, /^seed must be an integer or a BigInt, got the string "x"$/],
  ['manualSeed negative', (ca) => ca.manualSeed(-1), RangeError, /^seed must be in \[0, 2\^64\), got -1$/],
  ['manualSeed fractional', (ca) => ca.manualSeed(1.5), RangeError, /^seed must be an integer .*got 1.5$/],
  ['manualSeed 2^64', (ca) => ca.manualSeed(2n ** 64n), RangeError, /^seed must be in \[0, 2\^64\)/],
  ['q is a Uint8Array', (ca, q, k, v) => ca.attention(new Uint8Array(24), k, v, shape), TypeError, /^q must be a Float32Array, got a Uint8Array of length 24$/],
  ['k is undefined', (ca, q, k, v) => ca.attention(q, undefined, v, shape), TypeError, /^k must be a Float32Array, got undefined$/],
  ['heads a BigInt', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, heads: 2n }), TypeError, /^options.heads must be an integer >= 1, got 2n$/],
  ['queryLength beyond safe integers', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, queryLength: 2 ** 53 }), RangeError, /^options.queryLength must be an integer >= 1, got 9007199254740992$/],
  ['shape that does not multiply out', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, heads: 3 }), RangeError, /^q must have length 36 \(batch 1 × heads 3 × queryLength 3 × headDim 4\), got length 24$/],
  ['keyLength mismatching k', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, keyLength: 4 }), RangeError, /^k must have length 32 .*keyLength 4.*got length 24$/],
  ['weightsOut of the wrong length', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, returnWeights: true, weightsOut: new Float32Array(17) }), RangeError, /^options.weightsOut must have length 18 .*got length 17$/],
  ['options an Array', (ca, q, k, v) => ca.attention(q, k, v, [1, 2]), TypeError, /^options must be an options object, got an Array of length 2$/],
  ['options null', (ca, q, k, v) => ca.attention(q, k, v, null), TypeError, /^options must be an options object, got null$/],

  // Training: the log-sum-exp, the attention backward.
  ['returnLogSumExp not boolean', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, returnLogSumExp: 1 }), TypeError, /^options.returnLogSumExp must be true or false, got 1$/],
  ['attentionBackward kvHeads not dividing heads', (ca, q, k, v) => ca.attentionBackward(q, q, k, v, q, new Float32Array(6), { ...shape, kvHeads: 3 }), RangeError, /^options.heads must be a multiple of options.kvHeads, got heads 2 and kvHeads 3$/],
  ['attentionBackward k sized for heads, not kvHeads', (ca, q, k, v) => ca.attentionBackward(q, q, k, v, q, new Float32Array(6), { ...shape, kvHeads: 1 }), RangeError, /^k must have length 12 \(batch 1 × kvHeads 1 × keyLength 3 × headDim 4\), got length 24$/],
  ['attentionBackward gradOutput too short', (ca, q, k, v) => ca.attentionBackward(q.subarray(1), q, k, v, q, new Float32Array(6), shape), RangeError, /^gradOutput must have length 24 \(batch 1 × heads 2 × queryLength 3 × valueDim 4\), got length 23$/],
  ['attentionBackward gradOutput a Float64Array', (ca, q, k, v) => ca.attentionBackward(new Float64Array(24), q, k, v, q, new Float32Array(6), shape), TypeError, /^gradOutput must be a Float32Array, got a Float64Array of length 24$/],
  ['attentionBackward output of the wrong length', (ca, q, k, v) => ca.attentionBackward(q, q, k, v, new Float32Array(5), new Float32Array(6), shape), RangeError, /^output must have length 24 \(.*; the forward's output\), got length 5$/],
  ['attentionBackward without logSumExp', (ca, q, k, v) => ca.attentionBackward(q, q, k, v, q, undefined, shape), TypeError, /^logSumExp must be a Float32Array \(the forward's, from returnLogSumExp: true\), got undefined$/],
  ['attentionBackward logSumExp of the wrong length', (ca, q, k, v) => ca.attentionBackward(q, q, k, v, q, q, shape), RangeError, /^logSumExp must have length 6 \(batch 1 × heads 2 × queryLength 3\), got length 24$/],
  ['attentionBackward dropout without the seed', (ca, q, k, v) => ca.attentionBackward(q, q, k, v, q, new Float32Array(6), { ...shape, training: true, dropout: 0.5 }), TypeError, /^options.seed is required when dropout ran \(training with dropout > 0\): pass the forward's seed/],
  ['attentionBackward a forward-only option', (ca, q, k, v) => ca.attentionBackward(q, q, k, v, q, new Float32Array(6), { ...shape, returnWeights: true }), TypeError, /^options has an unknown option 'returnWeights'; known options: /],
  ['attentionBackward options missing', (ca, q, k, v) => ca.attentionBackward(q, q, k, v, q, new Float32Array(6)), TypeError, /^options must be an object with at least batch/],
  ['attentionBackwardReference q an Array', (ca, q, k, v) => ca.attentionBackwardReference(q, [], k, v, q, new Float32Array(6), shape), TypeError, /^q must be a Float32Array, got an Array of length 0$/],

  // Training: the modules.
  ['backward before any forward', (ca) => new ca.CausalAttention(3, 2, 6, 0).backward(new Float32Array(12)), TypeError, /^backward\(\) needs a forward\(\) in training mode first \(each forward\(\) allows one backward\(\)\)$/],
  ['backward after an eval-mode forward', (ca, q, k, v, ctx) => {
    const m = new ca.CausalAttention(3, 2, 6, 0).eval();
    m.forward(ctx.x.subarray(0, 18), [6, 3]);
    return m.backward(new Float32Array(12));
  }, TypeError, /^backward\(\) needs a forward\(\) in training mode; the last forward\(\) ran in eval mode \(call train\(\) and forward\(\) again\)$/],
  ['backward twice after one forward', (ca, q, k, v, ctx) => {
    const m = new ca.MultiHeadAttention(3, 4, 6, 0, 2);
    m.forward(ctx.x, [2, 6, 3]);
    m.backward(new Float32Array(48));
    return m.backward(new Float32Array(48));
  }, TypeError, /^backward\(\) needs a forward\(\) in training mode first/],
  ['backward gradOutput of the wrong length', (ca, q, k, v, ctx) => {
    const m = new ca.MultiHeadAttention(3, 4, 6, 0, 2);
    m.forward(ctx.x, [2, 6, 3]);
    return m.backward(new Float32Array(3));
  }, RangeError, /^gradOutput must have length 48 \(batch 2 × tokens 6 × output width 4\), got length 3$/],
  ['backward gradOutput an Array', (ca, q, k, v, ctx) => {
    const m = new ca.MultiHeadAttentionWrapper(3, 2, 6, 0, 2);
    m.forward(ctx.x, [2, 6, 3]);
    return m.backward(Array(48).fill(0));
  }, TypeError, /^gradOutput must be a Float32Array, got an Array of length 48$/],
  ['backward after a forward with useCache', (ca, q, k, v, ctx) => {
    const m = new ca.MultiHeadAttention(3, 4, 6, 0, 2);
    m.forward(ctx.x, [2, 6, 3], { useCache: true });
    try {
      return m.backward(new Float32Array(48));
    } finally {
      m.dispose();
    }
  }, TypeError, /^backward\(\) cannot follow the last forward\(\): it used the KV cache \(useCache\), which has no backward$/],
  ['Linear.backward before forward', (ca) => new ca.Linear(3, 2).backward(new Float32Array(2)), TypeError, /^backward\(\) needs a forward\(\) in training mode first/],
  ['Linear.backward gradOutput of the wrong length', (ca) => {
    const lin = new ca.Linear(3, 2);
    lin.forward(new Float32Array(12), [4, 3]);
    return lin.backward(new Float32Array(12));
  }, RangeError, /^gradOutput must have length 8 \(shape \[4, 2\]\), got length 12$/],
  ['zeroGrad with a string', (ca, q, k, v, ctx) => ctx.module.zeroGrad('yes'), TypeError, /^setToNone must be true or false, got the string "yes"$/],
  ['Embedding numEmbeddings 0', (ca) => new ca.Embedding(0, 3), RangeError, /^numEmbeddings must be an integer >= 1, got 0$/],
  ['Embedding embeddingDim a string', (ca) => new ca.Embedding(4, '3'), TypeError, /^embeddingDim must be an integer >= 1, got the string "3"$/],
  ['Embedding index out of range', (ca) => new ca.Embedding(6, 3).forward([0, 6]), RangeError, /^indices\[1\] must be an integer in \[0, 6\), got 6$/],
  ['Embedding index fractional', (ca) => new ca.Embedding(6, 3).forward([1.5]), RangeError, /^indices\[0\] must be an integer in \[0, 6\), got 1.5$/],
  ['Embedding indices a Float32Array', (ca) => new ca.Embedding(6, 3).forward(new Float32Array(2)), TypeError, /^indices must be an Int32Array, a Uint32Array or an Array of integers, got a Float32Array of length 2$/],
  ['Embedding shape not matching the indices', (ca) => new ca.Embedding(6, 3).forward([1, 2, 3], [2, 2]), RangeError, /^indices must have length 4 \(shape \[2, 2\]\), got length 3$/],
  ['Embedding.backward before forward', (ca) => new ca.Embedding(6, 3).backward(new Float32Array(3)), TypeError, /^backward\(\) needs a forward\(\) in training mode first/],
  ['Embedding.backward gradOutput of the wrong length', (ca) => {
    const e = new ca.Embedding(6, 3);
    e.forward([1, 2], [2]);
    return e.backward(new Float32Array(5));
  }, RangeError, /^gradOutput must have length 6 \(shape \[2, 3\]\), got length 5$/],
  ['GroupedQueryAttention.backward gradOutput a Float64Array', (ca, q, k, v, ctx) => {
    const g = new ca.GroupedQueryAttention(3, 4, 2, 1, { contextLength: 6 });
    g.forward(ctx.x, [2, 6, 3]);
    return g.backward(new Float64Array(48));
  }, TypeError, /^gradOutput must be a Float32Array, got a Float64Array of length 48$/],
  ['GroupedQueryAttention.backward after a forward with useCache', (ca, q, k, v, ctx) => {
    const g = new ca.GroupedQueryAttention(3, 4, 2, 1, { contextLength: 6 });
    g.forward(ctx.x.subarray(0, 18), [6, 3], { useCache: true });
    return g.backward(new Float32Array(24));
  }, TypeError, /^backward\(\) cannot follow the last forward\(\): it used the KV cache \(useCache\), which has no backward$/],

  // Training: loss, optimizers, randint.
  ['crossEntropy logits an Array', (ca) => ca.crossEntropy([0, 1], [1]), TypeError, /^logits must be a Float32Array, got an Array of length 2$/],
  ['crossEntropy no targets', (ca) => ca.crossEntropy(new Float32Array(2), []), TypeError, /^targets must be a non-empty Int32Array, Uint32Array or Array of class indices, got an Array of length 0$/],
  ['crossEntropy logits not N × C', (ca) => ca.crossEntropy(new Float32Array(5), [0, 1]), RangeError, /^logits must have length N × C with N = targets.length 2 and C >= 1, got length 5$/],
  ['crossEntropy target out of range', (ca) => ca.crossEntropy(new Float32Array(6), [0, 3]), RangeError, /^targets\[1\] must be an integer in \[0, 3\) \(or -100\), got 3$/],
  ['crossEntropy target a string', (ca) => ca.crossEntropy(new Float32Array(6), [0, '1']), TypeError, /^targets\[1\] must be an integer in \[0, 3\) \(or -100\), got the string "1"$/],
  ['crossEntropy unknown option', (ca) => ca.crossEntropy(new Float32Array(6), [0, 1], { ignore: 1 }), TypeError, /^options has an unknown option 'ignore'; known options: ignoreIndex$/],
  ['AdamW lr negative', (ca, q, k, v, ctx) => new ca.optim.AdamW(ctx.module, { lr: -1 }), RangeError, /^options.lr must be a finite number >= 0, got -1$/],
  ['AdamW betas[1] = 1', (ca, q, k, v, ctx) => new ca.optim.AdamW(ctx.module, { betas: [0.9, 1] }), RangeError, /^options.betas\[1\] must be a number in \[0, 1\), got 1$/],
  ['AdamW betas a number', (ca, q, k, v, ctx) => new ca.optim.AdamW(ctx.module, { betas: 0.9 }), TypeError, /^options.betas must be an Array of two numbers in \[0, 1\), got 0.9$/],
  ['AdamW unknown option', (ca, q, k, v, ctx) => new ca.optim.AdamW(ctx.module, { weight_decay: 0 }), TypeError, /^options has an unknown option 'weight_decay'; known options: lr, betas, eps, weightDecay$/],
  ['AdamW.loadStateDict with a module state dict', (ca, q, k, v, ctx) => new ca.optim.AdamW(ctx.module).loadStateDict(ctx.module.stateDict()), TypeError, /^stateDict must be an object \{ state, param_groups \} \(optimizer.stateDict\(\)\), got an object$/],
  ['AdamW.loadStateDict for fewer parameters', (ca, q, k, v, ctx) => new ca.optim.AdamW(ctx.module).loadStateDict({ state: {}, param_groups: [{ params: [0] }] }), RangeError, /^stateDict.param_groups\[0\].params must be the 5 indices 0 … 4, got an Array of length 1$/],
  ['AdamW.loadStateDict with step 0', (ca, q, k, v, ctx) => new ca.optim.AdamW(ctx.linear).loadStateDict({ state: { 0: { step: 0, exp_avg: new Float32Array(6), exp_avg_sq: new Float32Array(6) } }, param_groups: [{ lr: 0.1, betas: [0.9, 0.999], eps: 1e-8, weight_decay: 0.01, params: [0, 1] }] }), RangeError, /^stateDict.state\[0\].step must be an integer >= 1, got 0$/],
  ['AdamW.loadStateDict with a state for a parameter it lacks', (ca, q, k, v, ctx) => new ca.optim.AdamW(ctx.linear).loadStateDict({ state: { 2: {} }, param_groups: [{ lr: 0.1, betas: [0.9, 0.999], eps: 1e-8, weight_decay: 0.01, params: [0, 1] }] }), RangeError, /^stateDict.state has a state for parameter 2, expected indices 0 … 1$/],
  ['AdamW.loadStateDict with a negative lr', (ca, q, k, v, ctx) => new ca.optim.AdamW(ctx.linear).loadStateDict({ state: {}, param_groups: [{ lr: -1, betas: [0.9, 0.999], eps: 1e-8, weight_decay: 0.01, params: [0, 1] }] }), RangeError, /^stateDict.param_groups\[0\].lr must be a finite number >= 0, got -1$/],
  ['SGD.loadStateDict with a string momentum buffer', (ca, q, k, v, ctx) => new ca.optim.SGD(ctx.linear).loadStateDict({ state: { 1: { momentum_buffer: 'x' } }, param_groups: [{ lr: 0.1, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false, params: [0, 1] }] }), TypeError, /^stateDict.state\[1\].momentum_buffer must be a Float32Array or an array of numbers, got the string "x"$/],
  ['SGD.loadStateDict without momentum in its group', (ca, q, k, v, ctx) => new ca.optim.SGD(ctx.linear).loadStateDict({ state: {}, param_groups: [{ lr: 0.1, dampening: 0, weight_decay: 0, nesterov: false, params: [0, 1] }] }), RangeError, /^stateDict.param_groups\[0\] is missing momentum: a SGD state dict holds lr, momentum, dampening, weight_decay, nesterov and params$/],
  ['SGD.loadStateDict of an AdamW', (ca, q, k, v, ctx) => new ca.optim.SGD(ctx.linear).loadStateDict(new ca.optim.AdamW(ctx.linear).stateDict()), RangeError, /^stateDict.param_groups\[0\] is missing momentum, dampening, nesterov: a SGD state dict holds/],
  ['AdamW.loadStateDict with a misspelt key', (ca, q, k, v, ctx) => new ca.optim.AdamW(ctx.linear).loadStateDict({ state: {}, param_groups: [{ lr: 0.1, betas: [0.9, 0.999], eps: 1e-8, weight_decay: 0.01, weightDecay: 0.01, params: [0, 1] }] }), RangeError, /^stateDict.param_groups\[0\] has weightDecay, which AdamW does not have \(its keys: lr, betas, eps, weight_decay, params\): is this another optimizer's state dict\?$/],
  ['AdamW.loadStateDict with PyTorch amsgrad true', (ca, q, k, v, ctx) => new ca.optim.AdamW(ctx.linear).loadStateDict({ state: {}, param_groups: [{ lr: 0.1, betas: [0.9, 0.999], eps: 1e-8, weight_decay: 0.01, amsgrad: true, params: [0, 1] }] }), RangeError, /^stateDict.param_groups\[0\].amsgrad must be false \(what AdamW here does\), got true$/],
  ['out and weightsOut the same array', (ca, q, k, v) => { const a = new Float32Array(24); return ca.attention(q, k, v, { ...shape, returnWeights: true, out: a, weightsOut: a.subarray(0, 18) }); }, RangeError, /^options\.out and options\.weightsOut must not share memory: options\.out covers bytes \[0, 96\) and options\.weightsOut bytes \[0, 72\) of the same buffer$/],
  ['maskShape beyond any array', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, mask: new Float32Array(9), maskShape: [2 ** 20, 2 ** 20, 2 ** 20, 2 ** 20] }), RangeError, /^options\.mask would need maskShape \[1048576, 1048576, 1048576, 1048576\] elements, more than 2\^53: no array can be that long$/],
  ['loadStateDict with a transposed nested weight', (ca, q, k, v, ctx) => ctx.linear.loadStateDict({ weight: [[1, 2], [3, 4], [5, 6]], bias: [0, 0] }), RangeError, /^loadStateDict: 1 problem: size mismatch for 'weight': copying a param with shape \[3, 2\] from the state dict, the shape in the current model is \[2, 3\]$/],
  ['Linear.weight set to the wrong length', (ca, q, k, v, ctx) => { ctx.linear.weight = new Float32Array(3); }, RangeError, /^Linear\.weight must have length 6 \(shape \[2, 3\]\), got length 3$/],
  ['Linear.bias set to a Float64Array', (ca, q, k, v, ctx) => { ctx.linear.bias = new Float64Array(2); }, TypeError, /^Linear\.bias must be a Float32Array, got a Float64Array of length 2$/],
  ['GroupedQueryAttention.sinks set without sinks', (ca) => { new ca.GroupedQueryAttention(4, 4, 2, 1, { contextLength: 4 }).sinks = new Float32Array(2); }, TypeError, /^GroupedQueryAttention\.sinks cannot be set: it was constructed without options\.sinks, so it has no sinks \(got a Float32Array of length 2\)$/],
  ['SGD nesterov without momentum', (ca, q, k, v, ctx) => new ca.optim.SGD(ctx.module, { lr: 0.1, nesterov: true }), RangeError, /^options.nesterov needs momentum > 0 and dampening 0, got momentum 0 and dampening 0$/],
  ['SGD with no parameters', (ca) => new ca.optim.SGD([]), RangeError, /^params must hold at least one parameter, got none$/],
  ['SGD params a Float32Array', (ca) => new ca.optim.SGD(new Float32Array(3)), TypeError, /^params must be a module or a parameter \(\{ data: Float32Array, grad \}\), got a Float32Array of length 3$/],
  ['SGD with a module listed twice', (ca, q, k, v, ctx) => new ca.optim.SGD([ctx.linear, ctx.linear]), RangeError, /^params\[1\] 'weight' appears more than once in params$/],
  ['SGD.step with a gradient of the wrong length', (ca) => new ca.optim.SGD([{ data: new Float32Array(3), grad: new Float32Array(2) }]).step(), RangeError, /^the gradient of a parameter must be a Float32Array of length 3, got a Float32Array of length 2$/],
  ['AdamW.step with a gradient that is an Array', (ca) => new ca.optim.AdamW([{ data: new Float32Array(3), grad: [1, 2, 3] }]).step(), TypeError, /^the gradient of a parameter must be a Float32Array of length 3, got an Array of length 3$/],
  ['AdamW.step with a module gradient of the wrong length', (ca, q, k, v, ctx) => {
    const lin = new ca.Linear(3, 2);
    lin.forward(ctx.x.subarray(0, 6), [2, 3]);
    lin.backward(new Float32Array(4));
    lin.biasGrad = new Float32Array(1);
    return new ca.optim.AdamW(lin).step();
  }, RangeError, /^the gradient of a parameter 'bias' must be a Float32Array of length 2, got a Float32Array of length 1$/],
  ['optimizer zeroGrad with a number', (ca) => new ca.optim.SGD(new ca.Linear(2, 2)).zeroGrad(1), TypeError, /^setToNone must be true or false, got 1$/],
  ['crossEntropy ignoreIndex fractional', (ca) => ca.crossEntropy(new Float32Array(6), [0, 1], { ignoreIndex: 1.5 }), RangeError, /^options.ignoreIndex must be an integer >= -2147483648, got 1.5$/],
  ['ModuleList of a number', (ca) => new ca.ModuleList([1]), TypeError, /^module must be a Module, got 1$/],
  ['ModuleList.extend with a number', (ca) => new ca.ModuleList().extend(3), TypeError, /^modules must be an iterable of modules, got 3$/],
  ['registerModule with a dotted name', (ca) => new ca.Module().registerModule('a.b', new ca.Linear(1, 1)), TypeError, /^name must be a non-empty string without '\.', got the string "a\.b"$/],
  ['randint with high <= low', (ca) => ca.randint(3, 3, [2]), RangeError, /^high must be an integer >= 4, got 3$/],
  ['randint with a bad shape', (ca) => ca.randint(0, 3, 2), TypeError, /^shape must be an Array of 1–8 integers, got 2$/],

  // The modules: constructors.
  ['CausalAttention dIn 0', (ca) => new ca.CausalAttention(0, 2, 6, 0), RangeError, /^dIn must be an integer >= 1, got 0$/],
  ['CausalAttention dOut fractional', (ca) => new ca.CausalAttention(3, 2.5, 6, 0), RangeError, /^dOut must be an integer >= 1, got 2.5$/],
  ['CausalAttention contextLength a string', (ca) => new ca.CausalAttention(3, 2, '6', 0), TypeError, /^contextLength must be an integer >= 1, got the string "6"$/],
  ['CausalAttention dropout 1', (ca) => new ca.CausalAttention(3, 2, 6, 1), RangeError, /^dropout must be a number in \[0, 1\), got 1$/],
  ['CausalAttention dropout missing', (ca) => new ca.CausalAttention(3, 2, 6), TypeError, /^dropout must be a number in \[0, 1\), got undefined$/],
  ['CausalAttention qkvBias a string', (ca) => new ca.CausalAttention(3, 2, 6, 0, 'yes'), TypeError, /^qkvBias must be true or false, got the string "yes"$/],
  ['MultiHeadAttention dOut not divisible by numHeads', (ca) => new ca.MultiHeadAttention(3, 5, 6, 0, 2), RangeError, /^dOut must be divisible by numHeads, got dOut 5 and numHeads 2$/],
  ['MultiHeadAttention numHeads 0', (ca) => new ca.MultiHeadAttention(3, 4, 6, 0, 0), RangeError, /^numHeads must be an integer >= 1, got 0$/],
  ['MultiHeadAttention dropout NaN', (ca) => new ca.MultiHeadAttention(3, 4, 6, NaN, 2), RangeError, /^dropout must be a number in \[0, 1\), got NaN$/],
  ['MultiHeadAttentionWrapper numHeads Infinity', (ca) => new ca.MultiHeadAttentionWrapper(3, 2, 6, 0, Infinity), RangeError, /^numHeads must be an integer >= 1, got Infinity$/],
  ['MultiHeadAttentionWrapper numHeads missing', (ca) => new ca.MultiHeadAttentionWrapper(3, 2, 6, 0), TypeError, /^numHeads must be an integer >= 1, got undefined$/],
  ['SelfAttention dIn null', (ca) => new ca.SelfAttention(null, 2), TypeError, /^dIn must be an integer >= 1, got null$/],
  ['Linear inFeatures negative', (ca) => new ca.Linear(-1, 2), RangeError, /^inFeatures must be an integer >= 1, got -1$/],
  ['Linear bias a number', (ca) => new ca.Linear(3, 2, 1), TypeError, /^bias must be true or false, got 1$/],

  // The modules: forward.
  ['tokens beyond contextLength', (ca, q, k, v, ctx) => ctx.module.forward(new Float32Array(7 * 3), [1, 7, 3]), RangeError, /^the number of tokens \(shape\[1\]\) must be at most contextLength 6, got 7$/],
  ['forward x an Array', (ca, q, k, v, ctx) => ctx.module.forward(Array.from(ctx.x), [2, 6, 3]), TypeError, /^x must be a Float32Array, got an Array of length 36$/],
  ['forward x of the wrong length', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x.subarray(3), [2, 6, 3]), RangeError, /^x must have length 36 \(shape \[2, 6, 3\]\), got length 33$/],
  ['forward shape not an Array', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, '2,6,3'), TypeError, /^shape must be an Array of 2–3 integers, got the string "2,6,3"$/],
  ['forward shape with 4 dimensions', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [1, 2, 6, 3]), RangeError, /^shape must have 2 to 3 dimensions, got 4$/],
  ['forward shape with a 0', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [0, 6, 3]), RangeError, /^shape\[0\] must be an integer >= 1, got 0$/],
  ['forward shape with a fraction', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [2, 6.5, 3]), RangeError, /^shape\[1\] must be an integer >= 1, got 6.5$/],
  ['forward dIn mismatch', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [3, 6, 2]), RangeError, /^shape\[2\] must be dIn 3 for this module, got 2$/],
  ['forward unknown option', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [2, 6, 3], { returnWeight: true }), TypeError, /^options has an unknown option 'returnWeight'; known options: /],
  ['forward returnWeights a string', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [2, 6, 3], { returnWeights: 'true' }), TypeError, /^options.returnWeights must be true or false, got the string "true"$/],
  ['forward returnQKV a number', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [2, 6, 3], { returnQKV: 1 }), TypeError, /^options.returnQKV must be true or false, got 1$/],
  ['defaultScale of 0', (ca) => ca.defaultScale(0), RangeError, /^headDim must be an integer >= 1, got 0$/],
  ['defaultScale of a string', (ca) => ca.defaultScale('64'), TypeError, /^headDim must be an integer >= 1, got the string "64"$/],
  ['forward maskStrategy unknown', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [2, 6, 3], { maskStrategy: '-inf' }), RangeError, /^options.maskStrategy must be one of 'neg-inf', 'renormalize', got the string "-inf"$/],
  ['forward seed negative', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [2, 6, 3], { seed: -5 }), RangeError, /^options.seed must be in \[0, 2\^64\), got -5$/],
  ['forward out of the wrong length', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [2, 6, 3], { out: new Float32Array(3) }), RangeError, /^options.out must have length 48 \(batch 2 × tokens 6 × output width 4\), got length 3$/],
  ['forward weights beyond a wasm32 heap', (ca) => {
    const m = new ca.CausalAttention(1, 1, 40000, 0);
    return m.forward(new Float32Array(40000), [1, 40000, 1], { returnWeights: true });
  }, RangeError, /^forward needs 5\.96 GiB of wasm memory for its tensors; a wasm32 module holds at most 4\.00 GiB, in blocks below 2\.00 GiB each$/],
  ['setting dropout to 1', (ca, q, k, v, ctx) => { ctx.module.dropout = 1; }, RangeError, /^dropout must be a number in \[0, 1\), got 1$/],
  ['train with a string', (ca, q, k, v, ctx) => ctx.module.train('no'), TypeError, /^mode must be true or false, got the string "no"$/],
  ['Linear.forward x a Float64Array', (ca, q, k, v, ctx) => ctx.linear.forward(new Float64Array(6), [2, 3]), TypeError, /^x must be a Float32Array, got a Float64Array of length 6$/],
  ['Linear.forward inFeatures mismatch', (ca, q, k, v, ctx) => ctx.linear.forward(new Float32Array(8), [2, 4]), RangeError, /^shape\[1\] must be inFeatures 3, got 4$/],

  // Grouped-query attention and the KV cache.
  ['kvHeads not dividing heads', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, kvHeads: 3 }), RangeError, /^options.heads must be a multiple of options.kvHeads, got heads 2 and kvHeads 3$/],
  ['kvHeads 0', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, kvHeads: 0 }), RangeError, /^options.kvHeads must be an integer >= 1, got 0$/],
  ['kvHeads a string', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, kvHeads: '1' }), TypeError, /^options.kvHeads must be an integer >= 1, got the string "1"$/],
  ['k with heads where kvHeads are expected', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, kvHeads: 1 }), RangeError, /^k must have length 12 \(batch 1 × kvHeads 1 × keyLength 3 × headDim 4\), got length 24$/],
  ['createKVCache without options', (ca) => ca.createKVCache(), TypeError, /^options must be an object with batch, kvHeads, headDim and capacity, got undefined$/],
  ['createKVCache capacity 0', (ca) => ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 0 }), RangeError, /^options.capacity must be an integer >= 1, got 0$/],
  ['createKVCache kvHeads missing', (ca) => ca.createKVCache({ batch: 1, headDim: 4, capacity: 8 }), TypeError, /^options.kvHeads must be an integer >= 1, got undefined$/],
  ['createKVCache unknown option', (ca) => ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 8, heads: 2 }), TypeError, /^options has an unknown option 'heads'; known options: batch, kvHeads, headDim, valueDim, capacity, window, dtype$/],
  ['createKVCache beyond a wasm32 heap', (ca) => ca.createKVCache({ batch: 1, kvHeads: 8, headDim: 128, capacity: 600000 }), RangeError, /^a KV cache needs 4\.58 GiB of wasm memory \(batch 1 × kvHeads 8 × capacity 600000 × \(512 \+ 512 bytes per float32 key and value row\)\); a wasm32 module holds at most 4\.00 GiB, in blocks below 2\.00 GiB each$/],
  ['createKVCache dtype unknown', (ca) => ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 8, dtype: 'float16' }), TypeError, /^options.dtype must be one of 'float32', 'bfloat16', 'int8', got the string "float16"$/],
  ['createKVCache dtype not a string', (ca) => ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 8, dtype: 2 }), TypeError, /^options.dtype must be one of 'float32', 'bfloat16', 'int8', got 2$/],
  ['forward cacheDtype unknown', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [2, 6, 3], { useCache: true, cacheDtype: 'int4' }), TypeError, /^options.cacheDtype must be one of 'float32', 'bfloat16', 'int8', got the string "int4"$/],
  ['forward cacheDtype other than the cache\'s', (ca, q, k, v, ctx) => {
    const m = new ca.MultiHeadAttention(3, 4, 6, 0, 2);
    m.forward(ctx.x, [2, 6, 3], { useCache: true, cacheDtype: 'int8' });
    try {
      return m.forward(ctx.x.subarray(0, 6), [2, 1, 3], { useCache: true });
    } finally {
      assert.equal(m.cacheLength, 6, 'the refused call changed nothing');
      m.dispose();
    }
  }, RangeError, /^options.cacheDtype: the cache stores 'int8', got 'float32'; call resetCache\(\) first$/],
  ['forward returnScores with an int8 cache', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [2, 6, 3], { useCache: true, cacheDtype: 'int8', returnScores: true }), RangeError, /^options.returnScores needs options.cacheDtype 'float32' with useCache, got 'int8'$/],
  ['cache append k an Array', (ca, q, k, v, ctx) => ctx.cache.append([1, 2, 3, 4], new Float32Array(4)), TypeError, /^k must be a Float32Array, got an Array of length 4$/],
  ['cache append k of a partial token', (ca, q, k, v, ctx) => ctx.cache.append(new Float32Array(6), new Float32Array(6)), RangeError, /^k must have a length that is a positive multiple of batch 1 × kvHeads 1 × headDim 4 = 4 \(one token per 4 values\), got length 6$/],
  ['cache append v of the wrong length', (ca, q, k, v, ctx) => ctx.cache.append(new Float32Array(8), new Float32Array(4)), RangeError, /^v must have length 8 \(batch 1 × kvHeads 1 × 2 tokens \(from k\) × valueDim 4\), got length 4$/],
  ['cache append past capacity', (ca, q, k, v, ctx) => ctx.cache.append(new Float32Array(24), new Float32Array(24)), RangeError, /^append of 6 tokens would hold 9, past the cache's capacity 8 \(it holds 3\)$/],
  ['cache attention with a size the cache fixes', (ca, q, k, v, ctx) => ctx.cache.attention(q, { heads: 2, queryLength: 3, kvHeads: 1 }), TypeError, /^options has an unknown option 'kvHeads'; known options: heads, queryLength, /],
  ['cache attention heads not a multiple of kvHeads', (ca, q) => {
    const c = ca.createKVCache({ batch: 1, kvHeads: 2, headDim: 4, capacity: 2 }).append(q.subarray(0, 8), q.subarray(0, 8));
    return c.attention(q.subarray(0, 24), { heads: 3, queryLength: 2 });
  }, RangeError, /^options.heads must be a multiple of the cache's kvHeads, got heads 3 and kvHeads 2$/],
  ['cache attention without queryLength', (ca, q, k, v, ctx) => ctx.cache.attention(q, { heads: 2 }), TypeError, /^options.queryLength must be an integer >= 1, got undefined$/],
  ['cache attention q of the wrong length', (ca, q, k, v, ctx) => ctx.cache.attention(q, { heads: 2, queryLength: 2 }), RangeError, /^q must have length 16 \(batch 1 × heads 2 × queryLength 2 × headDim 4\), got length 24$/],
  ['cache attention on an empty cache', (ca, q) => ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 2 }).attention(q, { heads: 2, queryLength: 3 }), RangeError, /^the cache is empty \(length 0\): append keys and values before attention$/],
  ['cache attention dropout 1', (ca, q, k, v, ctx) => ctx.cache.attention(q, { heads: 2, queryLength: 3, dropout: 1 }), RangeError, /^options.dropout must be a number in \[0, 1\), got 1$/],
  // The visibility options (shape: batch 1, heads 2, queryLength 3 = keyLength 3).
  ['layout unknown', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, layout: 'bsd' }), RangeError, /^options.layout must be one of 'bhsd', 'bshd', got the string "bsd"$/],
  ['layout a number', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, layout: 1 }), TypeError, /^options.layout must be one of 'bhsd', 'bshd', got 1$/],
  ['queryOffset fractional', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, queryOffset: 0.5 }), RangeError, /^options.queryOffset must be an integer >= -2147483648, got 0.5$/],
  ['queryOffset a string', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, queryOffset: '1' }), TypeError, /^options.queryOffset must be an integer >= -2147483648, got the string "1"$/],
  ['keyLengths of the wrong length', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, keyLengths: [3, 3] }), RangeError, /^options.keyLengths must have length 1 \(batch\), got length 2$/],
  ['keyLengths past keyLength', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, keyLengths: new Int32Array([4]) }), RangeError, /^options.keyLengths\[0\] must be an integer in \[0, keyLength 3\], got 4$/],
  ['keyLengths negative', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, keyLengths: [-1] }), RangeError, /^options.keyLengths\[0\] must be an integer in \[0, keyLength 3\], got -1$/],
  ['keyLengths fractional', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, keyLengths: [1.5] }), RangeError, /^options.keyLengths\[0\] must be an integer in \[0, keyLength 3\], got 1.5$/],
  ['keyLengths a Float32Array', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, keyLengths: new Float32Array([3]) }), TypeError, /^options.keyLengths must be an Int32Array or an Array of batch 1 integers, got a Float32Array of length 1$/],
  ['window left negative', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, window: { left: -1 } }), RangeError, /^options.window.left must be an integer >= 0, got -1$/],
  ['window right fractional', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, window: { right: 1.5 } }), RangeError, /^options.window.right must be an integer >= 0, got 1.5$/],
  ['window a number', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, window: 4 }), TypeError, /^options.window must be an options object, got 4$/],
  ['window with a typo', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, window: { size: 4 } }), TypeError, /^options.window has an unknown option 'size'; known options: left, right$/],
  ['softcap 0', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, softcap: 0 }), RangeError, /^options.softcap must be a finite number > 0 \(a float32\), got 0$/],
  ['softcap negative', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, softcap: -50 }), RangeError, /^options.softcap must be a finite number > 0 \(a float32\), got -50$/],
  ['softcap Infinity', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, softcap: Infinity }), RangeError, /^options.softcap must be a finite number > 0 \(a float32\), got Infinity$/],
  ['softcap NaN', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, softcap: NaN }), RangeError, /^options.softcap must be a finite number > 0 \(a float32\), got NaN$/],
  ['softcap a string', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, softcap: '50' }), TypeError, /^options.softcap must be a finite number > 0, got the string "50"$/],
  ['sinks of the wrong length', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, sinks: new Float32Array(3) }), RangeError, /^options.sinks must have length 2 \(one logit per head: heads 2\), got length 3$/],
  ['sinks an Array', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, sinks: [0, 0] }), TypeError, /^options.sinks must be a Float32Array, got an Array of length 2$/],
  ['mask an Int8Array', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, mask: new Int8Array(9), maskShape: [3, 3] }), TypeError, /^options.mask must be a Uint8Array \(non-zero = may attend\) or a Float32Array \(added to the scores\), got an Int8Array of length 9$/],
  ['mask a Float64Array', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, mask: new Float64Array(9), maskShape: [3, 3] }), TypeError, /^options.mask must be a Uint8Array .*got a Float64Array of length 9$/],
  ['mask without maskShape', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, mask: new Uint8Array(9) }), TypeError, /^options.maskShape must be given with options.mask: an Array of 1–4 sizes, e.g. \[queryLength 3, keyLength 3\]$/],
  ['maskShape without mask', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, maskShape: [3, 3] }), TypeError, /^options.maskShape is only used with options.mask$/],
  ['maskShape not matching the mask', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, mask: new Uint8Array(8), maskShape: [3, 3] }), RangeError, /^options.mask must have length 9 \(maskShape \[3, 3\]\), got length 8$/],
  ['maskShape of rank 5', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, mask: new Uint8Array(9), maskShape: [1, 1, 1, 3, 3] }), RangeError, /^options.maskShape must have 1 to 4 dimensions, got 5$/],
  ['maskShape that does not broadcast', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, mask: new Float32Array(6), maskShape: [3, 2] }), RangeError, /^options.maskShape \[3, 2\] does not broadcast to \[batch 1, heads 2, queryLength 3, keyLength 3\]: maskShape\[1\] must be 1 or keyLength 3, got 2$/],
  ['maskShape with a batch axis of another size', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, mask: new Uint8Array(18), maskShape: [2, 1, 3, 3] }), RangeError, /^options.maskShape \[2, 1, 3, 3\] does not broadcast .*maskShape\[0\] must be 1 or batch 1, got 2$/],
  ['renormalize with a window', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, maskStrategy: 'renormalize', window: { left: 1 } }), RangeError, /^options.maskStrategy 'renormalize' .* got it with options.window; use maskStrategy 'neg-inf'$/],
  ['returnScores true', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, returnScores: true }), TypeError, /^options.returnScores must be one of 'scaled', 'softcapped', 'masked', got true$/],
  ['returnScores an unknown stage', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, returnScores: 'raw' }), RangeError, /^options.returnScores must be one of 'scaled', 'softcapped', 'masked', got the string "raw"$/],
  ['returnScores beyond a wasm32 heap', (ca) => {
    const t = new Float32Array(30000);
    return ca.attention(t, t, t, { batch: 1, heads: 1, queryLength: 30000, keyLength: 30000, headDim: 1, returnScores: 'masked' });
  }, RangeError, /^options.returnScores: the scores \[batch 1, heads 1, queryLength 30000, keyLength 30000\] would take 3\.35 GiB, more than one block of a wasm32 heap holds \(2\.00 GiB\); without returnScores no such matrix is allocated$/],
  ['attentionBackward returnScores (forward only)', (ca, q, k, v) => ca.attentionBackward(q, q, k, v, q, new Float32Array(6), { ...shape, returnScores: 'scaled' }), TypeError, /^options has an unknown option 'returnScores'; known options: /],
  ['cache attention returnScores', (ca, q, k, v, ctx) => ctx.cache.attention(q, { heads: 2, queryLength: 3, returnScores: 'masked' }), TypeError, /^options has an unknown option 'returnScores'; known options: /],
  ['renormalize with softcap', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, maskStrategy: 'renormalize', softcap: 5 }), RangeError, /^options.maskStrategy 'renormalize' .* got it with options.softcap; use maskStrategy 'neg-inf'$/],
  ['backward keyLengths out of range', (ca, q, k, v) => ca.attentionBackward(q, q, k, v, q, new Float32Array(6), { ...shape, keyLengths: [9] }), RangeError, /^options.keyLengths\[0\] must be an integer in \[0, keyLength 3\], got 9$/],
  ['backward sinks of the wrong length', (ca, q, k, v) => ca.attentionBackward(q, q, k, v, q, new Float32Array(6), { ...shape, sinks: new Float32Array(1) }), RangeError, /^options.sinks must have length 2 \(one logit per head: heads 2\), got length 1$/],
  ['cache attention keyLengths (the cache fixes them)', (ca, q, k, v, ctx) => ctx.cache.attention(q, { heads: 2, queryLength: 3, keyLengths: [3] }), TypeError, /^options has an unknown option 'keyLengths'; known options: /],
  ['cache attention softcap 0', (ca, q, k, v, ctx) => ctx.cache.attention(q, { heads: 2, queryLength: 3, softcap: 0 }), RangeError, /^options.softcap must be a finite number > 0 \(a float32\), got 0$/],
  ['cache attention mask that does not broadcast', (ca, q, k, v, ctx) => ctx.cache.attention(q, { heads: 2, queryLength: 3, mask: new Uint8Array(4), maskShape: [4] }), RangeError, /^options.maskShape \[4\] does not broadcast to \[batch 1, heads 2, queryLength 3, keyLength 3\]: maskShape\[0\] must be 1 or keyLength 3, got 4$/],
  ['cache truncate beyond its length', (ca, q, k, v, ctx) => ctx.cache.truncate(4), RangeError, /^n must be at most the cache's length 3, got 4$/],
  ['cache truncate negative', (ca, q, k, v, ctx) => ctx.cache.truncate(-1), RangeError, /^n must be an integer >= 0, got -1$/],
  ['cache attention out of the wrong length', (ca, q, k, v, ctx) => ctx.cache.attention(q.subarray(0, 8), { heads: 2, queryLength: 1, out: new Float32Array(3) }), RangeError, /^options.out must have length 8 \(batch 1 × heads 2 × queryLength 1 × valueDim 4\), got length 3$/],
  ['cache attention returnLogSumExp not boolean', (ca, q, k, v, ctx) => ctx.cache.attention(q.subarray(0, 8), { heads: 2, queryLength: 1, returnLogSumExp: 'yes' }), TypeError, /^options.returnLogSumExp must be true or false, got the string "yes"$/],
  ['cache attention causal unknown', (ca, q, k, v, ctx) => ctx.cache.attention(q.subarray(0, 8), { heads: 2, queryLength: 1, causal: 'x' }), RangeError, /^options.causal must be one of false, true, 'top-left', 'bottom-right', got the string "x"$/],
  ['cache append v an Array', (ca, q, k, v, ctx) => ctx.cache.append(new Float32Array(4), [1, 2, 3, 4]), TypeError, /^v must be a Float32Array, got an Array of length 4$/],
  ['cache truncate with a string', (ca, q, k, v, ctx) => ctx.cache.truncate('1'), TypeError, /^n must be an integer >= 0, got the string "1"$/],
  // Sequences of their own lengths (ctx.ragged: batch 3, lengths 3, 1, 2, capacity 8)
  // and a window cache (ctx.windowed: batch 2, W 3, capacity 4, 6 tokens each, 4 held).
  ['cache append sequences out of range', (ca, q, k, v, ctx) => ctx.ragged.append(f32(4), f32(4), { sequences: [3] }), RangeError, /^options.sequences\[0\] must be an integer in \[0, 3\), got 3$/],
  ['cache append sequences repeated', (ca, q, k, v, ctx) => ctx.ragged.append(f32(8), f32(8), { sequences: [1, 1] }), RangeError, /^options.sequences must not repeat a sequence, got 1 again at \[1\]$/],
  ['cache append sequences empty', (ca, q, k, v, ctx) => ctx.ragged.append(f32(4), f32(4), { sequences: [] }), RangeError, /^options.sequences must list at least one sequence, got an empty list$/],
  ['cache append sequences a string', (ca, q, k, v, ctx) => ctx.ragged.append(f32(4), f32(4), { sequences: '0' }), TypeError, /^options.sequences must be an Int32Array, a Uint32Array or an Array of integers, got the string "0"$/],
  ['cache append k shaped for every sequence', (ca, q, k, v, ctx) => ctx.ragged.append(f32(12), f32(12), { sequences: [0, 2] }), RangeError, /^k must have a length that is a positive multiple of sequences.length 2 × kvHeads 1 × headDim 4 = 8 \(one token per 8 values\), got length 12$/],
  ['cache append past one sequence\'s room', (ca, q, k, v, ctx) => ctx.ragged.append(f32(48), f32(48), { sequences: [1, 0] }), RangeError, /^append of 6 tokens would hold 9, past the cache's capacity 8 \(sequence 0 holds 3\)$/],
  ['cache append an unknown option', (ca, q, k, v, ctx) => ctx.ragged.append(f32(12), f32(12), { sequence: [0] }), TypeError, /^options has an unknown option 'sequence'; known options: sequences$/],
  ['cache truncate beyond one sequence\'s length', (ca, q, k, v, ctx) => ctx.ragged.truncate(2, { sequences: [0, 1] }), RangeError, /^n must be at most sequence 1's length 1, got 2$/],
  ['cache truncate sequences out of range', (ca, q, k, v, ctx) => ctx.ragged.truncate(0, { sequences: [-1] }), RangeError, /^options.sequences\[0\] must be an integer in \[0, 3\), got -1$/],
  ['cache copySequence onto itself', (ca, q, k, v, ctx) => ctx.ragged.copySequence(1, 1), RangeError, /^to must differ from from: a sequence cannot be copied onto itself, got 1 and 1$/],
  ['cache copySequence from out of range', (ca, q, k, v, ctx) => ctx.ragged.copySequence(3, 0), RangeError, /^from must be a sequence index in \[0, 3\), got 3$/],
  ['cache copySequence to negative', (ca, q, k, v, ctx) => ctx.ragged.copySequence(0, -1), RangeError, /^to must be an integer >= 0, got -1$/],
  ['cache copySequence from a string', (ca, q, k, v, ctx) => ctx.ragged.copySequence('0', 1), TypeError, /^from must be an integer >= 0, got the string "0"$/],
  ['cache copySequence length past the source', (ca, q, k, v, ctx) => ctx.ragged.copySequence(1, 0, { length: 2 }), RangeError, /^options.length must be at most sequence 1's length 1, got 2$/],
  ['cache copySequence unknown option', (ca, q, k, v, ctx) => ctx.ragged.copySequence(1, 0, { tokens: 1 }), TypeError, /^options has an unknown option 'tokens'; known options: length$/],
  ['createKVCache window past capacity', (ca) => ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 3, window: 4 }), RangeError, /^options.capacity must be at least options.window 4 \(the window's W − 1 = 3 newest tokens plus a chunk of at least 1\), got 3$/],
  ['createKVCache window 0', (ca) => ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 3, window: 0 }), RangeError, /^options.window must be an integer >= 1, got 0$/],
  ['window cache append of a chunk too long', (ca, q, k, v, ctx) => ctx.windowed.append(f32(24), f32(24)), RangeError, /^append of 3 tokens is longer than this window cache takes: its capacity 4 holds the window's W − 1 = 2 newest tokens plus a chunk of at most 2 \(capacity ≥ W − 1 \+ the longest chunk appended\)$/],
  ['window cache attention with a window', (ca, q, k, v, ctx) => ctx.windowed.attention(f32(16), { heads: 2, queryLength: 1, window: { left: 1 } }), RangeError, /^options.window is not taken by a window cache: it applies its own window \{ left: 2 \} over the tokens it holds$/],
  ['window cache attention causal false', (ca, q, k, v, ctx) => ctx.windowed.attention(f32(16), { heads: 2, queryLength: 1, causal: false }), RangeError, /^options.causal of a window cache must be 'bottom-right' \(its queries are each sequence's newest tokens\), got false$/],
  ['window cache attention past the keys it holds', (ca, q, k, v, ctx) => ctx.windowed.attention(f32(48), { heads: 2, queryLength: 3 }), RangeError, /^options.queryLength 3 needs the 5 newest keys of sequence 0 \(its queries and the window's W − 1 = 2 before them\), but this window cache holds 4 of them: after making room it keeps W − 1 plus the chunk appended$/],
  ['window cache truncate into what it dropped', (ca, q, k, v, ctx) => ctx.windowed.truncate(3), RangeError, /^n must be 0 or at least 4 for sequence 0: this window cache dropped its first 2 tokens, and going on from n tokens needs the W − 1 = 2 before n, got 3$/],
  ['GroupedQueryAttention useCache with slidingWindow and keyLengths', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { contextLength: 6, slidingWindow: 2 }).forward(f32(6), [2, 3], { useCache: true, keyLengths: [2] }), RangeError, /^options.keyLengths is not taken with useCache by a module with slidingWindow: its cache keeps only the window's 1 newest tokens$/],
  ['createKVCache valueDim 0', (ca) => ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 8, valueDim: 0 }), RangeError, /^options.valueDim must be an integer >= 1, got 0$/],
  ['cache used after dispose', (ca, q) => {
    const c = ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 2 });
    c.dispose();
    return c.append(q.subarray(0, 4), q.subarray(0, 4));
  }, TypeError, /^this KV cache has been disposed; create a new one with ca.createKVCache\(\)$/],
  ['GroupedQueryAttention numHeads not divisible by numKVGroups', (ca) => new ca.GroupedQueryAttention(3, 12, 6, 4), RangeError, /^numHeads must be divisible by numKVGroups, got numHeads 6 and numKVGroups 4$/],
  ['GroupedQueryAttention odd head size', (ca) => new ca.GroupedQueryAttention(3, 6, 2, 1), RangeError, /^the head size dOut \/ numHeads must be even for RoPE, got 6 \/ 2 = 3$/],
  ['GroupedQueryAttention ropeBase negative', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { ropeBase: -1 }), RangeError, /^options.ropeBase must be a positive float32, got -1$/],
  ['GroupedQueryAttention ropeBase NaN', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { ropeBase: NaN }), RangeError, /^options.ropeBase must be a finite number, got NaN$/],
  ['GroupedQueryAttention unknown option', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { dropout: 0.1 }), TypeError, /^options has an unknown option 'dropout'; known options: contextLength, ropeBase, freqConfig, slidingWindow, softcap, sinks$/],
  ['GroupedQueryAttention slidingWindow 0', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { slidingWindow: 0 }), RangeError, /^options.slidingWindow must be an integer >= 1, got 0$/],
  ['GroupedQueryAttention softcap negative', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { softcap: -1 }), RangeError, /^options.softcap must be a finite number > 0 \(a float32\), got -1$/],
  ['GroupedQueryAttention sinks not boolean', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { sinks: 1 }), TypeError, /^options.sinks must be true or false, got 1$/],
  ['module forward keyLengths of the wrong length', (ca, q, k, v, ctx) => ctx.module.forward(new Float32Array(18), [6, 3], { keyLengths: [6, 6] }), RangeError, /^options.keyLengths must have length 1 \(batch\), got length 2$/],
  ['module forward keyLengths past the tokens', (ca, q, k, v, ctx) => ctx.module.forward(new Float32Array(18), [6, 3], { keyLengths: [7] }), RangeError, /^options.keyLengths\[0\] must be an integer in \[0, keyLength 6\], got 7$/],
  ['module forward mask that does not broadcast', (ca, q, k, v, ctx) => ctx.module.forward(new Float32Array(18), [6, 3], { mask: new Uint8Array(30), maskShape: [6, 5] }), RangeError, /^options.maskShape \[6, 5\] does not broadcast to \[batch 1, heads 2, queryLength 6, keyLength 6\]: maskShape\[1\] must be 1 or keyLength 6, got 5$/],
  ['module forward headMask an Array', (ca, q, k, v, ctx) => ctx.module.forward(new Float32Array(18), [6, 3], { headMask: [1, 0] }), TypeError, /^options.headMask must be a Float32Array, got an Array of length 2$/],
  ['module forward headMask of the wrong length', (ca, q, k, v, ctx) => ctx.module.forward(new Float32Array(36), [2, 6, 3], { headMask: new Float32Array(3) }), RangeError, /^options.headMask must have length 2 \(\[heads\]\) or 4 \(\[batch 2, heads 2\]\), got length 3$/],
  ['module forward headMask with NaN', (ca, q, k, v, ctx) => ctx.module.forward(new Float32Array(18), [6, 3], { headMask: new Float32Array([1, NaN]) }), RangeError, /^options.headMask\[1\] must be finite, got NaN$/],
  ['GQA forward headMask over the KV groups, not the heads', (ca, q, k, v, ctx) => ctx.gqa.forward(new Float32Array(18), [6, 3], { headMask: new Float32Array(1) }), RangeError, /^options.headMask must have length 2 \(\[heads\]\) or 2 \(\[batch 1, heads 2\]\), got length 1$/],
  ['module forward mask an Int32Array', (ca, q, k, v, ctx) => ctx.module.forward(new Float32Array(18), [6, 3], { mask: new Int32Array(36), maskShape: [6, 6] }), TypeError, /^options.mask must be a Uint8Array .*got an Int32Array of length 36$/],
  ['GroupedQueryAttention freqConfig missing a field', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { freqConfig: { factor: 32, lowFreqFactor: 1, highFreqFactor: 4 } }), TypeError, /^options.freqConfig.originalContextLength must be a finite number, got undefined$/],
  ['GroupedQueryAttention freqConfig unknown field', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { freqConfig: { factor: 32, low_freq_factor: 1 } }), TypeError, /^options.freqConfig has an unknown option 'low_freq_factor'; known options: factor, lowFreqFactor, highFreqFactor, originalContextLength$/],
  ['GroupedQueryAttention freqConfig factor 0', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { freqConfig: { factor: 0, lowFreqFactor: 1, highFreqFactor: 4, originalContextLength: 8192 } }), RangeError, /^options.freqConfig.factor must be a positive float32, got 0$/],
  ['GroupedQueryAttention freqConfig low >= high', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { freqConfig: { factor: 8, lowFreqFactor: 4, highFreqFactor: 4, originalContextLength: 8192 } }), RangeError, /^options.freqConfig.lowFreqFactor must be less than options.freqConfig.highFreqFactor, got 4 and 4$/],
  ['GroupedQueryAttention freqConfig not an object', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { freqConfig: 32 }), TypeError, /^options.freqConfig must be an options object, got /],
  ['GroupedQueryAttention numKVGroups 0', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 0), RangeError, /^numKVGroups must be an integer >= 1, got 0$/],
  ['forward useCache a string', (ca, q, k, v, ctx) => ctx.gqa.forward(ctx.x.subarray(0, 6), [2, 3], { useCache: 'yes' }), TypeError, /^options.useCache must be true or false, got the string "yes"$/],
  ['forward useCache past contextLength', (ca, q, k, v, ctx) => {
    ctx.gqa.resetCache().forward(ctx.x.subarray(0, 12), [4, 3], { useCache: true });
    return ctx.gqa.forward(ctx.x.subarray(0, 9), [3, 3], { useCache: true });
  }, RangeError, /^useCache: the cache would hold 7 tokens, past contextLength 6 \(it holds 4\); call resetCache\(\) first$/],

  // State dicts.
  ['loadStateDict missing an entry', (ca, q, k, v, ctx) => { const d = ctx.module.stateDict(); delete d['W_key.weight']; return ctx.module.loadStateDict(d); }, RangeError, /^loadStateDict: 1 problem: missing 'W_key.weight' \(12 values\)$/],
  ['loadStateDict with an extra entry', (ca, q, k, v, ctx) => ctx.module.loadStateDict({ ...ctx.module.stateDict(), 'heads.0.W_query.weight': new Float32Array(6) }), RangeError, /^loadStateDict: 1 problem: unexpected 'heads.0.W_query.weight'$/],
  ['loadStateDict with a mis-sized entry', (ca, q, k, v, ctx) => ctx.module.loadStateDict({ ...ctx.module.stateDict(), 'out_proj.bias': new Float32Array(5) }), RangeError, /^loadStateDict: 1 problem: 'out_proj.bias' has 5 values, expected 4$/],
  ['loadStateDict with a non-numeric entry', (ca, q, k, v, ctx) => ctx.module.loadStateDict({ ...ctx.module.stateDict(), 'W_query.weight': ['a'] }), TypeError, /^loadStateDict: 1 problem: 'W_query.weight' must be a Float32Array or an array of numbers, got an Array of length 1$/],
  ['loadStateDict with null', (ca, q, k, v, ctx) => ctx.module.loadStateDict(null), TypeError, /^stateDict must be an object of named parameters, got null$/],

  // rand.
  ['rand with no dimensions', (ca) => ca.rand([]), RangeError, /^shape must have 1 to 8 dimensions, got 0$/],
  ['rand with a negative dimension', (ca) => ca.rand([2, -1]), RangeError, /^shape\[1\] must be an integer >= 1, got -1$/],
  ['rand with a string', (ca) => ca.rand('3'), TypeError, /^shape\[0\] must be an integer >= 1, got the string "3"$/],
  ['rand too large', (ca) => ca.rand([100000, 100000]), RangeError, /^rand: at most 2\^28 values, got shape \[100000, 100000\]$/],
];

describe('bad input', async () => {
  const ca = await init({ build: 'single' });
  ca.manualSeed(1);
  const ctx = {
    module: new ca.MultiHeadAttention(3, 4, 6, 0.0, 2),
    linear: new ca.Linear(3, 2),
    x: randomArray(2 * 6 * 3, 9),
    cache: ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 8 }),
    gqa: new ca.GroupedQueryAttention(3, 4, 2, 1, { contextLength: 6 }),
    ragged: ca.createKVCache({ batch: 3, kvHeads: 1, headDim: 4, capacity: 8 }),
    windowed: ca.createKVCache({ batch: 2, kvHeads: 1, headDim: 4, capacity: 4, window: 3 }),
  };
  ctx.cache.append(randomArray(12, 7), randomArray(12, 8));
  ctx.ragged.append(randomArray(12, 11), randomArray(12, 12)).append(randomArray(8, 13), randomArray(8, 14), { sequences: [0, 2] })
    .append(randomArray(4, 15), randomArray(4, 16), { sequences: [0] });
  for (let i = 0; i < 3; i++) ctx.windowed.append(randomArray(16, 20 + i), randomArray(16, 30 + i));
  const raggedExpected = ctx.ragged.attention(randomArray(24, 17), { heads: 2, queryLength: 1 });
  const windowedExpected = ctx.windowed.attention(randomArray(16, 18), { heads: 2, queryLength: 1 });
  const moduleExpected = ctx.module.forward(ctx.x, [2, 6, 3]);
  const linearExpected = ctx.linear.forward(ctx.x, [12, 3]);
  const decodeQuery = randomArray(8, 10);
  const cacheExpected = ctx.cache.attention(decodeQuery, { heads: 2, queryLength: 1 });

  it(`has at least 60 kinds of bad input (${cases.length})`, () => {
    assert.ok(cases.length >= 60);
    assert.equal(new Set(cases.map(([what]) => what)).size, cases.length);
  });

  for (const [what, call, ErrorType, pattern] of cases) {
    it(`${what}: ${ErrorType.name}`, () => {
      const { q, k, v } = good();
      assert.throws(() => call(ca, q, k, v, ctx), (error) => {
        assert.equal(error.constructor, ErrorType, `${error.constructor.name}: ${error.message}`);
        assert.match(error.message, pattern);
        return true;
      });
      // The same runtime and module keep working, and correctly.
      const { output } = ca.attention(q, k, v, shape);
      assert.ok(maxRelativeError(output, expected) <= 1e-5);
      assert.deepEqual(ctx.module.forward(ctx.x, [2, 6, 3]), moduleExpected);
      assert.deepEqual(ctx.linear.forward(ctx.x, [12, 3]), linearExpected);
      assert.equal(ctx.cache.length, 3);
      assert.deepEqual(ctx.cache.attention(decodeQuery, { heads: 2, queryLength: 1 }), cacheExpected);
      // A refused call on a cache changes nothing, in any sequence.
      assert.deepEqual(ctx.ragged.lengths, Int32Array.of(3, 1, 2));
      assert.deepEqual(ctx.ragged.attention(randomArray(24, 17), { heads: 2, queryLength: 1 }), raggedExpected);
      assert.deepEqual(ctx.windowed.lengths, Int32Array.of(6, 6));
      assert.deepEqual(ctx.windowed.attention(randomArray(16, 18), { heads: 2, queryLength: 1 }), windowedExpected);
    });
  }
});

// Worker mode: the same bad input, each call awaited, rejects with the
// local class and message, and afterwards the worker still computes. Each
// entry runs on the local runtime and on the worker's; ctx holds a
// MultiHeadAttention(3, 4, 6, 0, 2) and a GroupedQueryAttention(3, 4, 2, 1,
// { contextLength: 6 }) of each.
const circular = { ...shape };
circular.self = circular;
let deep = [];
for (let i = 0; i < 20000; i++) deep = [deep];
const detached = new Float32Array(24);
structuredClone(detached.buffer, { transfer: [detached.buffer] });
const f32 = (n) => new Float32Array(n);
const remoteCases = [
  ['attention q too short', (ca, q, k, v) => ca.attention(q.subarray(1), k, v, shape)],
  ['attention unknown option', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, head: 2 })],
  ['attention with circular options', (ca, q, k, v) => ca.attention(q, k, v, circular)],
  ['attention with 20 000-deep options', (ca, q, k, v) => ca.attention(q, k, v, deep)],
  ['attention with a detached q', (ca, q, k, v) => ca.attention(detached, k, v, shape)],
  ['attention with a detached out', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, out: detached })],
  ['attention seed 2^64', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, seed: 2n ** 64n })],
  ['attention beyond a wasm32 heap', (ca) => ca.attention(f32(40000), f32(40000), f32(40000),
    { batch: 1, heads: 1, queryLength: 40000, keyLength: 40000, headDim: 1, returnWeights: true })],
  ['attentionBackward gradOutput a Float64Array', (ca, q, k, v) => ca.attentionBackward(new Float64Array(24), q, k, v, q, f32(6), shape)],
  ['attentionBackward without logSumExp', (ca, q, k, v) => ca.attentionBackward(q, q, k, v, q, undefined, shape)],
  ['manualSeed with a symbol', (ca) => ca.manualSeed(Symbol('seed'))],
  ['rand too large', (ca) => ca.rand([100000, 100000])],
  ['randint with high <= low', (ca) => ca.randint(3, 3, [2])],
  ['crossEntropy target out of range', (ca) => ca.crossEntropy(f32(6), [0, 3])],
  ['CausalAttention dIn 0', (ca) => new ca.CausalAttention(0, 2, 6, 0)],
  ['GroupedQueryAttention freqConfig unknown field', (ca) => new ca.GroupedQueryAttention(3, 4, 2, 1, { freqConfig: { factor: 32, low_freq_factor: 1 } })],
  ['ModuleList of a number', (ca) => new ca.ModuleList([1])],
  ['forward tokens beyond contextLength', (ca, q, k, v, ctx) => ctx.module.forward(f32(21), [1, 7, 3])],
  ['forward unknown option', (ca, q, k, v, ctx) => ctx.module.forward(ctx.x, [2, 6, 3], { returnWeight: true })],
  ['forward useCache past contextLength', async (ca, q, k, v, ctx) => {
    await (await ctx.gqa.resetCache()).forward(ctx.x.subarray(0, 12), [4, 3], { useCache: true });
    return ctx.gqa.forward(ctx.x.subarray(0, 9), [3, 3], { useCache: true });
  }],
  ['backward before any forward', async (ca) => (await new ca.CausalAttention(3, 2, 6, 0)).backward(f32(12))],
  ['backward gradOutput of the wrong length', async (ca, q, k, v, ctx) => {
    const m = await new ca.MultiHeadAttention(3, 4, 6, 0, 2);
    await m.forward(ctx.x, [2, 6, 3]);
    return m.backward(f32(3));
  }],
  ['Embedding.backward gradOutput an Array', async (ca) => {
    const e = await new ca.Embedding(6, 3);
    await e.forward([1, 2], [2]);
    return e.backward([1, 2, 3, 4, 5, 6]);
  }],
  ['attention with out and weightsOut sharing memory', (ca, q, k, v) => { const a = f32(24); return ca.attention(q, k, v, { ...shape, returnWeights: true, out: a, weightsOut: a.subarray(0, 18) }); }],
  ['attention with a maskShape beyond any array', (ca, q, k, v) => ca.attention(q, k, v, { ...shape, mask: f32(9), maskShape: [2 ** 20, 2 ** 20, 2 ** 20, 2 ** 20] })],
  ['loadStateDict with a transposed nested weight', async (ca, q, k, v, ctx) => {
    const d = await ctx.module.stateDict();
    const w = d['W_query.weight'];
    d['W_query.weight'] = [0, 1, 2].map((i) => [0, 1, 2, 3].map((o) => w[o * 3 + i]));
    return ctx.module.loadStateDict(d);
  }],
  ['SGD.loadStateDict of an AdamW', async (ca, q, k, v, ctx) => (await new ca.optim.SGD(ctx.module)).loadStateDict(await (await new ca.optim.AdamW(ctx.module)).stateDict())],
  ['SGD with no parameters', (ca) => new ca.optim.SGD([])],
  ['SGD nesterov without momentum', (ca, q, k, v, ctx) => new ca.optim.SGD(ctx.module, { lr: 0.1, nesterov: true })],
  ['SGD.step with a gradient of the wrong length', async (ca) => (await new ca.optim.SGD([{ data: f32(3), grad: f32(2) }])).step()],
  ['AdamW.step with a gradient that is an Array', async (ca) => (await new ca.optim.AdamW([{ data: f32(3), grad: [1, 2, 3] }])).step()],
  ['loadStateDict missing an entry', async (ca, q, k, v, ctx) => {
    const d = await ctx.module.stateDict();
    delete d['W_key.weight'];
    return ctx.module.loadStateDict(d);
  }],
  ['createKVCache capacity 0', (ca) => ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 0 })],
  ['createKVCache beyond a wasm32 heap', (ca) => ca.createKVCache({ batch: 1, kvHeads: 8, headDim: 128, capacity: 600000 })],
  ['cache append past capacity', async (ca) => (await ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 2 })).append(f32(12), f32(12))],
  ['cache attention on an empty cache', async (ca, q) => (await ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 2 })).attention(q, { heads: 2, queryLength: 3 })],
  ['cache truncate beyond its length', async (ca) => (await ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 2 })).truncate(1)],
  ['cache append sequences repeated', async (ca) => (await ca.createKVCache({ batch: 2, kvHeads: 1, headDim: 4, capacity: 2 })).append(f32(8), f32(8), { sequences: [1, 1] })],
  ['cache copySequence onto itself', async (ca) => (await ca.createKVCache({ batch: 2, kvHeads: 1, headDim: 4, capacity: 2 })).copySequence(0, 0)],
  ['window cache append of a chunk too long', async (ca) => (await ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 4, window: 3 })).append(f32(12), f32(12))],
  ['cache used after dispose', async (ca) => {
    const c = await ca.createKVCache({ batch: 1, kvHeads: 1, headDim: 4, capacity: 2 });
    await c.dispose();
    return c.append(f32(4), f32(4));
  }],
];

describe('bad input in worker mode', async () => {
  const local = await init({ build: 'single' });
  const remote = await init({ worker: true, build: 'single' });
  after(() => remote.dispose());
  const contexts = [];
  for (const ca of [local, remote]) {
    await ca.manualSeed(1);
    contexts.push({
      module: await new ca.MultiHeadAttention(3, 4, 6, 0.0, 2),
      gqa: await new ca.GroupedQueryAttention(3, 4, 2, 1, { contextLength: 6 }),
      x: randomArray(2 * 6 * 3, 9),
    });
  }
  const moduleExpected = contexts[0].module.forward(contexts[0].x, [2, 6, 3]);

  it(`has at least 30 kinds of bad input (${remoteCases.length})`, () => {
    assert.ok(remoteCases.length >= 30);
    assert.equal(new Set(remoteCases.map(([what]) => what)).size, remoteCases.length);
  });

  for (const [what, call] of remoteCases) {
    it(`${what}: the local class and message`, async () => {
      const errors = [];
      for (const [i, ca] of [local, remote].entries()) {
        const { q, k, v } = good();
        const error = await (async () => call(ca, q, k, v, contexts[i]))().then(
          () => assert.fail(`${what}: no error ${i ? 'in worker mode' : 'locally'}`), (e) => e);
        errors.push(error);
      }
      const [expectedError, actual] = errors;
      assert.ok(expectedError instanceof TypeError || expectedError instanceof RangeError, `${expectedError}`);
      assert.equal(actual.constructor, expectedError.constructor, `${actual.constructor.name}: ${actual.message}`);
      assert.equal(actual.message, expectedError.message);
      // The worker still computes, and correctly.
      const { q, k, v } = good();
      const { output } = await remote.attention(q, k, v, shape);
      assert.ok(maxRelativeError(output, expected) <= 1e-5);
      assert.deepEqual(await contexts[1].module.forward(contexts[1].x, [2, 6, 3]), moduleExpected);
    });
  }
});

describe('bad input to init', () => {
  it('rejects unknown builds, thread counts and options', async () => {
    await assert.rejects(init({ build: 'gpu' }), RangeError);
    await assert.rejects(init({ threads: 0 }), /init options.threads must be an integer >= 1, got 0/);
    await assert.rejects(init({ threads: 17 }), /at most 16, got 17/);
    await assert.rejects(init({ thread: 2 }), /unknown option 'thread'/);
    await assert.rejects(init('single'), TypeError);
    await assert.rejects(init({ gemmKernel: 'relaxed' }),
      { name: 'RangeError', message: "init options.gemmKernel must be one of 'auto', 'simd128', got the string \"relaxed\"" });
  });
});

describe('dispose', () => {
  it('stops the runtime; every later use throws; init gives a fresh one', async () => {
    const ca = await init({ build: 'threads', threads: 2 });
    const { q, k, v } = good();
    const m = new ca.CausalAttention(3, 2, 6, 0);
    ca.dispose();
    ca.dispose(); // harmless
    const disposed = /^this causal-attention runtime has been disposed; call init\(\) for a new one$/;
    assert.throws(() => ca.attention(q, k, v, shape), { name: 'TypeError', message: disposed });
    assert.throws(() => m.forward(new Float32Array(18), [6, 3]), { name: 'TypeError', message: disposed });
    assert.throws(() => new ca.CausalAttention(3, 2, 6, 0), { name: 'TypeError', message: disposed });
    assert.throws(() => ca.rand(3), { name: 'TypeError', message: disposed });
    assert.throws(() => ca.memoryBytes, { name: 'TypeError', message: disposed });
    const again = await init({ build: 'threads', threads: 2 });
    assert.notEqual(again, ca);
    assert.ok(maxRelativeError(again.attention(q, k, v, shape).output, expected) <= 1e-5);
  });
});

describe('the codes at the boundary', () => {
  it('bindings/engine/codes.mjs names the same values as the C++ enums the wasm registers', async () => {
    const mod = await loadModule('single', 1);
    const names = {
      OK: 'kOk', INVALID_SHAPE: 'kInvalidShape', TOO_LARGE: 'kTooLarge',
      INVALID_OPTION: 'kInvalidOption', NULL_POINTER: 'kNullPointer', OUT_OF_MEMORY: 'kOutOfMemory',
    };
    assert.deepEqual(Object.keys(Status), Object.keys(names));
    assert.equal(Object.keys(mod.Status.values).length, Object.keys(names).length);
    for (const [js, cpp] of Object.entries(names)) assert.equal(Status[js], mod.Status[cpp].value, js);
    assert.ok(Object.isFrozen(Status));
    assert.deepEqual([...CAUSAL.values()], [mod.CausalMask.kNone.value, mod.CausalMask.kTopLeft.value,
      mod.CausalMask.kTopLeft.value, mod.CausalMask.kBottomRight.value]);
    assert.deepEqual([...MASK_STRATEGY.values()],
      [mod.MaskStrategy.kNegInf.value, mod.MaskStrategy.kRenormalize.value]);
    assert.deepEqual([...KV_DTYPE.values()],
      [mod.KvDtype.kFloat32.value, mod.KvDtype.kBFloat16.value, mod.KvDtype.kInt8.value]);
    assert.deepEqual([...PRECISION.values()], [mod.Precision.kFloat32.value, mod.Precision.kInt8.value]);
  });

  it('bindings/engine/embind.mjs builds each value object with the fields the wasm registers', async () => {
    const mod = await loadModule('single', 1);
    const defaults = mod.structDefaults();
    const structs = new Structs(defaults);
    const next = () => 64;
    const built = {
      AttentionShape: structs.attentionShape({
        batch: 1, heads: 2, queryLength: 3, keyLength: 3, headDim: 4, valueDim: 4,
      }),
      LayerOptions: structs.layerOptions({ batch: 1, tokens: 3, attention: defaults.AttentionOptions }),
      KVCacheView: structs.cacheView(64, 128, 8, 3, 0),
      AttentionLayerParams: structs.layerParams({ numHeads: 2, headDim: 2 }, 3, next),
      AttentionLayerGrads: structs.layerGrads(next),
      LayerOutputs: structs.layerOutputs(next),
      LayerActivations: structs.layerActivations(next),
    };
    for (const [name, struct] of Object.entries(built)) {
      assert.deepEqual(Object.keys(struct).sort(), Object.keys(defaults[name]).sort(), name);
    }
    // What a caller leaves out is the core's default: no cache, dense layout, no RoPE.
    assert.deepEqual(built.LayerOptions.cache, defaults.KVCacheView);
    assert.equal(built.AttentionShape.kvCapacity, defaults.AttentionShape.kvCapacity);
    assert.deepEqual(built.AttentionLayerParams.ropeScaling, defaults.RopeScaling);
  });

  it('a layer forward without a cache (null or left out) computes what one with the core\'s empty view does', async () => {
    const mod = await loadModule('single', 1);
    const engine = new Engine(mod, { relaxedGemm: false });
    const w = (n, seed) => randomArray(n, seed);
    const call = (cache) => engine.layerForward({
      params: {
        numHeads: 2, headDim: 2, wQuery: w(12, 1), bQuery: null, wKey: w(12, 2), bKey: null,
        wValue: w(12, 3), bValue: null, wOut: w(16, 4), bOut: w(4, 5),
      },
      x: w(9, 6), dIn: 3, returnWeights: true,
      options: { batch: 1, tokens: 3, attention: mod.structDefaults().AttentionOptions, ...cache },
    });
    const empty = call({ cache: mod.structDefaults().KVCacheView });
    assert.equal(empty.weights.length, 2 * 3 * 3);
    assert.deepEqual(call({ cache: null }), empty);
    assert.deepEqual(call({}), empty);
    engine.dispose();
    assert.throws(() => engine.checkAlive(), { name: 'TypeError', message: /disposed/ });
  });

  it('checkStatus: RangeError for the caller\'s sizes and options, Error for a null pointer', async () => {
    const mod = await loadModule('single', 1);
    assert.doesNotThrow(() => checkStatus(mod, 'f', Status.OK));
    assert.throws(() => checkStatus(mod, 'f', Status.INVALID_SHAPE), { name: 'RangeError', message: /^f: invalid shape.* \(status 1\)$/ });
    assert.throws(() => checkStatus(mod, 'f', Status.OUT_OF_MEMORY), { name: 'RangeError', message: /^f: out of memory.* \(status 5\)$/ });
    assert.throws(() => checkStatus(mod, 'f', Status.NULL_POINTER), (e) => e.constructor === Error && /status 4/.test(e.message));
  });

  it('a status from the core reaches the caller as a RangeError naming the call', async () => {
    // The JS checks catch everything first, so call the core with a shape it rejects.
    const mod = await loadModule('single', 1);
    const shape = {
      batch: 1, heads: 0, queryLength: 1, keyLength: 1, headDim: 1, valueDim: 1, kvHeads: 0, kvCapacity: 0,
      kvDtype: 0,
    };
    const options = {
      ...mod.structDefaults().AttentionOptions, causal: 1, maskStrategy: 0, scale: NaN, dropout: 0, training: false,
      seedLo: 0, seedHi: 0,
    };
    const status = mod.attention(shape, options, 0, 0, 0, 0, 0, 0);
    assert.equal(status, Status.INVALID_SHAPE);
    assert.throws(() => checkStatus(mod, 'attention', status), RangeError);
    assert.equal(mod.attention({ ...shape, heads: 1 }, { ...options, dropout: 1 }, 8, 8, 8, 8, 0, 0), Status.INVALID_OPTION);
    assert.equal(mod.attention({ ...shape, heads: 1 }, options, 0, 8, 8, 8, 0, 0), Status.NULL_POINTER);
    // Grouped KV heads that do not divide the query heads, a cache shorter than its keys.
    assert.equal(mod.attention({ ...shape, heads: 4, kvHeads: 3 }, options, 8, 8, 8, 8, 0, 0), Status.INVALID_SHAPE);
    assert.equal(mod.attention({ ...shape, heads: 1, keyLength: 5, kvCapacity: 4 }, options, 8, 8, 8, 8, 0, 0),
      Status.INVALID_SHAPE);
    // A KV storage type the core does not know.
    assert.equal(mod.attention({ ...shape, heads: 1, kvDtype: 3 }, options, 8, 8, 8, 8, 0, 0), Status.INVALID_SHAPE);
    // The backward: kvHeads must divide heads, k and v dense (no cache
    // capacity); every tensor is required (gradSinks, last, only with sinks).
    const g = [8, 8, 8, 8, 8, 8, 8, 8, 8, 0];
    assert.equal(mod.attentionBackward({ ...shape, heads: 2, kvHeads: 3 }, options, ...g), Status.INVALID_SHAPE);
    assert.equal(mod.attentionBackward({ ...shape, heads: 1, kvCapacity: 4 }, options, ...g), Status.INVALID_SHAPE);
    assert.equal(mod.attentionBackward({ ...shape, heads: 1 }, options, 8, 8, 8, 8, 8, 0, 8, 8, 8, 0), Status.NULL_POINTER);
    assert.equal(mod.attentionBackward({ ...shape, heads: 1 }, { ...options, dropout: 1 }, ...g), Status.INVALID_OPTION);
  });
});
