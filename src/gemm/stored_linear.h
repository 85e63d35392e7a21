// nn.Linear for inference on stored (bfloat16 or int8) weights: y = x ·
// weightᵀ + bias, reading the weights where they are.
//
// Layouts: x [rows, in] and y [rows, out] row-major float32, bias [out] or
// null; the weight [out, in] (PyTorch's) stored row by row as a KV cache
// stores its rows (src/kv/kv_storage.h, StoreKvRows with width = in): one
// output row's `in` values rounded to bfloat16, or int8 with one float scale
// per block of kInt8Block = 32 input values. StoredWeightsBytes bytes in all
// (the rows, then kStoredWeightsPad bytes the int8 kernel may read past the
// last row: they are never used).
// Why the KV cache's format: one quantiser for both (its block of 32 and
// round-to-nearest-even are measured there), and a row of weights is a row
// of keys to the same kernels' arithmetic.

#ifndef CAUSAL_ATTENTION_SRC_GEMM_STORED_LINEAR_H_
#define CAUSAL_ATTENTION_SRC_GEMM_STORED_LINEAR_H_

#include <stddef.h>
#include <stdint.h>

#include "src/base/status.h"
#include "src/kv/kv_storage.h"

namespace causal_attention {

constexpr size_t kStoredWeightsPad = 64;

// Bytes of a stored [out, in] weight (padding included), or 0 when that
// does not fit size_t.
size_t StoredWeightsBytes(KvDtype dtype, int64_t out, int64_t in);

// Rounds weight [out, in] into dst (StoredWeightsBytes bytes), zeroing the
// padding.
Status StoreWeights(KvDtype dtype, const float* weight, int64_t out,
                    int64_t in, void* dst);

// y = x · Wᵀ + bias with W the stored weight's values (LoadKvRow's floats).
// Few rows (fewer than kStoredGemmRows: a generation step, GEMV): SIMD
// kernels that read the stored rows directly, four rows of x per pass over
// W. int8 multiplies as integers: each row of x is rounded per block of 32
// values to int16 with its own scale (largest |x| / 32767), the block's
// products summed in int32 (16-bit integer dot products: exact), times
// both scales, summed in float. bfloat16 widens in registers and
// multiplies in float. Many rows (prefill, GEMM): panels of W are widened
// to float32 in a per-thread workspace and multiplied by MatMul. Threaded
// over output columns; bit-identical for any thread count (each column is
// one work item's, in a fixed order). Accuracy against
// StoredLinearReference (double sums of the stored values): GEMV int8
// |y - ref| <= 1e-4 · sum_i |x_i| · |w_i| + 1e-6 (the int16 rounding of x:
// 2^-16 of each block's largest |x|, plus float sums); bfloat16 and the
// GEMM |y - ref| <= 1e-5·(1 + |ref|) + 1e-7 · sum_i |x_i| · |w_i| (float
// sums). A non-finite x or weight
// value gives NaN in the outputs it reaches.
constexpr int64_t kStoredGemmRows = 16;
Status StoredLinear(const float* x, int64_t rows, int64_t in, int64_t out,
                    KvDtype dtype, const void* weight, const float* bias,
                    float* y);

// The oracle: scalar, double accumulation of the stored values.
Status StoredLinearReference(const float* x, int64_t rows, int64_t in,
                             int64_t out, KvDtype dtype, const void* weight,
                             const float* bias, float* y);

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_GEMM_STORED_LINEAR_H_
