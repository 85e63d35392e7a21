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
// Accuracy: the book computes its tables in float32; here inv_freq and the
// angle are rounded to float exactly where its float32 ops round, cos and
// sin are computed in double and rounded to float (PyTorch's float32 cos is
// within an ULP of that), and the rotation is done in float.

#ifndef CAUSAL_ATTENTION_SRC_ROPE_H_
#define CAUSAL_ATTENTION_SRC_ROPE_H_

#include <stdint.h>

#include "src/status.h"

namespace causal_attention {

// inv_freq[i] = 1 / base^((2i) / head_dim) for i < head_dim / 2, in float32
// arithmetic as compute_rope_params. head_dim even, base finite and > 0.
Status RopeInverseFrequencies(float base, int64_t head_dim, float* inv_freq);

// Rotates x in place. head_dim even; start >= 0.
Status ApplyRope(float base, int64_t batch, int64_t tokens, int64_t heads,
                 int64_t head_dim, int64_t start, float* x);

// The transpose of ApplyRope (the rotation by -angle), in place: the
// backward of RoPE, dL/dx = Rᵀ · dL/dy for y = R · x.
Status ApplyRopeTranspose(float base, int64_t batch, int64_t tokens,
                          int64_t heads, int64_t head_dim, int64_t start,
                          float* x);

// Checks the arguments of ApplyRope without computing anything.
Status ValidateRope(float base, int64_t head_dim, int64_t start);

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_ROPE_H_
