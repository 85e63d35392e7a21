// nn.Linear on pointers: y = x · weightᵀ + bias, and its backward.
//
// Layouts (row-major float32): x [rows, in], weight [out, in] (PyTorch's),
// bias [out] or null, y [rows, out].

#ifndef CAUSAL_ATTENTION_SRC_LINEAR_H_
#define CAUSAL_ATTENTION_SRC_LINEAR_H_

#include <stdint.h>

#include "src/base/status.h"

namespace causal_attention {

// One MatMul (src/gemm/matmul.h) with the bias in its store: SIMD, threaded,
// bit-identical for any thread count. Accuracy: |y - ref| <= 1e-5·(1 +
// |ref|) against LinearReference on the tested shapes.
Status Linear(const float* x, int64_t rows, int64_t in, int64_t out,
              const float* weight, const float* bias, float* y);

// The oracle: scalar, double accumulation.
Status LinearReference(const float* x, int64_t rows, int64_t in, int64_t out,
                       const float* weight, const float* bias, float* y);

// The backward pass, as autograd computes it for nn.Linear given dL/dy
// (grad_y [rows, out]):
//   grad_x       = grad_y · weight        [rows, in]   (overwritten; may be
//                                                       null: not needed)
//   grad_weight += grad_yᵀ · x            [out, in]    (accumulated, as
//   grad_bias   += sum over rows of grad_y [out]        PyTorch's .grad; the
//                                                       bias may be null)
// On MatMul: bit-identical for any thread count, same accuracy.
Status LinearBackward(const float* x, int64_t rows, int64_t in, int64_t out,
                      const float* weight, const float* grad_y, float* grad_x,
                      float* grad_weight, float* grad_bias);
// The oracle: scalar, double accumulation.
Status LinearBackwardReference(const float* x, int64_t rows, int64_t in,
                               int64_t out, const float* weight,
                               const float* grad_y, float* grad_x,
                               float* grad_weight, float* grad_bias);

// Check sizes and pointers without computing anything.
Status ValidateLinear(const float* x, int64_t rows, int64_t in, int64_t out,
                      const float* weight, const float* y);
Status ValidateLinearBackward(const float* x, int64_t rows, int64_t in,
                              int64_t out, const float* weight,
                              const float* grad_y, const float* grad_weight);

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_LINEAR_H_
