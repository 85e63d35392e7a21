// One attention layer of the book's modules (CausalAttention,
// MultiHeadAttentionWrapper, MultiHeadAttention, SelfAttention_v2) on
// pointers. The modules themselves, which own their parameters, live in JS
// (bindings/modules.mjs); this is the computation they call.
//
// Layouts (row-major float32): x [batch, tokens, d_in]; a projection weight
// is [out_features, in_features] and its bias [out_features], as nn.Linear;
// y [batch, tokens, d_model] with d_model = num_heads · head_dim and the
// heads concatenated on the last axis; per-head tensors [batch, heads,
// tokens, ·].

#ifndef CAUSAL_ATTENTION_SRC_LAYER_H_
#define CAUSAL_ATTENTION_SRC_LAYER_H_

#include <stdint.h>

#include "src/attention.h"
#include "src/status.h"

namespace causal_attention {

// Parameters of one attention layer (not owned). The Q/K/V projections
// produce all heads at once: w_* is [num_heads · head_dim, d_in] (the heads'
// rows stacked), b_* is [num_heads · head_dim] or null. w_out/b_out is the
// output projection [d_model, d_model] / [d_model]; null for none.
struct AttentionLayerParams {
  int64_t d_in = 1;
  int64_t num_heads = 1;
  int64_t head_dim = 1;
  const float* w_query = nullptr;
  const float* b_query = nullptr;
  const float* w_key = nullptr;
  const float* b_key = nullptr;
  const float* w_value = nullptr;
  const float* b_value = nullptr;
  const float* w_out = nullptr;
  const float* b_out = nullptr;
};

// The input's size and the attention options, passed on to Attention as
// they are (the scale is usually left empty: 1/sqrt(head_dim)).
struct LayerOptions {
  int64_t batch = 1;
  int64_t tokens = 1;
  AttentionOptions attention;
};

// Where a forward writes. y is required; every other output is optional
// (null: not computed or not kept).
struct LayerOutputs {
  float* y = nullptr;        // [batch, tokens, d_model]
  float* weights = nullptr;  // [batch, heads, tokens, tokens], post-dropout
  float* scores = nullptr;   // [batch, heads, tokens, tokens], raw Q·Kᵀ
                             // (before scaling and masking)
  float* queries = nullptr;  // [batch, heads, tokens, head_dim]: Q, K, V
  float* keys = nullptr;     // after the projection and the head split
  float* values = nullptr;
};

// One forward pass: project, split heads, scaled dot-product attention,
// merge heads, output projection. Accuracy: within 1e-5·(1 + |ref|) of
// AttentionLayerReference on the tested shapes; bit-identical for any thread
// count.
Status AttentionLayerForward(const AttentionLayerParams& params,
                             const LayerOptions& options, const float* x,
                             const LayerOutputs& outputs);
// The same with LinearReference and AttentionReference.
Status AttentionLayerReference(const AttentionLayerParams& params,
                               const LayerOptions& options, const float* x,
                               const LayerOutputs& outputs);

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_LAYER_H_
