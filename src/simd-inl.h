// The vector tags every kernel header uses, and the panel width of the
// matrix-multiply microkernels (compiled once per SIMD target).

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_SIMD_INL_H_
#undef CAUSAL_ATTENTION_SRC_SIMD_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_SIMD_INL_H_
#endif

#include <stddef.h>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;   // whole vectors
using D1 = hn::CappedTag<float, 1>;  // one lane: row tails

// Columns produced per broadcast-microkernel pass: two vectors.
HWY_INLINE size_t PanelWidth() { return 2 * hn::Lanes(DF()); }

HWY_INLINE size_t RoundUp(size_t x, size_t m) { return (x + m - 1) / m * m; }

// mul · x + add for the matrix-product microkernels (the GEMM's, and the
// attention tiles' S = Q·Kᵀ and O += P·V): f32x4.relaxed_madd (one fused or
// unfused op, FMA on x64) where the translation unit is compiled for relaxed
// SIMD (the relaxed side module, src/matmul_relaxed.cc), else Highway's
// MulAdd (FMA on x86 targets that have it; mul + add on SIMD128).
template <class V>
HWY_INLINE V MulAddRelaxed(V mul, V x, V add) {
#if HWY_TARGET == HWY_WASM && defined(__wasm_relaxed_simd__)
  return V{wasm_f32x4_relaxed_madd(mul.raw, x.raw, add.raw)};
#else
  return hn::MulAdd(mul, x, add);
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
