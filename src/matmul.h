// General matrix multiply on row-major float32 matrices, the GEMM under
// Linear, its backward and the layer:
//
//   C[m, n] = (C if accumulate) + op(A)[m, k] · op(B)[k, n] + bias[n]
//
// op(A) is A stored [m, k] with row stride lda, or (transpose_a) Aᵀ of an A
// stored [k, m]; op(B) likewise ([k, n], or [n, k] with transpose_b). bias is
// [n], added to every row, or null. C is [m, n] with row stride ldc.

#ifndef CAUSAL_ATTENTION_SRC_MATMUL_H_
#define CAUSAL_ATTENTION_SRC_MATMUL_H_

#include <stdint.h>

#include "src/status.h"

namespace causal_attention {

struct MatMulShape {
  int64_t m = 1;
  int64_t n = 1;
  int64_t k = 1;
  bool transpose_a = false;  // A is stored [k, m]
  bool transpose_b = false;  // B is stored [n, k] (nn.Linear's weight)
  bool accumulate = false;   // add to C instead of overwriting it
};

// SIMD (register-blocked Highway kernels on a packed op(B)), threaded over
// blocks of C; each element of C is computed by one work item in a fixed
// order, so results are bit-identical for any thread count. Accuracy:
// |C - ref| <= 1e-5·(1 + |ref|) against MatMulReference on the tested
// shapes (inputs of magnitude <= 1, k up to a few thousand).
Status MatMul(const MatMulShape& shape, const float* a, int64_t lda,
              const float* b, int64_t ldb, const float* bias, float* c,
              int64_t ldc);

// The oracle: scalar, double accumulation.
Status MatMulReference(const MatMulShape& shape, const float* a, int64_t lda,
                       const float* b, int64_t ldb, const float* bias, float* c,
                       int64_t ldc);

// Checks sizes, strides and pointers without computing anything.
Status ValidateMatMul(const MatMulShape& shape, const float* a, int64_t lda,
                      const float* b, int64_t ldb, const float* c, int64_t ldc);

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_MATMUL_H_
