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
// SIMD (the relaxed side module, src/gemm/matmul_relaxed.cc), else Highway's
// MulAdd (FMA on x86 targets that have it; mul + add on SIMD128).
template <class V>
HWY_INLINE V MulAddRelaxed(V mul, V x, V add) {
#if HWY_TARGET == HWY_WASM && defined(__wasm_relaxed_simd__)
  return V{wasm_f32x4_relaxed_madd(mul.raw, x.raw, add.raw)};
#else
  return hn::MulAdd(mul, x, add);
#endif
}

#if HWY_TARGET != HWY_SCALAR
// out[c·ldo + r] = in[r·ldi + c] for r, c < 4: one 4x4 block transposed in
// 128-bit vectors (four loads, four interleaves and concatenations, four
// stores; unaligned).
HWY_INLINE void Transpose4x4(const float* HWY_RESTRICT in, size_t ldi,
                             float* HWY_RESTRICT out, size_t ldo) {
  const hn::Full128<float> d4;
  const auto a0 = hn::LoadU(d4, in);
  const auto a1 = hn::LoadU(d4, in + ldi);
  const auto a2 = hn::LoadU(d4, in + 2 * ldi);
  const auto a3 = hn::LoadU(d4, in + 3 * ldi);
  const auto t0 = hn::InterleaveLower(a0, a1);  // a0_0 a1_0 a0_1 a1_1
  const auto t1 = hn::InterleaveLower(a2, a3);
  const auto t2 = hn::InterleaveUpper(d4, a0, a1);  // a0_2 a1_2 a0_3 a1_3
  const auto t3 = hn::InterleaveUpper(d4, a2, a3);
  hn::StoreU(hn::ConcatLowerLower(d4, t1, t0), d4, out);
  hn::StoreU(hn::ConcatUpperUpper(d4, t1, t0), d4, out + ldo);
  hn::StoreU(hn::ConcatLowerLower(d4, t3, t2), d4, out + 2 * ldo);
  hn::StoreU(hn::ConcatUpperUpper(d4, t3, t2), d4, out + 3 * ldo);
}
#endif

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
