// nn.Linear and its backward as MatMul calls (src/gemm/matmul.h).
//
// Shapes: x [rows, in], weight [out, in] (PyTorch layout), bias [out] or
// null, y [rows, out].
//   forward:  y = x · weightᵀ + bias                   (B transposed)
//   backward: grad_x = grad_y · weight                 (no transposes)
//             grad_weight += grad_yᵀ · x               (A transposed)
//             grad_bias += column sums of grad_y       (double, row order)

#include "src/gemm/linear.h"

#include <stdlib.h>

#include "src/gemm/matmul.h"

namespace causal_attention {

Status Linear(const float* x, int64_t rows, int64_t in, int64_t out,
              const float* weight, const float* bias, float* y) {
  const Status st = ValidateLinear(x, rows, in, out, weight, y);
  if (st != Status::kOk) return st;
  MatMulShape s;
  s.m = rows;
  s.n = out;
  s.k = in;
  s.transpose_b = true;
  return MatMul(s, x, in, weight, in, bias, y, out);
}

Status LinearBackward(const float* x, int64_t rows, int64_t in, int64_t out,
                      const float* weight, const float* grad_y, float* grad_x,
                      float* grad_weight, float* grad_bias) {
  Status st =
      ValidateLinearBackward(x, rows, in, out, weight, grad_y, grad_weight);
  if (st != Status::kOk) return st;
  if (grad_x) {
    MatMulShape s;
    s.m = rows;
    s.n = in;
    s.k = out;
    st = MatMul(s, grad_y, out, weight, in, nullptr, grad_x, in);
    if (st != Status::kOk) return st;
  }
  MatMulShape s;
  s.m = out;
  s.n = in;
  s.k = rows;
  s.transpose_a = true;
  s.accumulate = true;
  st = MatMul(s, grad_y, out, x, in, nullptr, grad_weight, in);
  if (st != Status::kOk) return st;
  if (grad_bias) {
    double* sums = static_cast<double*>(calloc(out, sizeof(double)));
    if (!sums) return Status::kOutOfMemory;
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = grad_y + r * out;
      for (int64_t o = 0; o < out; ++o) sums[o] += row[o];
    }
    for (int64_t o = 0; o < out; ++o) {
      grad_bias[o] = static_cast<float>(grad_bias[o] + sums[o]);
    }
    free(sums);
  }
  return Status::kOk;
}

}  // namespace causal_attention
