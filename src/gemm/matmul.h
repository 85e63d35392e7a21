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

#include "src/base/status.h"

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

// Which microkernel MatMul runs. kSimd: Highway's, for the best target the
// CPU has (SIMD128 in wasm). kRelaxedSimd: the wasm builds' relaxed-SIMD
// kernel (one f32x4.relaxed_madd per multiply-add, an FMA on x64: other
// rounding, so other bits), where the engine validates relaxed SIMD.
enum class GemmKernel { kSimd = 0, kRelaxedSimd = 1 };

// Allows (the default) or forbids the relaxed-SIMD kernel for every later
// MatMul of this module instance, e.g. for the same bits as an engine without
// relaxed SIMD. Call it between MatMul calls, not during one.
void AllowRelaxedGemmKernel(bool allowed);
// The kernel MatMul runs now.
GemmKernel ActiveGemmKernel();

// Checks sizes, strides and pointers without computing anything.
Status ValidateMatMul(const MatMulShape& shape, const float* a, int64_t lda,
                      const float* b, int64_t ldb, const float* c, int64_t ldc);

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_MATMUL_H_
