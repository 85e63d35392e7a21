// The attention tiles' matrix products (S = Q·Kᵀ on key rows, O += P·V and
// the backward's ragged sums, and a decode step's four-row kernels), run by
// the module's own kernels or, in the wasm builds where the engine has
// relaxed SIMD, by the same kernels
// compiled with f32x4.relaxed_madd in the relaxed side module
// (src/gemm/matmul_relaxed.cc): the choice MatMul makes (ActiveGemmKernel), made
// once per call, so every thread of a call runs the same kernel and results
// stay bit-identical for any thread count. Compiled once per SIMD target.

#ifndef CAUSAL_ATTENTION_SRC_TILE_PRODUCTS_EXTERN_H_
#define CAUSAL_ATTENTION_SRC_TILE_PRODUCTS_EXTERN_H_
#include <stddef.h>

#include "src/gemm/matmul.h"

#if defined(CA_GEMM_SIDE_MODULE)
// The side module's exports (src/gemm/matmul_relaxed.cc; signatures of DotTile,
// MatMulAddRagged and MatMulAddRaggedBegin).
extern "C" void ca_dot_tile_relaxed(const float* a, size_t lda, size_t rows,
                                    const float* b, size_t ldb, size_t nb,
                                    size_t depth, const float* zero_row,
                                    float* c, size_t ldc);
extern "C" void ca_add_ragged_relaxed(const float* a, size_t lda, size_t rows,
                                      const size_t* ends, const float* b,
                                      size_t ldb, size_t ncols, float* c,
                                      size_t ldc);
extern "C" void ca_lane_scores_relaxed(size_t kn, size_t depth, const float* k,
                                       size_t ldk, const float* qt,
                                       size_t lanes, float* s, size_t stride);
extern "C" void ca_lane_values_relaxed(const float* pt, size_t rows,
                                       const size_t* ends, const float* v,
                                       size_t ldv, size_t ncols, float* o,
                                       size_t ldo, size_t stride);
extern "C" void ca_add_ragged_begin_relaxed(const float* a, size_t lda,
                                            size_t rows, const size_t* begins,
                                            size_t end, const float* b,
                                            size_t ldb, size_t ncols, float* c,
                                            size_t ldc);
#endif
#endif  // CAUSAL_ATTENTION_SRC_TILE_PRODUCTS_EXTERN_H_

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_TILE_PRODUCTS_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_TILE_PRODUCTS_INL_H_
#undef CAUSAL_ATTENTION_SRC_TILE_PRODUCTS_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_TILE_PRODUCTS_INL_H_
#endif

#include "hwy/highway.h"
#include "src/simd/dot-inl.h"
#include "src/gemm/few_rows-inl.h"
#include "src/gemm/matmul-inl.h"
#include "src/base/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

#if defined(CA_GEMM_SIDE_MODULE) && HWY_TARGET == HWY_WASM
#define CA_RELAXED_TILES 1
#else
#define CA_RELAXED_TILES 0
#endif

// The kernels of one call (see the file comment). Arguments as the kernels
// of dot-inl.h and matmul-inl.h take them. Inlined: a call per tile out of
// line costs the forward and the backward measurably (docs/performance.md).
struct TileProducts {
  bool relaxed =
      CA_RELAXED_TILES && ActiveGemmKernel() == GemmKernel::kRelaxedSimd;

#if HWY_TARGET != HWY_SCALAR
  HWY_INLINE void Dot(const float* a, size_t lda, size_t rows, const float* b,
                      size_t ldb, size_t nb, size_t depth,
                      const float* zero_row, float* c, size_t ldc) const {
#if CA_RELAXED_TILES
    if (relaxed) {
      return ca_dot_tile_relaxed(a, lda, rows, b, ldb, nb, depth, zero_row, c,
                                 ldc);
    }
#endif
    DotTile(a, lda, rows, b, ldb, nb, depth, zero_row, c, ldc);
  }
#endif

  HWY_INLINE void AddRagged(const float* a, size_t lda, size_t rows,
                            const size_t* ends, const float* b, size_t ldb,
                            size_t ncols, float* c, size_t ldc) const {
#if CA_RELAXED_TILES
    if (relaxed) {
      return ca_add_ragged_relaxed(a, lda, rows, ends, b, ldb, ncols, c, ldc);
    }
#endif
    MatMulAddRagged(a, lda, rows, ends, b, ldb, ncols, c, ldc);
  }

  // The transposed orientation's tiles (forward_transposed-inl.h):
  // LaneScores and LaneValuesRagged of matmul-inl.h.
  HWY_INLINE void Scores(size_t kn, size_t depth, const float* k, size_t ldk,
                         const float* qt, size_t lanes, float* s,
                         size_t stride) const {
#if CA_RELAXED_TILES
    if (relaxed) {
      return ca_lane_scores_relaxed(kn, depth, k, ldk, qt, lanes, s, stride);
    }
#endif
    LaneScores(kn, depth, k, ldk, qt, lanes, s, stride);
  }

  HWY_INLINE void Values(const float* pt, size_t rows, const size_t* ends,
                         const float* v, size_t ldv, size_t ncols, float* o,
                         size_t ldo, size_t stride) const {
#if CA_RELAXED_TILES
    if (relaxed) {
      return ca_lane_values_relaxed(pt, rows, ends, v, ldv, ncols, o, ldo,
                                    stride);
    }
#endif
    LaneValuesRagged(pt, rows, ends, v, ldv, ncols, o, ldo, stride);
  }

  HWY_INLINE void AddRaggedBegin(const float* a, size_t lda, size_t rows,
                                 const size_t* begins, size_t end,
                                 const float* b, size_t ldb, size_t ncols,
                                 float* c, size_t ldc) const {
#if CA_RELAXED_TILES
    if (relaxed) {
      return ca_add_ragged_begin_relaxed(a, lda, rows, begins, end, b, ldb,
                                         ncols, c, ldc);
    }
#endif
    MatMulAddRaggedBegin(a, lda, rows, begins, end, b, ldb, ncols, c, ldc);
  }

  // A decode step's GQA group of four query rows (few_rows-inl.h): Q·Kᵀ of a
  // key tile (DotFourRows; on bfloat16 keys widened in registers,
  // DotFourRowsBf16) and P·V (MatMulAddFourRows).
#if HWY_TARGET != HWY_SCALAR
  HWY_INLINE void DotFour(const float* a, size_t lda, const float* b,
                          size_t ldb, size_t nb, size_t depth,
                          const float* zero_row, float* c, size_t ldc) const {
#if CA_RELAXED_TILES
    if (relaxed) {
      return ca_decode_dot4_relaxed(a, lda, b, ldb, nb, depth, zero_row, c,
                                    ldc);
    }
#endif
    DotFourRows(a, lda, b, ldb, nb, depth, zero_row, c, ldc);
  }
#endif

#if HWY_TARGET == HWY_WASM
  HWY_INLINE void DotFourBf16(const float* a, size_t lda, const uint8_t* b,
                              size_t row_bytes, size_t nb, size_t depth,
                              const void* zero_row, float* c,
                              size_t ldc) const {
#if CA_RELAXED_TILES
    if (relaxed) {
      return ca_decode_dot4_bf16_relaxed(a, lda, b, row_bytes, nb, depth,
                                         zero_row, c, ldc);
    }
#endif
    DotFourRowsBf16(a, lda, b, row_bytes, nb, depth, zero_row, c, ldc);
  }
#endif

  HWY_INLINE void AddFour(const float* a, size_t lda, size_t depth,
                          const float* b, size_t ldb, size_t ncols, float* c,
                          size_t ldc) const {
#if CA_RELAXED_TILES
    if (relaxed) {
      return ca_decode_pv4_relaxed(a, lda, depth, b, ldb, ncols, c, ldc);
    }
#endif
    MatMulAddFourRows(a, lda, depth, b, ldb, ncols, c, ldc);
  }
};

#undef CA_RELAXED_TILES

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
