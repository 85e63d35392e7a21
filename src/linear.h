// nn.Linear on pointers: y = x · weightᵀ + bias.
//
// Layouts (row-major float32): x [rows, in], weight [out, in] (PyTorch's),
// bias [out] or null, y [rows, out].

#ifndef CAUSAL_ATTENTION_SRC_LINEAR_H_
#define CAUSAL_ATTENTION_SRC_LINEAR_H_

#include <stdint.h>

#include "src/status.h"

namespace causal_attention {

// SIMD (register-blocked Highway GEMM), threaded over row and column
// blocks; bit-identical for any thread count. Accuracy: |y - ref| <=
// 1e-5·(1 + |ref|) against LinearReference on the tested shapes.
Status Linear(const float* x, int64_t rows, int64_t in, int64_t out,
              const float* weight, const float* bias, float* y);

// The oracle: scalar, double accumulation.
Status LinearReference(const float* x, int64_t rows, int64_t in, int64_t out,
                       const float* weight, const float* bias, float* y);

// Checks sizes and pointers without computing anything.
Status ValidateLinear(const float* x, int64_t rows, int64_t in, int64_t out,
                      const float* weight, const float* y);

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_LINEAR_H_
