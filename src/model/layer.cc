// One attention layer (the book's modules) on pointers.
//
// Shapes: x [B, T, d_in] -> y [B, T, d_model], d_model = H · hd; the K/V
// projections have Hkv heads (Hkv = H unless grouped-query attention).
// Passes:
//   1. Q, K, V = x · Wᵀ + b, each [B, T, heads·hd]; RoPE on Q and K (token
//      positions start at the cache length); split into [B, heads, T, hd]
//      (into the caller's queries/keys/values when given, K and V into the
//      cache rows [length, length + T) when there is a cache)
//   2. (optional) raw scores Q·Kᵀ per head, for the demo's first panel
//   3. scaled dot-product attention with the causal mask -> ctx [B, H, T, hd]
//      (over the cached keys, without repeating KV heads)
//   4. merge heads -> [B, T, H·hd], each head times its head-mask factor
//      (if any), then the output projection (if any)
// Backward passes (the forward's in reverse, see layer.h; no cache):
//   4. output projection backward (its input the merged, scaled context),
//      dctx times the head mask, split into heads
//   3. attention backward -> dQ [B, H, T, hd], dK, dV [B, Hkv, T, hd]
//   1. merge each, RoPE transposed on dQ and dK, projection backward;
//      grad_x summed over Q, K, V

#include "src/model/layer.h"

#include <stdlib.h>

#include <memory>
#include <vector>

#include "src/attention/attention.h"
#include "src/attention/attention_backward.h"
#include "src/attention/internal.h"
#include "src/gemm/linear.h"
#include "src/gemm/stored_linear.h"
#include "src/model/rope.h"
#include "src/base/size_math.h"

namespace causal_attention {
namespace {

using LinearFn = Status (*)(const float*, int64_t, int64_t, int64_t,
                            const float*, const float*, float*);
using StoredLinearFn = Status (*)(const float*, int64_t, int64_t, int64_t,
                                  KvDtype, const void*, const float*, float*);
using AttentionFn = Status (*)(const AttentionShape&, const AttentionOptions&,
                               const float*, const float*, const float*, float*,
                               float*, float*);
using LinearBackwardFn = Status (*)(const float*, int64_t, int64_t, int64_t,
                                    const float*, const float*, float*, float*,
                                    float*);
using AttentionBackwardFn = Status (*)(const AttentionShape&,
                                       const AttentionOptions&, const float*,
                                       const float*, const float*, const float*,
                                       const float*, const float*, float*,
                                       float*, float*, float*);

struct FreeDeleter {
  void operator()(float* p) const { free(p); }
};

// dst[0, n) = src[0, n), four floats per step: a small model's head rows
// are a few dozen floats, where a memcpy call per row costs more than the
// copy in wasm. Written as four loads, then four stores, so that
// the compiler turns it into vector copies rather than back into memcpy.
inline void CopyRow(const float* __restrict src, size_t n,
                    float* __restrict dst) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float a0 = src[i], a1 = src[i + 1], a2 = src[i + 2], a3 = src[i + 3];
    dst[i] = a0;
    dst[i + 1] = a1;
    dst[i + 2] = a2;
    dst[i + 3] = a3;
  }
  for (; i < n; ++i) dst[i] = src[i];
}

// [B, T, H, hd] -> [B, H, T, hd] (split), or back (merge).
void Permute(const float* src, size_t b, size_t t, size_t h, size_t hd,
             bool split, float* dst) {
  for (size_t ib = 0; ib < b; ++ib) {
    for (size_t it = 0; it < t; ++it) {
      for (size_t ih = 0; ih < h; ++ih) {
        const size_t merged = ((ib * t + it) * h + ih) * hd;
        const size_t heads = ((ib * h + ih) * t + it) * hd;
        if (split) {
          CopyRow(src + merged, hd, dst + heads);
        } else {
          CopyRow(src + heads, hd, dst + merged);
        }
      }
    }
  }
}

// [B, T, H, hd] -> rows [row0, row0 + T) of the cache's [B, H, rows, ·]
// stored rows (kv_storage.h), rounded to its dtype.
void SplitIntoCache(const float* src, size_t b, size_t t, size_t h, size_t hd,
                    KvDtype dtype, float* dst, size_t rows, size_t row0) {
  const size_t row_bytes = KvRowBytes(dtype, hd);
  uint8_t* bytes = reinterpret_cast<uint8_t*>(dst);
  for (size_t ib = 0; ib < b; ++ib) {
    for (size_t it = 0; it < t; ++it) {
      for (size_t ih = 0; ih < h; ++ih) {
        const size_t merged = ((ib * t + it) * h + ih) * hd;
        const size_t row = (ib * h + ih) * rows + row0 + it;
        StoreKvRows(dtype, src + merged, 1, hd, bytes + row * row_bytes);
      }
    }
  }
}

// Multiplies each head's rows of a merged [B, T, H, hd] tensor by its
// factor of options.head_mask ([1 or B, H]); nothing without one.
void ScaleHeads(const LayerOptions& o, size_t h, size_t hd, float* merged) {
  if (!o.head_mask) return;
  const size_t b = static_cast<size_t>(o.batch);
  const size_t t = static_cast<size_t>(o.tokens);
  for (size_t ib = 0; ib < b; ++ib) {
    const float* factors = o.head_mask + (o.head_mask_batch == 1 ? 0 : ib) * h;
    for (size_t it = 0; it < t; ++it) {
      float* row = merged + (ib * t + it) * h * hd;
      for (size_t ih = 0; ih < h; ++ih) {
        for (size_t e = 0; e < hd; ++e) row[ih * hd + e] *= factors[ih];
      }
    }
  }
}

// The Q, K and V projections' head counts and output widths (K and V have
// the KV heads), for the forward and the backward alike, from the attention
// shape CheckLayer built (sizes validated: no overflow).
struct Projections {
  size_t heads[3];
  int64_t widths[3];  // heads[i] · head_dim; widths[0] is d_model

  explicit Projections(const AttentionShape& s) {
    const int64_t kv_heads = internal::KvHeads(s);
    const int64_t h[3] = {s.heads, kv_heads, kv_heads};
    for (int i = 0; i < 3; ++i) {
      heads[i] = static_cast<size_t>(h[i]);
      widths[i] = h[i] * s.head_dim;
    }
  }
};

// The checks the forward and the backward share, in one order: the sizes,
// the KV cache (a backward's training step sees its own tokens: none),
// RoPE's settings, then the attention shape (KV heads dividing heads, every
// size fitting) and options. Builds *shape: the call's keys are the cache's
// past ones and the new tokens. Pointers are each caller's own check.
Status CheckLayer(const AttentionLayerParams& p, const LayerOptions& o,
                  bool backward, AttentionShape* shape) {
  if (p.d_in < 1 || p.num_heads < 1 || p.head_dim < 1 || o.batch < 1 ||
      o.tokens < 1 || p.num_kv_heads < 0) {
    return Status::kInvalidShape;
  }
  const KVCacheView& c = o.cache;
  if (backward && (c.keys || c.values)) return Status::kInvalidOption;
  if (backward && p.weights_dtype != KvDtype::kFloat32) {
    return internal::Refuse(Status::kInvalidOption,
                            "params.weights_dtype: the backward needs float32 "
                            "weights (stored ones are for inference)");
  }
  if (c.keys &&
      (c.length < 0 || c.start < 0 || c.capacity < 1 ||
       c.length > c.capacity - o.tokens)) {
    return Status::kInvalidShape;
  }
  if (o.head_mask && o.head_mask_batch != 1 && o.head_mask_batch != o.batch) {
    return internal::Refuse(Status::kInvalidShape,
                            "layer options: head_mask_batch must be 1 or "
                            "batch");
  }
  if (p.rope_base != 0.0f) {
    const Status st = ValidateRope(p.rope_base, p.head_dim, 0, p.rope_scaling);
    if (st != Status::kOk) return st;
  }
  const int64_t past = c.keys ? c.length : 0;
  *shape = AttentionShape{o.batch,
                          p.num_heads,
                          o.tokens,
                          past + o.tokens,
                          p.head_dim,
                          p.head_dim,
                          internal::ResolveKvHeads(p.num_kv_heads, p.num_heads),
                          c.keys ? c.capacity : 0,
                          c.keys ? c.dtype : KvDtype::kFloat32};
  // The layer splits heads itself (layout bhsd); its sinks are a parameter.
  if (o.attention.layout != Layout::kBHSD || o.attention.sinks) {
    return internal::Refuse(Status::kInvalidOption,
                            "layer options: attention.layout must be bhsd and "
                            "attention.sinks null (use params.sinks)");
  }
  return ValidateAttention(*shape, o.attention);
}

// The layer's attention options: the caller's, with the params' sinks.
AttentionOptions LayerAttentionOptions(const AttentionLayerParams& p,
                                       const LayerOptions& o) {
  AttentionOptions a = o.attention;
  a.sinks = p.sinks;
  return a;
}

Status LayerForward(LinearFn linear, StoredLinearFn project,
                    AttentionFn attention,
                    const AttentionLayerParams& p, const LayerOptions& o,
                    const float* x, const LayerOutputs& out) {
  AttentionShape shape;
  Status st = CheckLayer(p, o, /*backward=*/false, &shape);
  if (st != Status::kOk) return st;
  // The [B, H, T, Tk] tensors exist only when asked for: the weights, the
  // raw scores.
  if ((out.weights || out.scores) &&
      (st = ValidateAttentionWeights(shape)) != Status::kOk) {
    return st;
  }
  const KVCacheView& cache = o.cache;
  if (out.scores && shape.kv_dtype != KvDtype::kFloat32) {
    return internal::Refuse(Status::kInvalidOption,
                            "outputs.scores: needs a float32 cache");
  }
  if (!x || !out.y || !p.w_query || !p.w_key || !p.w_value ||
      (cache.keys != nullptr) != (cache.values != nullptr)) {
    return Status::kNullPointer;
  }
  const int64_t past = shape.key_len - shape.query_len;
  const Projections projections(shape);
  const size_t* heads = projections.heads;
  const int64_t* widths = projections.widths;
  const int64_t d_model = widths[0];

  const size_t b = static_cast<size_t>(o.batch);
  const size_t t = static_cast<size_t>(o.tokens);
  const size_t hd = static_cast<size_t>(p.head_dim);
  // Scratch: the projection before the split, the attention output, and
  // Q/K/V unless the caller keeps them (K, V: or the cache holds them).
  float* const kept[3] = {out.queries, out.keys, out.values};
  float* const cached[3] = {nullptr, cache.keys, cache.values};
  size_t buffers = out.context ? 1 : 2;
  for (int i = 0; i < 3; ++i) buffers += kept[i] || cached[i] ? 0 : 1;
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
  float* ctx = out.context ? out.context : (next += n);
  float* split[3];
  for (int i = 0; i < 3; ++i) {
    split[i] = kept[i] ? kept[i] : cached[i] ? nullptr : (next += n);
  }
  const float* q = split[0];
  const float* k = cache.keys ? cache.keys : split[1];
  const float* v = cache.keys ? cache.values : split[2];
  const int64_t rows = o.batch * o.tokens;

  // 1. Projections, RoPE, split into heads (and into the cache).
  const float* w[3] = {p.w_query, p.w_key, p.w_value};
  const float* bias[3] = {p.b_query, p.b_key, p.b_value};
  for (int i = 0; i < 3; ++i) {
    st = project(x, rows, p.d_in, widths[i], p.weights_dtype, w[i], bias[i],
                 proj);
    if (st != Status::kOk) return st;
    if (p.rope_base != 0.0f && i < 2) {
      st = ApplyRope(p.rope_base, o.batch, o.tokens,
                     static_cast<int64_t>(heads[i]), p.head_dim,
                     past + (cache.keys ? cache.start : 0), proj,
                     p.rope_scaling);
      if (st != Status::kOk) return st;
    }
    if (split[i]) Permute(proj, b, t, heads[i], hd, /*split=*/true, split[i]);
    if (cached[i]) {
      SplitIntoCache(proj, b, t, heads[i], hd, cache.dtype, cached[i],
                     static_cast<size_t>(cache.capacity),
                     static_cast<size_t>(past));
    }
  }
  // 2. Raw scores per head: Q·Kᵀ is a Linear with the head's keys (all
  // cached ones) as the weight.
  const size_t tk = static_cast<size_t>(shape.key_len);
  const size_t kv_stride = cache.keys ? static_cast<size_t>(cache.capacity) : t;
  if (out.scores) {
    for (size_t bh = 0; bh < b * heads[0]; ++bh) {
      const size_t kv = internal::KvHeadOf(shape, bh);
      st = linear(q + bh * t * hd, o.tokens, p.head_dim, shape.key_len,
                  k + kv * kv_stride * hd, nullptr, out.scores + bh * t * tk);
      if (st != Status::kOk) return st;
    }
  }
  // 3. Attention.
  st =
      attention(shape, LayerAttentionOptions(p, o), q, k, v, ctx, out.weights,
                out.log_sum_exp);
  if (st != Status::kOk) return st;
  // 4. Merge heads, the head mask, output projection. ctx (kept for the
  // backward when out.context) stays unscaled: the attention backward
  // needs the attention's own output.
  float* merged = p.w_out ? proj : out.y;
  Permute(ctx, b, t, heads[0], hd, /*split=*/false, merged);
  ScaleHeads(o, heads[0], hd, merged);
  if (!p.w_out) return Status::kOk;
  return project(proj, rows, d_model, d_model, p.weights_dtype, p.w_out,
                 p.b_out, out.y);
}

Status LayerBackward(LinearBackwardFn linear_backward,
                     AttentionBackwardFn attention_backward,
                     const AttentionLayerParams& p, const LayerOptions& o,
                     const float* x, const LayerActivations& saved,
                     const float* grad_y, float* grad_x,
                     const AttentionLayerGrads& g) {
  AttentionShape shape;
  Status st = CheckLayer(p, o, /*backward=*/true, &shape);
  if (st != Status::kOk) return st;
  const Projections projections(shape);
  const size_t* heads = projections.heads;
  const int64_t* widths = projections.widths;
  const int64_t d_model = widths[0];
  // Every parameter needs its gradient, and only those.
  const bool grads_match = !p.b_query == !g.b_query && !p.b_key == !g.b_key &&
                           !p.b_value == !g.b_value && !p.w_out == !g.w_out &&
                           !p.b_out == !g.b_out && (p.w_out || !p.b_out);
  if (!x || !grad_y || !grad_x || !p.w_query || !p.w_key || !p.w_value ||
      !g.w_query || !g.w_key || !g.w_value || !saved.queries || !saved.keys ||
      !saved.values || !saved.context || !saved.log_sum_exp || !grads_match) {
    return Status::kNullPointer;
  }

  const size_t b = static_cast<size_t>(o.batch);
  const size_t t = static_cast<size_t>(o.tokens);
  const size_t hd = static_cast<size_t>(p.head_dim);
  const size_t d_in = static_cast<size_t>(p.d_in);
  const int64_t rows = o.batch * o.tokens;
  // Scratch: a merged [B, T, d_model] buffer, the heads' dO and dQ, dK, dV
  // (K, V: kv heads only) and one grad_x term.
  size_t n, nkv, nx, total;
  if (!internal::MulSize(b * t, static_cast<size_t>(d_model), &n) ||
      !internal::MulSize(b * t, static_cast<size_t>(widths[1]), &nkv) ||
      !internal::MulSize(b * t, d_in, &nx) || n > SIZE_MAX / 8 ||
      nx > SIZE_MAX / 8 ||
      !internal::MulSize(3 * n + 2 * nkv + nx, sizeof(float), &total)) {
    return Status::kTooLarge;
  }
  std::unique_ptr<float, FreeDeleter> buffer(
      static_cast<float*>(malloc(total)));
  if (!buffer) return Status::kOutOfMemory;
  float* merged = buffer.get();
  float* dout = merged + n;
  float* dheads[3] = {dout + n, dout + 2 * n, dout + 2 * n + nkv};
  float* grad_x_term = dout + 2 * n + 2 * nkv;

  // 4. Output projection (its input is the merged context, times the head
  // mask), dctx times the head mask, split.
  if (p.w_out) {
    Permute(saved.context, b, t, heads[0], hd, /*split=*/false, merged);
    ScaleHeads(o, heads[0], hd, merged);
    // dctx (merged) goes to dheads[0], free until step 3.
    st = linear_backward(merged, rows, d_model, d_model, p.w_out, grad_y,
                         dheads[0], g.w_out, g.b_out);
    if (st != Status::kOk) return st;
    ScaleHeads(o, heads[0], hd, dheads[0]);
    Permute(dheads[0], b, t, heads[0], hd, /*split=*/true, dout);
  } else if (o.head_mask) {
    CopyRow(grad_y, n, merged);
    ScaleHeads(o, heads[0], hd, merged);
    Permute(merged, b, t, heads[0], hd, /*split=*/true, dout);
  } else {
    Permute(grad_y, b, t, heads[0], hd, /*split=*/true, dout);
  }
  // 3. Attention (gradients of shared KV heads summed over their group).
  if (p.sinks && !g.sinks) return Status::kNullPointer;
  std::vector<float> grad_sinks(p.sinks ? static_cast<size_t>(p.num_heads) : 0);
  st = attention_backward(shape, LayerAttentionOptions(p, o), dout,
                          saved.queries, saved.keys, saved.values,
                          saved.context, saved.log_sum_exp, dheads[0],
                          dheads[1], dheads[2],
                          p.sinks ? grad_sinks.data() : nullptr);
  if (st != Status::kOk) return st;
  for (size_t h = 0; h < grad_sinks.size(); ++h) g.sinks[h] += grad_sinks[h];
  // 1. Merge, RoPE transposed (Q, K), projections, in the order Q, K, V
  // (grad_x summed in that order).
  const float* w[3] = {p.w_query, p.w_key, p.w_value};
  float* gw[3] = {g.w_query, g.w_key, g.w_value};
  float* gb[3] = {g.b_query, g.b_key, g.b_value};
  for (int i = 0; i < 3; ++i) {
    Permute(dheads[i], b, t, heads[i], hd, /*split=*/false, merged);
    if (p.rope_base != 0.0f && i < 2) {
      st = ApplyRopeTranspose(p.rope_base, o.batch, o.tokens,
                              static_cast<int64_t>(heads[i]), p.head_dim, 0,
                              merged, p.rope_scaling);
      if (st != Status::kOk) return st;
    }
    float* gx = i == 0 ? grad_x : grad_x_term;
    st = linear_backward(x, rows, p.d_in, widths[i], w[i], merged, gx, gw[i],
                         gb[i]);
    if (st != Status::kOk) return st;
    if (i > 0) {
      for (size_t e = 0; e < nx; ++e) grad_x[e] += grad_x_term[e];
    }
  }
  return Status::kOk;
}

}  // namespace

Status AttentionLayerForward(const AttentionLayerParams& params,
                             const LayerOptions& options, const float* x,
                             const LayerOutputs& outputs) {
  return LayerForward(Linear, StoredLinear, AttentionWithLogSumExp, params,
                      options, x, outputs);
}

Status AttentionLayerReference(const AttentionLayerParams& params,
                               const LayerOptions& options, const float* x,
                               const LayerOutputs& outputs) {
  return LayerForward(LinearReference, StoredLinearReference,
                      AttentionWithLogSumExpReference, params,
                      options, x, outputs);
}

Status AttentionLayerBackward(const AttentionLayerParams& params,
                              const LayerOptions& options, const float* x,
                              const LayerActivations& saved,
                              const float* grad_y, float* grad_x,
                              const AttentionLayerGrads& grads) {
  return LayerBackward(LinearBackward, AttentionBackward, params, options, x,
                       saved, grad_y, grad_x, grads);
}

Status AttentionLayerBackwardReference(const AttentionLayerParams& params,
                                       const LayerOptions& options,
                                       const float* x,
                                       const LayerActivations& saved,
                                       const float* grad_y, float* grad_x,
                                       const AttentionLayerGrads& grads) {
  return LayerBackward(LinearBackwardReference, AttentionBackwardReference,
                       params, options, x, saved, grad_y, grad_x, grads);
}

}  // namespace causal_attention
