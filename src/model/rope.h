// Rotary position embedding (RoPE) on pointers, as the book's Llama code
// (ch05/07_gpt_to_llama: compute_rope_params, apply_rope; the same as
// Hugging Face's Llama): head element i is rotated with element i + hd/2
// by the angle position · inv_freq[i], inv_freq[i] = 1 / base^(2i / hd):
//   x_i'        = x_i · cos − x_{i+hd/2} · sin
//   x_{i+hd/2}' = x_{i+hd/2} · cos + x_i · sin
// Layout (row-major float32): x [batch, tokens, heads, head_dim] (a
// projection's output before the head split: the rotation depends on the
// token's position only); token t has position start + t (a KV cache
// continues the positions).
//
// Llama 3.1 and 3.2 adjust the frequencies (RopeScaling below: the book's
// freq_config of compute_rope_params in its Llama 3.2 code, Hugging Face's
// rope_type "llama3").
//
// Accuracy: the book computes its tables in float32; here inv_freq, its
// adjustment and the angle are rounded to float exactly where PyTorch's
// float32 ops round (as read from compute_rope_params and PyTorch's
// operators; scalar / tensor is tensor.reciprocal() * scalar there), cos
// and sin are computed in double and rounded to float (PyTorch's float32 cos
// is within an ULP of that), and the rotation is done in float.

#ifndef CAUSAL_ATTENTION_SRC_ROPE_H_
#define CAUSAL_ATTENTION_SRC_ROPE_H_

#include <stdint.h>

#include "src/base/status.h"

namespace causal_attention {

// Llama 3.1's frequency adjustment (compute_rope_params' freq_config): with
// wavelen = 2π / inv_freq, frequencies whose wavelength exceeds
// original_context_length / low_freq_factor are divided by factor, those
// below original_context_length / high_freq_factor are kept, and those
// between are interpolated with s = (original_context_length / wavelen -
// low_freq_factor) / (high_freq_factor - low_freq_factor):
// (1 - s) · inv_freq / factor + s · inv_freq. factor == 0: no adjustment
// (the default); else every field finite, factor > 0, 0 < low_freq_factor <
// high_freq_factor, original_context_length > 0. Llama 3.2: factor 32,
// low 1, high 4, original context 8192; Llama 3.1: factor 8. The book's
// order of operations (Hugging Face's divides (1 - s) · inv_freq by factor:
// the last bit of a few frequencies may differ).
struct RopeScaling {
  float factor = 0.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  float original_context_length = 8192.0f;
};

// inv_freq[i] = 1 / base^((2i) / head_dim) for i < head_dim / 2, then the
// scaling's adjustment, in float32 arithmetic as compute_rope_params.
// head_dim even, base finite and > 0.
Status RopeInverseFrequencies(float base, int64_t head_dim, float* inv_freq,
                              const RopeScaling& scaling = RopeScaling());

// Rotates x in place. head_dim even; start >= 0.
Status ApplyRope(float base, int64_t batch, int64_t tokens, int64_t heads,
                 int64_t head_dim, int64_t start, float* x,
                 const RopeScaling& scaling = RopeScaling());

// The transpose of ApplyRope (the rotation by -angle), in place: the
// backward of RoPE, dL/dx = Rᵀ · dL/dy for y = R · x.
Status ApplyRopeTranspose(float base, int64_t batch, int64_t tokens,
                          int64_t heads, int64_t head_dim, int64_t start,
                          float* x, const RopeScaling& scaling = RopeScaling());

// Checks the arguments of ApplyRope without computing anything.
Status ValidateRope(float base, int64_t head_dim, int64_t start,
                    const RopeScaling& scaling = RopeScaling());

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_ROPE_H_
