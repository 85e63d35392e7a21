// One attention layer of the book's modules (CausalAttention,
// MultiHeadAttentionWrapper, MultiHeadAttention, SelfAttention_v2, and the
// Llama chapter's GroupedQueryAttention with RoPE) on pointers, forward and
// backward, the forward optionally appending to and attending over a KV
// cache. The modules themselves, which own their parameters, live in JS
// (bindings/nn/modules.mjs); this is the computation they call.
//
// Layouts (row-major float32): x [batch, tokens, d_in]; a projection weight
// is [out_features, in_features] and its bias [out_features], as nn.Linear;
// y [batch, tokens, d_model] with d_model = num_heads · head_dim and the
// heads concatenated on the last axis; per-head tensors [batch, heads,
// tokens, ·]. With grouped-query attention the K/V projections produce
// num_kv_heads heads: w_key/w_value [num_kv_heads · head_dim, d_in].

#ifndef CAUSAL_ATTENTION_SRC_LAYER_H_
#define CAUSAL_ATTENTION_SRC_LAYER_H_

#include <stdint.h>

#include "src/attention/attention.h"
#include "src/model/rope.h"
#include "src/base/status.h"

namespace causal_attention {

// Parameters of one attention layer (not owned). The Q/K/V projections
// produce all heads at once: w_* is [num_heads · head_dim, d_in] (the heads'
// rows stacked), b_* is [num_heads · head_dim] or null. w_out/b_out is the
// output projection [d_model, d_model] / [d_model]; null for none.
struct AttentionLayerParams {
  int64_t d_in = 1;
  int64_t num_heads = 1;
  int64_t head_dim = 1;
  int64_t num_kv_heads = 0;  // 0 means num_heads; else divides num_heads
  // Rotary position embedding on queries and keys after the head split
  // (src/model/rope.h) with this theta base; 0 means none. Needs an even head_dim.
  float rope_base = 0.0f;
  // Llama 3.1's frequency adjustment of that RoPE (factor 0: none).
  RopeScaling rope_scaling;
  const float* w_query = nullptr;
  const float* b_query = nullptr;
  const float* w_key = nullptr;
  const float* b_key = nullptr;
  const float* w_value = nullptr;
  const float* b_value = nullptr;
  const float* w_out = nullptr;
  const float* b_out = nullptr;
  // How w_query, w_key, w_value and w_out are stored (all four alike):
  // float32, or rows of bfloat16 / int8 values as src/gemm/stored_linear.h
  // says (the pointers then point at StoredWeightsBytes bytes, not floats).
  // Inference only: the backward refuses anything but float32.
  KvDtype weights_dtype = KvDtype::kFloat32;
  // [num_heads] learned attention-sink logits (gpt-oss) or null: passed to
  // the attention call as its options' sinks (which the layer's options
  // must leave null).
  const float* sinks = nullptr;
};

// A KV cache the layer appends to (not owned), in Attention's cache layout:
// keys [batch, num_kv_heads, capacity, head_dim], values the same; the first
// `length` rows of each KV head hold earlier calls' keys and values. A
// forward writes its own at rows [length, length + tokens) and attends over
// all length + tokens; its RoPE positions start at `start + length`. The
// caller owns the length (and advances it after a successful call). A
// sliding-window cache that dropped its oldest rows says how many in
// `start` (row 0 holds position `start`): attention reads only relative
// positions, so only RoPE needs it. keys == null: no cache. A bfloat16 or
// int8 cache (dtype) holds its rows as kv_storage.h says (KvRowBytes apart,
// keys and values alike); the forward rounds the new rows as it stores
// them, and attention reads them where they are (raw scores,
// outputs.scores, need a float32 cache).
struct KVCacheView {
  float* keys = nullptr;
  float* values = nullptr;
  int64_t capacity = 0;
  int64_t length = 0;
  int64_t start = 0;
  KvDtype dtype = KvDtype::kFloat32;
};

// The input's size and the attention options, passed on to Attention as
// they are (the scale is usually left empty: 1/sqrt(head_dim)). With a
// cache, causal = kBottomRight continues the positions (the book's
// ch04/03 KV cache: the new tokens come after the cached ones).
struct LayerOptions {
  int64_t batch = 1;
  int64_t tokens = 1;
  AttentionOptions attention;
  KVCacheView cache;
  // Per-head factors on the attention output before the head merge (so
  // before the output projection), as Hugging Face's head_mask: 0 knocks a
  // head out, 1 leaves it. [head_mask_batch, num_heads] row-major, with
  // head_mask_batch 1 (the same for every sequence) or batch; null: none.
  // The backward scales each head's gradient by the same factor (the mask
  // itself gets none). The weights and scores outputs are not scaled.
  const float* head_mask = nullptr;
  int64_t head_mask_batch = 1;
};

// Where a forward writes. y is required; every other output is optional
// (null: not computed or not kept).
// With a cache, "keys" below (the weights' and scores' last axis) are all
// length + tokens cached keys.
struct LayerOutputs {
  float* y = nullptr;        // [batch, tokens, d_model]
  float* weights = nullptr;  // [batch, heads, tokens, keys], post-dropout
  float* scores = nullptr;   // [batch, heads, tokens, keys], raw Q·Kᵀ
                             // (before scaling and masking)
  float* queries = nullptr;  // [batch, heads, tokens, head_dim]: this call's
  float* keys = nullptr;     // Q, K, V after the projection, the head split
  float* values = nullptr;   // and RoPE; keys/values [batch, num_kv_heads,
                             // tokens, head_dim]
  // What a backward needs besides Q, K, V: the attention output before the
  // head merge [batch, heads, tokens, head_dim] and each row's log-sum-exp
  // [batch, heads, tokens] (see AttentionWithLogSumExp).
  float* context = nullptr;
  float* log_sum_exp = nullptr;
};

// One forward pass: project, RoPE, split heads (K/V into the cache, if
// any), scaled dot-product attention, merge heads, output projection. Accuracy:
// within 1e-5·(1 + |ref|) of AttentionLayerReference on the tested shapes;
// bit-identical for any thread count.
Status AttentionLayerForward(const AttentionLayerParams& params,
                             const LayerOptions& options, const float* x,
                             const LayerOutputs& outputs);
// The same with LinearReference and AttentionReference.
Status AttentionLayerReference(const AttentionLayerParams& params,
                               const LayerOptions& options, const float* x,
                               const LayerOutputs& outputs);

// What the backward reads of a training forward: the LayerOutputs it kept
// (queries, keys, values, context, log_sum_exp), all required.
struct LayerActivations {
  const float* queries = nullptr;
  const float* keys = nullptr;
  const float* values = nullptr;
  const float* context = nullptr;
  const float* log_sum_exp = nullptr;
};

// The parameters' gradients, laid out as AttentionLayerParams and
// accumulated into (+=), as PyTorch's .grad. Each is required exactly when
// its parameter is given (null with a null bias or output projection).
struct AttentionLayerGrads {
  float* w_query = nullptr;
  float* b_query = nullptr;
  float* w_key = nullptr;
  float* b_key = nullptr;
  float* w_value = nullptr;
  float* b_value = nullptr;
  float* w_out = nullptr;
  float* b_out = nullptr;
  float* sinks = nullptr;  // [num_heads]: required when params.sinks is set
};

// The backward pass of AttentionLayerForward, given dL/dy (grad_y [batch,
// tokens, d_model]), the same params, options (the forward's dropout seed
// included), x and what the forward kept:
//   1. output projection: dW_out += dyᵀ·ctx, db_out += Σ dy, dctx = dy·W_out
//   2. split dctx into heads, AttentionBackward -> dQ, dK, dV
//   3. merge each, Q/K/V projections: dW += dᵀ·x, db += Σ d,
//      grad_x = dQ·W_query + dK·W_key + dV·W_value (overwritten).
// On LinearBackward (MatMul) and AttentionBackward: bit-identical for any
// thread count; within 2e-5·(1 + |ref|) of AttentionLayerBackwardReference
// on the tested shapes.
Status AttentionLayerBackward(const AttentionLayerParams& params,
                              const LayerOptions& options, const float* x,
                              const LayerActivations& saved,
                              const float* grad_y, float* grad_x,
                              const AttentionLayerGrads& grads);
// The same with LinearBackwardReference and AttentionBackwardReference.
Status AttentionLayerBackwardReference(const AttentionLayerParams& params,
                                       const LayerOptions& options,
                                       const float* x,
                                       const LayerActivations& saved,
                                       const float* grad_y, float* grad_x,
                                       const AttentionLayerGrads& grads);

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_LAYER_H_
