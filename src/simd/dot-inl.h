// Dot-product microkernels: c[r][j] = a_r · b_j for rows of A and rows of B
// as they lie in memory (A·Bᵀ without transposing B). Used for Q·Kᵀ on the
// key rows: no transposed copy of K per tile. Vector targets only (the
// scalar target uses the broadcast kernels of matmul-inl.h on a transposed
// tile).

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_DOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_DOT_INL_H_
#undef CAUSAL_ATTENTION_SRC_DOT_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_DOT_INL_H_
#endif

#include <stddef.h>

#include "hwy/highway.h"
#include "src/base/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

#if HWY_TARGET != HWY_SCALAR
// Lane i of the result is the sum of all lanes of a_i (D has >= 4 lanes):
// halve wide vectors to 128 bits, then a 4x4 transpose-and-add.
template <class D, class V>
HWY_INLINE hn::Vec<hn::Full128<float>> SumOfFour(D /* d */, V a0, V a1, V a2,
                                                 V a3) {
  if constexpr (hn::MaxLanes(D()) > 4) {
    const hn::Half<D> dh;
    return SumOfFour(dh, hn::Add(hn::LowerHalf(dh, a0), hn::UpperHalf(dh, a0)),
                     hn::Add(hn::LowerHalf(dh, a1), hn::UpperHalf(dh, a1)),
                     hn::Add(hn::LowerHalf(dh, a2), hn::UpperHalf(dh, a2)),
                     hn::Add(hn::LowerHalf(dh, a3), hn::UpperHalf(dh, a3)));
  } else {
    const hn::Full128<float> d4;
    // [a0_0+a0_2, a1_0+a1_2, a0_1+a0_3, a1_1+a1_3] and the same for a2, a3.
    const auto s01 =
        hn::Add(hn::InterleaveLower(a0, a1), hn::InterleaveUpper(d4, a0, a1));
    const auto s23 =
        hn::Add(hn::InterleaveLower(a2, a3), hn::InterleaveUpper(d4, a2, a3));
    return hn::Add(hn::ConcatLowerLower(d4, s23, s01),
                   hn::ConcatUpperUpper(d4, s23, s01));
  }
}

// c[r][0..4) = a_r · b_i for r < MR and the four rows b[0..4); depth is a
// multiple of the vector length (callers pad odd sizes). MR = 2 keeps 8
// accumulators, 4 b vectors and an a vector in registers (wasm SIMD has 16).
template <size_t MR>
HWY_INLINE void DotMicrokernel(const float* HWY_RESTRICT a, size_t lda,
                               const float* const* b, size_t depth,
                               float* HWY_RESTRICT c, size_t ldc) {
  const DF df;
  const size_t N = hn::Lanes(df);
  using V = hn::Vec<DF>;
  V acc[MR][4];
  for (size_t r = 0; r < MR; ++r) {
    for (size_t i = 0; i < 4; ++i) acc[r][i] = hn::Zero(df);
  }
  for (size_t i = 0; i < depth; i += N) {
    const V b0 = hn::LoadU(df, b[0] + i);
    const V b1 = hn::LoadU(df, b[1] + i);
    const V b2 = hn::LoadU(df, b[2] + i);
    const V b3 = hn::LoadU(df, b[3] + i);
    for (size_t r = 0; r < MR; ++r) {
      const V av = hn::LoadU(df, a + r * lda + i);
      acc[r][0] = MulAddRelaxed(av, b0, acc[r][0]);
      acc[r][1] = MulAddRelaxed(av, b1, acc[r][1]);
      acc[r][2] = MulAddRelaxed(av, b2, acc[r][2]);
      acc[r][3] = MulAddRelaxed(av, b3, acc[r][3]);
    }
  }
  const hn::Full128<float> d4;
  for (size_t r = 0; r < MR; ++r) {
    hn::StoreU(SumOfFour(df, acc[r][0], acc[r][1], acc[r][2], acc[r][3]), d4,
               c + r * ldc);
  }
}

// c[r][j] = a_r · b_j for r < rows, j < nb (written up to a multiple of 4;
// missing rows of b read `zero_row`, so nothing past B's end is touched).
HWY_INLINE void DotTile(const float* HWY_RESTRICT a, size_t lda, size_t rows,
                        const float* HWY_RESTRICT b, size_t ldb, size_t nb,
                        size_t depth, const float* zero_row,
                        float* HWY_RESTRICT c, size_t ldc) {
  for (size_t j = 0; j < nb; j += 4) {
    const float* br[4];
    for (size_t i = 0; i < 4; ++i) {
      br[i] = j + i < nb ? b + (j + i) * ldb : zero_row;
    }
    size_t r = 0;
    for (; r + 2 <= rows; r += 2) {
      DotMicrokernel<2>(a + r * lda, lda, br, depth, c + r * ldc + j, ldc);
    }
    if (r < rows)
      DotMicrokernel<1>(a + r * lda, lda, br, depth, c + r * ldc + j, ldc);
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
