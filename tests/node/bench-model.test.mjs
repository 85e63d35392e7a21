// The model table's arithmetic and graph (bench/lib/model.mjs,
// bench/lib/onnx-gpt.mjs): the parameter counts against the book's, the
// causal FLOPs against a direct count, and the ONNX graph on a small
// GPT config computing the logits of our GPTModel with the same state dict
// under onnxruntime-node (a prefill with an empty past, then one cached
// step fed the presents). No timing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { init } from 'causal-attention';
import { attentionFlops, modelFlops } from '../../bench/lib/model.mjs';
import { GPT2_SMALL, gptMatmulParams, gptModelBytes, gptParams, gptStateDict } from '../../bench/lib/onnx-gpt.mjs';

const maxRelDiff = (a, ref) => {
  let d = 0;
  let m = 0;
  for (let i = 0; i < ref.length; ++i) {
    d = Math.max(d, Math.abs(a[i] - ref[i]));
    m = Math.max(m, Math.abs(ref[i]));
  }
  return d / m;
};

describe('model table (bench/lib/model.mjs, bench/lib/onnx-gpt.mjs)', () => {
  it('counts GPT_CONFIG_124M\'s parameters as the book prints them', () => {
    assert.equal(gptParams({ ...GPT2_SMALL, qkv_bias: false }), 163_009_536);
    assert.equal(gptParams(GPT2_SMALL), 163_009_536 + 12 * 3 * 768);
    assert.equal(gptParams(GPT2_SMALL) - gptMatmulParams(GPT2_SMALL), (50257 + 1024) * 768 + 12 * 4 * 768 + 2 * 768);
  });

  it('counts causal attention FLOPs as Σ keys per query, 4·E each per layer', () => {
    const cfg = { ...GPT2_SMALL, n_layers: 2, emb_dim: 8 };
    assert.equal(attentionFlops(cfg, 3), 2 * 4 * 8 * (1 + 2 + 3));
    assert.equal(attentionFlops(cfg, 1, 9), 2 * 4 * 8 * 10);
    assert.equal(modelFlops(cfg, 2), 2 * gptMatmulParams(cfg) * 2 + attentionFlops(cfg, 2));
  });

  it('the ONNX graph computes GPTModel\'s logits (prefill, then a cached step)', async () => {
    const cfg = { ...GPT2_SMALL, vocab_size: 300, context_length: 32, emb_dim: 64, n_heads: 4, n_layers: 2 };
    const dict = gptStateDict(cfg, 5);
    const ca = await init({ build: 'single' });
    const m = new ca.GPTModel(cfg).eval().loadStateDict(dict);
    const ids = [3, 141, 59, 26, 299, 0, 77];
    const ours = m.forward(Int32Array.from(ids), [1, ids.length], { useCache: true });
    const oursStep = m.forward(Int32Array.of(42), [1, 1], { useCache: true });
    const mod = await import('onnxruntime-node');
    const ort = mod.InferenceSession ? mod : mod.default;
    const session = await ort.InferenceSession.create(gptModelBytes(cfg, dict), { executionProviders: ['cpu'] });
    const H = cfg.n_heads;
    const D = cfg.emb_dim / H;
    const feeds = (tokens, start, past) => {
      const f = {
        input_ids: new ort.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]),
        position_ids: new ort.Tensor('int64', BigInt64Array.from(tokens, (_, i) => BigInt(start + i)), [1, tokens.length]),
      };
      for (let l = 0; l < cfg.n_layers; ++l) {
        for (const kv of ['key', 'value']) {
          f[`past_${kv}_${l}`] = past?.[`present_${kv}_${l}`] ?? new ort.Tensor('float32', new Float32Array(0), [1, H, 0, D]);
        }
      }
      return f;
    };
    const r = await session.run(feeds(ids, 0));
    assert.equal(r.logits.data.length, ids.length * cfg.vocab_size);
    assert.ok(maxRelDiff(r.logits.data, ours) <= 1e-5, `prefill: ${maxRelDiff(r.logits.data, ours)}`);
    const r2 = await session.run(feeds([42], ids.length, r));
    assert.ok(maxRelDiff(r2.logits.data, oursStep) <= 1e-5, `step: ${maxRelDiff(r2.logits.data, oursStep)}`);
    await session.release();
    ca.dispose();
  });
});
