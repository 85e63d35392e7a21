// Layout kBSHD (attention.h) at the entry of the SIMD kernels: the kernels
// read kBHSD, so a kBSHD call copies q, k, v (and the backward's dO, O) to
// kBHSD and its outputs back. O(B·T·H·D) copies against the O(B·H·Tq·Tk·D)
// work of the call. The scalar reference indexes both layouts directly.

#ifndef CAUSAL_ATTENTION_SRC_LAYOUT_H_
#define CAUSAL_ATTENTION_SRC_LAYOUT_H_

#include <stddef.h>

#include "src/attention/attention.h"
#include "src/base/status.h"

namespace causal_attention {
namespace internal {

// A call's sizes for the copies, and the element counts of its kBHSD
// tensors (k and v dense: key_len rows per KV head).
struct LayoutSizes {
  size_t b, h, kvh, tq, tk, cap, d, dv;
  explicit LayoutSizes(const AttentionShape& s);
  size_t Queries() const { return b * h * tq * d; }
  size_t Keys() const { return b * kvh * tk * d; }
  size_t Values() const { return b * kvh * tk * dv; }
  size_t Outputs() const { return b * h * tq * dv; }
};

// dst [B, H, S, W] = src [B, S_alloc, H, W] (rows s < S of each batch item;
// S_alloc >= S rows allocated per batch item in src).
void BshdToBhsd(const float* src, size_t batch, size_t seq, size_t seq_alloc,
                size_t heads, size_t width, float* dst);
// dst [B, S, H, W] = src [B, H, S, W].
void BhsdToBshd(const float* src, size_t batch, size_t seq, size_t heads,
                size_t width, float* dst);

// A forward or backward kernel on kBHSD tensors (the signatures of
// AttentionWithLogSumExp and AttentionBackward).
using ForwardFn = Status (*)(const AttentionShape&, const AttentionOptions&,
                             const float*, const float*, const float*, float*,
                             float*, float*);
using BackwardFn = Status (*)(const AttentionShape&, const AttentionOptions&,
                              const float*, const float*, const float*,
                              const float*, const float*, const float*, float*,
                              float*, float*, float*);
// Runs `fn` on the call's tensors (kBHSD), or on kBHSD copies of them
// (kBSHD), writing its outputs back in kBSHD. Weights, log-sum-exp and
// grad_sinks have one layout and are passed through. kOutOfMemory when the
// copies cannot be allocated.
Status ForwardInLayout(ForwardFn fn, const AttentionShape& shape,
                           const AttentionOptions& options, const float* q,
                           const float* k, const float* v, float* out,
                           float* weights, float* log_sum_exp);
Status BackwardInLayout(BackwardFn fn, const AttentionShape& shape,
                            const AttentionOptions& options,
                            const float* grad_out, const float* q,
                            const float* k, const float* v, const float* out,
                            const float* log_sum_exp, float* grad_q,
                            float* grad_k, float* grad_v, float* grad_sinks);

// One malloc of `floats` floats, freed on destruction; null when it fails
// (or when the byte size overflows).
class FloatBuffer {
 public:
  explicit FloatBuffer(size_t floats);
  FloatBuffer(const FloatBuffer&) = delete;
  FloatBuffer& operator=(const FloatBuffer&) = delete;
  ~FloatBuffer();
  float* get() const { return data_; }

 private:
  float* data_;
};

}  // namespace internal
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_LAYOUT_H_
