// One attention layer (the book's modules) on pointers.
//
// Shapes: x [B, T, d_in] -> y [B, T, d_model], d_model = H · hd.
// Passes:
//   1. Q, K, V = x · Wᵀ + b, each [B, T, H·hd], split into [B, H, T, hd]
//   2. (optional) raw scores Q·Kᵀ per head, for the demo's first panel
//   3. scaled dot-product attention with the causal mask -> ctx [B, H, T, hd]
//   4. merge heads -> [B, T, H·hd], then the output projection (if any)

#include <stdlib.h>
#include <string.h>

#include <memory>

#include "src/causal_attention.h"
#include "src/internal.h"
#include "src/modules.h"

namespace causal_attention {
namespace {

using LinearFn = Status (*)(const float*, int64_t, int64_t, int64_t,
                            const float*, const float*, float*);
using AttentionFn = Status (*)(const AttentionShape&, const AttentionOptions&,
                               const float*, const float*, const float*, float*,
                               float*);

struct FreeDeleter {
  void operator()(float* p) const { free(p); }
};

// [B, T, H, hd] -> [B, H, T, hd] (split) or back (merge).
void Permute(const float* src, size_t b, size_t t, size_t h, size_t hd,
             bool split, float* dst) {
  for (size_t ib = 0; ib < b; ++ib) {
    for (size_t it = 0; it < t; ++it) {
      for (size_t ih = 0; ih < h; ++ih) {
        const size_t merged = ((ib * t + it) * h + ih) * hd;
        const size_t heads = ((ib * h + ih) * t + it) * hd;
        if (split) {
          memcpy(dst + heads, src + merged, hd * sizeof(float));
        } else {
          memcpy(dst + merged, src + heads, hd * sizeof(float));
        }
      }
    }
  }
}

Status LayerForward(LinearFn linear, AttentionFn attention,
                    const AttentionLayerParams& p, const LayerOptions& o,
                    const float* x, float* y, float* weights, float* scores) {
  if (p.d_in < 1 || p.num_heads < 1 || p.head_dim < 1 || o.batch < 1 ||
      o.tokens < 1) {
    return Status::kInvalidShape;
  }
  if (!x || !y || !p.w_query || !p.w_key || !p.w_value) {
    return Status::kNullPointer;
  }
  // Validates the attention shape and options (and all their sizes).
  AttentionShape shape{o.batch,  p.num_heads, o.tokens,
                       o.tokens, p.head_dim,  p.head_dim};
  AttentionOptions ao;
  ao.causal = o.causal;
  ao.mask_strategy = o.mask_strategy;
  ao.dropout = o.dropout;
  ao.training = o.training;
  ao.seed = o.seed;
  Status st = ValidateAttention(shape, ao);
  if (st != Status::kOk) return st;

  const size_t b = static_cast<size_t>(o.batch);
  const size_t t = static_cast<size_t>(o.tokens);
  const size_t h = static_cast<size_t>(p.num_heads);
  const size_t hd = static_cast<size_t>(p.head_dim);
  const int64_t d_model = p.num_heads * p.head_dim;
  size_t n, total;
  if (!internal::MulSize(b * t, static_cast<size_t>(d_model), &n) ||
      !internal::MulSize(n, 5 * sizeof(float), &total)) {
    return Status::kTooLarge;
  }
  std::unique_ptr<float, FreeDeleter> buffer(
      static_cast<float*>(malloc(total)));
  if (!buffer) return Status::kOutOfMemory;
  float* proj = buffer.get();
  float* q = proj + n;
  float* k = q + n;
  float* v = k + n;
  float* ctx = v + n;
  const int64_t rows = o.batch * o.tokens;

  // 1. Projections, split into heads.
  const float* w[3] = {p.w_query, p.w_key, p.w_value};
  const float* bias[3] = {p.b_query, p.b_key, p.b_value};
  float* heads[3] = {q, k, v};
  for (int i = 0; i < 3; ++i) {
    st = linear(x, rows, p.d_in, d_model, w[i], bias[i], proj);
    if (st != Status::kOk) return st;
    Permute(proj, b, t, h, hd, /*split=*/true, heads[i]);
  }
  // 2. Raw scores per head: Q·Kᵀ is a Linear with K as the weight.
  if (scores) {
    for (size_t bh = 0; bh < b * h; ++bh) {
      st = linear(q + bh * t * hd, o.tokens, p.head_dim, o.tokens,
                  k + bh * t * hd, nullptr, scores + bh * t * t);
      if (st != Status::kOk) return st;
    }
  }
  // 3. Attention.
  st = attention(shape, ao, q, k, v, ctx, weights);
  if (st != Status::kOk) return st;
  // 4. Merge heads, output projection.
  Permute(ctx, b, t, h, hd, /*split=*/false, proj);
  if (p.w_out) return linear(proj, rows, d_model, d_model, p.w_out, p.b_out, y);
  memcpy(y, proj, n * sizeof(float));
  return Status::kOk;
}

}  // namespace

Status AttentionLayerForward(const AttentionLayerParams& params,
                             const LayerOptions& options, const float* x,
                             float* y, float* weights, float* scores) {
  return LayerForward(Linear, Attention, params, options, x, y, weights,
                      scores);
}

Status AttentionLayerReference(const AttentionLayerParams& params,
                               const LayerOptions& options, const float* x,
                               float* y, float* weights, float* scores) {
  return LayerForward(LinearReference, AttentionReference, params, options, x,
                      y, weights, scores);
}

}  // namespace causal_attention
