// One attention layer (the book's modules) on pointers.
//
// Shapes: x [B, T, d_in] -> y [B, T, d_model], d_model = H · hd.
// Passes:
//   1. Q, K, V = x · Wᵀ + b, each [B, T, H·hd], split into [B, H, T, hd]
//      (into the caller's queries/keys/values when given)
//   2. (optional) raw scores Q·Kᵀ per head, for the demo's first panel
//   3. scaled dot-product attention with the causal mask -> ctx [B, H, T, hd]
//   4. merge heads -> [B, T, H·hd], then the output projection (if any)

#include "src/layer.h"

#include <stdlib.h>
#include <string.h>

#include <memory>

#include "src/attention.h"
#include "src/internal.h"
#include "src/linear.h"

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
                    const float* x, const LayerOutputs& out) {
  if (p.d_in < 1 || p.num_heads < 1 || p.head_dim < 1 || o.batch < 1 ||
      o.tokens < 1) {
    return Status::kInvalidShape;
  }
  if (!x || !out.y || !p.w_query || !p.w_key || !p.w_value) {
    return Status::kNullPointer;
  }
  // Validates the attention shape and options (and all their sizes).
  const AttentionShape shape{o.batch,  p.num_heads, o.tokens,
                             o.tokens, p.head_dim,  p.head_dim};
  Status st = ValidateAttention(shape, o.attention);
  if (st != Status::kOk) return st;

  const size_t b = static_cast<size_t>(o.batch);
  const size_t t = static_cast<size_t>(o.tokens);
  const size_t h = static_cast<size_t>(p.num_heads);
  const size_t hd = static_cast<size_t>(p.head_dim);
  const int64_t d_model = p.num_heads * p.head_dim;
  // Scratch: the projection before the split, the attention output, and
  // Q/K/V unless the caller keeps them.
  float* const kept[3] = {out.queries, out.keys, out.values};
  size_t buffers = 2;
  for (float* k : kept) buffers += k ? 0 : 1;
  size_t n, total;
  if (!internal::MulSize(b * t, static_cast<size_t>(d_model), &n) ||
      !internal::MulSize(n, buffers * sizeof(float), &total)) {
    return Status::kTooLarge;
  }
  std::unique_ptr<float, FreeDeleter> buffer(
      static_cast<float*>(malloc(total)));
  if (!buffer) return Status::kOutOfMemory;
  float* next = buffer.get();
  float* proj = next;
  float* ctx = (next += n);
  float* heads[3];
  for (int i = 0; i < 3; ++i) heads[i] = kept[i] ? kept[i] : (next += n);
  const float *q = heads[0], *k = heads[1], *v = heads[2];
  const int64_t rows = o.batch * o.tokens;

  // 1. Projections, split into heads.
  const float* w[3] = {p.w_query, p.w_key, p.w_value};
  const float* bias[3] = {p.b_query, p.b_key, p.b_value};
  for (int i = 0; i < 3; ++i) {
    st = linear(x, rows, p.d_in, d_model, w[i], bias[i], proj);
    if (st != Status::kOk) return st;
    Permute(proj, b, t, h, hd, /*split=*/true, heads[i]);
  }
  // 2. Raw scores per head: Q·Kᵀ is a Linear with K as the weight.
  if (out.scores) {
    for (size_t bh = 0; bh < b * h; ++bh) {
      st = linear(q + bh * t * hd, o.tokens, p.head_dim, o.tokens,
                  k + bh * t * hd, nullptr, out.scores + bh * t * t);
      if (st != Status::kOk) return st;
    }
  }
  // 3. Attention.
  st = attention(shape, o.attention, q, k, v, ctx, out.weights);
  if (st != Status::kOk) return st;
  // 4. Merge heads, output projection.
  if (!p.w_out) {
    Permute(ctx, b, t, h, hd, /*split=*/false, out.y);
    return Status::kOk;
  }
  Permute(ctx, b, t, h, hd, /*split=*/false, proj);
  return linear(proj, rows, d_model, d_model, p.w_out, p.b_out, out.y);
}

}  // namespace

Status AttentionLayerForward(const AttentionLayerParams& params,
                             const LayerOptions& options, const float* x,
                             const LayerOutputs& outputs) {
  return LayerForward(Linear, Attention, params, options, x, outputs);
}

Status AttentionLayerReference(const AttentionLayerParams& params,
                               const LayerOptions& options, const float* x,
                               const LayerOutputs& outputs) {
  return LayerForward(LinearReference, AttentionReference, params, options, x,
                      outputs);
}

}  // namespace causal_attention
