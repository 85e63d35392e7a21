// Microkernels for tiles of one or two query rows, the shape of a decode
// step without grouped heads (one new token per head: GPT-2's 12 heads each
// read their own keys). The general kernels (dot-inl.h, matmul-inl.h) keep
// 8 accumulators by blocking over rows; with one row they would keep 2 to 4
// dependent chains and wait on add latency, so these block over keys
// (scores) and output columns (P·V) instead. Compiled once per SIMD target.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_FEW_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_FEW_ROWS_INL_H_
#undef CAUSAL_ATTENTION_SRC_FEW_ROWS_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_FEW_ROWS_INL_H_
#endif

#include <stddef.h>

#include "hwy/highway.h"
#include "src/dot-inl.h"
#include "src/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

#if HWY_TARGET != HWY_SCALAR
// c[j] = a · b_j for one row a and the rows b[0, nb) (written up to a
// multiple of 8; missing rows read `zero_row`). depth is a multiple of the
// vector length. Eight keys at a time: eight independent accumulators.
HWY_INLINE void DotOneRow(const float* HWY_RESTRICT a,
                          const float* HWY_RESTRICT b, size_t ldb, size_t nb,
                          size_t depth, const float* zero_row,
                          float* HWY_RESTRICT c) {
  const DF df;
  const size_t N = hn::Lanes(df);
  using V = hn::Vec<DF>;
  const hn::Full128<float> d4;
  for (size_t j = 0; j < nb; j += 8) {
    const float* br[8];
    for (size_t i = 0; i < 8; ++i) {
      br[i] = j + i < nb ? b + (j + i) * ldb : zero_row;
    }
    V acc[8];
    for (size_t i = 0; i < 8; ++i) acc[i] = hn::Zero(df);
    for (size_t x = 0; x < depth; x += N) {
      const V av = hn::LoadU(df, a + x);
      for (size_t i = 0; i < 8; ++i) {
        acc[i] = hn::MulAdd(av, hn::LoadU(df, br[i] + x), acc[i]);
      }
    }
    hn::StoreU(SumOfFour(df, acc[0], acc[1], acc[2], acc[3]), d4, c + j);
    hn::StoreU(SumOfFour(df, acc[4], acc[5], acc[6], acc[7]), d4, c + j + 4);
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

// c[r][0, ncols) += sum_{i < depth} a[r][i] · b[i][0, ncols) for r < MR:
// each pass keeps MR × NV vector accumulators (NV vectors of columns) in
// registers over the whole depth. ncols is a multiple of NV vectors; c is
// packed (aligned), b rows may be user memory.
template <size_t MR, size_t NV>
HWY_INLINE void AccumulateRows(const float* HWY_RESTRICT a, size_t lda,
                               size_t depth, const float* HWY_RESTRICT b,
                               size_t ldb, size_t ncols, float* HWY_RESTRICT c,
                               size_t ldc) {
  const DF df;
  const size_t N = hn::Lanes(df);
  using V = hn::Vec<DF>;
  for (size_t j = 0; j < ncols; j += NV * N) {
    V acc[MR][NV];
    for (size_t r = 0; r < MR; ++r) {
      for (size_t v = 0; v < NV; ++v) {
        acc[r][v] = hn::Load(df, c + r * ldc + j + v * N);
      }
    }
    const float* HWY_RESTRICT bp = b + j;
    for (size_t i = 0; i < depth; ++i, bp += ldb) {
      V bv[NV];
      for (size_t v = 0; v < NV; ++v) bv[v] = hn::LoadU(df, bp + v * N);
      for (size_t r = 0; r < MR; ++r) {
        const V av = hn::Set(df, a[r * lda + i]);
        for (size_t v = 0; v < NV; ++v) {
          acc[r][v] = hn::MulAdd(av, bv[v], acc[r][v]);
        }
      }
    }
    for (size_t r = 0; r < MR; ++r) {
      for (size_t v = 0; v < NV; ++v) {
        hn::Store(acc[r][v], df, c + r * ldc + j + v * N);
      }
    }
  }
}

// c += a · b for MR (1 or 2) rows that all use depth [0, depth): the
// columns in passes of 8 / MR vectors while they last, then of 2 (ncols is
// a multiple of PanelWidth(), two vectors).
template <size_t MR>
HWY_INLINE void MatMulAddFewRows(const float* HWY_RESTRICT a, size_t lda,
                                 size_t depth, const float* HWY_RESTRICT b,
                                 size_t ldb, size_t ncols,
                                 float* HWY_RESTRICT c, size_t ldc) {
  constexpr size_t kWide = 8 / MR;
  const size_t wide =
      ncols / (kWide * hn::Lanes(DF())) * kWide * hn::Lanes(DF());
  AccumulateRows<MR, kWide>(a, lda, depth, b, ldb, wide, c, ldc);
  AccumulateRows<MR, 2>(a, lda, depth, b + wide, ldb, ncols - wide, c + wide,
                        ldc);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
