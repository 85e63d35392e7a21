// Microkernels for tiles of one or two query rows, the shape of a decode
// step without grouped heads (one new token per head: GPT-2's 12 heads each
// read their own keys), and of four (a GQA group of four query heads per
// KV head, as Llama 3's: all four against one read of each key tile). The
// general kernels (dot-inl.h, matmul-inl.h) keep 8 accumulators by blocking
// over rows; with one row they would keep 2 to 4 dependent chains and wait on
// add latency, so these block over keys (scores) and output columns (P·V)
// instead. Compiled once per SIMD target.

#include <stddef.h>
#include <stdint.h>

#include "src/gemm/matmul.h"

#if defined(CA_GEMM_SIDE_MODULE) && !defined(CA_DECODE_RELAXED_DECLARED_)
#define CA_DECODE_RELAXED_DECLARED_
// The relaxed-SIMD side module's DotFourRows, DotFourRowsBf16 and
// MatMulAddFourRows
// (src/gemm/matmul_relaxed.cc; stubs where the engine lacks relaxed SIMD, never
// called then: see cmake/gemm_side_library.cmake).
extern "C" void ca_decode_dot4_relaxed(const float* a, size_t lda,
                                       const float* b, size_t ldb, size_t nb,
                                       size_t depth, const float* zero_row,
                                       float* c, size_t ldc);
extern "C" void ca_decode_dot4_bf16_relaxed(const float* a, size_t lda,
                                            const uint8_t* b, size_t row_bytes,
                                            size_t nb, size_t depth,
                                            const void* zero_row, float* c,
                                            size_t ldc);
extern "C" void ca_decode_pv4_relaxed(const float* a, size_t lda, size_t depth,
                                      const float* b, size_t ldb, size_t ncols,
                                      float* c, size_t ldc);
#endif

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_FEW_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_FEW_ROWS_INL_H_
#undef CAUSAL_ATTENTION_SRC_FEW_ROWS_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_FEW_ROWS_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>

#include "hwy/highway.h"
#include "src/simd/dot-inl.h"
#include "src/base/simd-inl.h"

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

// c[r][j] = a_r · b_j for four rows of a and the rows b[0, nb) (written up
// to a multiple of 2; a missing row reads `zero_row`): a decode step's GQA
// group of four query heads against one read of each key row, two keys at
// a time (eight accumulators, the sums of DotMicrokernel's order: the same
// bits in SIMD128). DotTile would read each key tile twice, once per pair
// of rows. Its own function, so that profiles name it, and the relaxed-SIMD
// side module exports it (src/gemm/matmul_relaxed.cc: one f32x4.relaxed_madd per
// product instead of a mul and an add).
HWY_NOINLINE inline void DotFourRows(const float* HWY_RESTRICT a, size_t lda,
                                     const float* HWY_RESTRICT b, size_t ldb,
                                     size_t nb, size_t depth,
                                     const float* zero_row,
                                     float* HWY_RESTRICT c, size_t ldc) {
  const DF df;
  const size_t N = hn::Lanes(df);
  using V = hn::Vec<DF>;
  const hn::Full64<float> d2;
  for (size_t j = 0; j < nb; j += 2) {
    const float* HWY_RESTRICT b0 = b + j * ldb;
    const float* HWY_RESTRICT b1 = j + 1 < nb ? b0 + ldb : zero_row;
    V acc[4][2];
    for (size_t r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = hn::Zero(df);
    for (size_t x = 0; x < depth; x += N) {
      const V k0 = hn::LoadU(df, b0 + x);
      const V k1 = hn::LoadU(df, b1 + x);
      for (size_t r = 0; r < 4; ++r) {
        const V q = hn::LoadU(df, a + r * lda + x);
        acc[r][0] = MulAddRelaxed(q, k0, acc[r][0]);
        acc[r][1] = MulAddRelaxed(q, k1, acc[r][1]);
      }
    }
    for (size_t r = 0; r < 4; r += 2) {
      const auto s =
          SumOfFour(df, acc[r][0], acc[r][1], acc[r + 1][0], acc[r + 1][1]);
      hn::StoreU(hn::LowerHalf(d2, s), d2, c + r * ldc + j);
      hn::StoreU(hn::UpperHalf(d2, s), d2, c + (r + 1) * ldc + j);
    }
  }
}

#if HWY_TARGET == HWY_WASM
// DotFourRows on keys stored as bfloat16 rows (kv_storage.h: row_bytes
// apart; missing keys read `zero_row`, at least 2·depth zero bytes), each
// 8-value load widened in registers by a zip with zeros instead of
// through a float32 copy of the tile. depth is a multiple of 8. The same
// lanes in the same order as DotFourRows on the converted tile: the same
// bits.
HWY_NOINLINE inline void DotFourRowsBf16(const float* HWY_RESTRICT a,
                                         size_t lda,
                                         const uint8_t* HWY_RESTRICT b,
                                         size_t row_bytes, size_t nb,
                                         size_t depth, const void* zero_row,
                                         float* HWY_RESTRICT c, size_t ldc) {
  const hn::Full128<float> df;
  const hn::Full128<uint16_t> du16;
  const hn::Full128<uint32_t> du32;
  const hn::Full64<float> d2;
  using V = hn::Vec<decltype(df)>;
  const auto zero = hn::Zero(du16);
  for (size_t j = 0; j < nb; j += 2) {
    const uint16_t* HWY_RESTRICT b0 =
        reinterpret_cast<const uint16_t*>(b + j * row_bytes);
    const uint16_t* HWY_RESTRICT b1 =
        j + 1 < nb ? reinterpret_cast<const uint16_t*>(b + (j + 1) * row_bytes)
                   : static_cast<const uint16_t*>(zero_row);
    V acc[4][2];
    for (size_t r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = hn::Zero(df);
    for (size_t x = 0; x < depth; x += 8) {
      const auto h0 = hn::LoadU(du16, b0 + x);
      const auto h1 = hn::LoadU(du16, b1 + x);
      const V k0[2] = {hn::BitCast(df, hn::ZipLower(du32, zero, h0)),
                       hn::BitCast(df, hn::ZipUpper(du32, zero, h0))};
      const V k1[2] = {hn::BitCast(df, hn::ZipLower(du32, zero, h1)),
                       hn::BitCast(df, hn::ZipUpper(du32, zero, h1))};
      for (size_t h = 0; h < 2; ++h) {
        for (size_t r = 0; r < 4; ++r) {
          const V q = hn::LoadU(df, a + r * lda + x + 4 * h);
          acc[r][0] = MulAddRelaxed(q, k0[h], acc[r][0]);
          acc[r][1] = MulAddRelaxed(q, k1[h], acc[r][1]);
        }
      }
    }
    for (size_t r = 0; r < 4; r += 2) {
      const auto s =
          SumOfFour(df, acc[r][0], acc[r][1], acc[r + 1][0], acc[r + 1][1]);
      hn::StoreU(hn::LowerHalf(d2, s), d2, c + r * ldc + j);
      hn::StoreU(hn::UpperHalf(d2, s), d2, c + (r + 1) * ldc + j);
    }
  }
}
#endif  // HWY_TARGET == HWY_WASM
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
    // Ends on a's address, not on a counter (StridedMicrokernel says why).
    for (const float* ai = a, *const a_end = a + depth; ai != a_end;
         ++ai, bp += ldb) {
      V bv[NV];
      for (size_t v = 0; v < NV; ++v) bv[v] = hn::LoadU(df, bp + v * N);
      for (size_t r = 0; r < MR; ++r) {
        const V av = hn::Set(df, ai[r * lda]);
        for (size_t v = 0; v < NV; ++v) {
          acc[r][v] = MulAddRelaxed(av, bv[v], acc[r][v]);
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
// a multiple of PanelWidth(), two vectors), down the rows of b 16 at a
// time, so that every pass reads a block of rows while it is in L1 (column
// passes over a whole tile walk down its rows a row's stride apart, which
// the hardware prefetcher does not foresee: see MatMulAddFourRows). Each c
// element sums its terms in row order: the same bits for any blocking.
template <size_t MR>
HWY_INLINE void MatMulAddFewRows(const float* HWY_RESTRICT a, size_t lda,
                                 size_t depth, const float* HWY_RESTRICT b,
                                 size_t ldb, size_t ncols,
                                 float* HWY_RESTRICT c, size_t ldc) {
  constexpr size_t kWide = 8 / MR;
  constexpr size_t kRows = 16;
  const size_t wide =
      ncols / (kWide * hn::Lanes(DF())) * kWide * hn::Lanes(DF());
  for (size_t i = 0; i < depth; i += kRows) {
    const size_t n = HWY_MIN(kRows, depth - i);
    AccumulateRows<MR, kWide>(a + i, lda, n, b + i * ldb, ldb, wide, c, ldc);
    AccumulateRows<MR, 2>(a + i, lda, n, b + i * ldb + wide, ldb,
                          ncols - wide, c + wide, ldc);
  }
}

// c[r] += a[r][0, depth) · b for four rows sharing their depth (a decode
// step's GQA group: P·V over the tile's keys), ncols a multiple of
// PanelWidth(). Down the value rows 16 at a time, each block of rows
// (8 KiB at head size 128) read by both row pairs and every column pass
// while it is in L1: column passes over all 64 rows of a tile walk down the
// rows at a 512-byte stride, which made P·V much slower than Q·Kᵀ. Each c
// element still sums its terms in key order:
// the bits of MatMulAddRagged. Its own function, which the relaxed-SIMD
// side module exports too.
HWY_NOINLINE inline void MatMulAddFourRows(const float* HWY_RESTRICT a,
                                           size_t lda, size_t depth,
                                           const float* HWY_RESTRICT b,
                                           size_t ldb, size_t ncols,
                                           float* HWY_RESTRICT c, size_t ldc) {
  constexpr size_t kKeys = 16;  // the value rows one pass walks down
  for (size_t i = 0; i < depth; i += kKeys) {
    const size_t n = HWY_MIN(kKeys, depth - i);
    MatMulAddFewRows<2>(a + i, lda, n, b + i * ldb, ldb, ncols, c, ldc);
    MatMulAddFewRows<2>(a + 2 * lda + i, lda, n, b + i * ldb, ldb, ncols,
                        c + 2 * ldc, ldc);
  }
}

#if HWY_TARGET == HWY_WASM
// c[r][j, j + 16) += sum_{i < depth} a[r][i] · v_i[j, j + 16) for r < 2
// (8 columns: the last pass when 16 do not fit, Wide false), the value rows
// stored as bfloat16 (row_bytes apart) and widened as read: interleaved
// with zeros (z), the pattern of punpcklwd / punpckhwd, which engines emit
// as one instruction each.
template <bool Wide>
HWY_INLINE void AccumulateBf16(const float* HWY_RESTRICT a, size_t lda,
                               size_t depth, const uint8_t* HWY_RESTRICT v,
                               size_t row_bytes, size_t j,
                               float* HWY_RESTRICT c, size_t ldc) {
  constexpr size_t kVecs = Wide ? 4 : 2;
  const v128_t z = wasm_i32x4_splat(0);
  v128_t acc[2][kVecs];
  for (size_t r = 0; r < 2; ++r) {
    for (size_t u = 0; u < kVecs; ++u) {
      acc[r][u] = wasm_v128_load(c + r * ldc + j + 4 * u);
    }
  }
  // Ends on a's address, not on a counter (StridedMicrokernel says why).
  for (const float* ai = a, *const a_end = a + depth; ai != a_end;
       ++ai, v += row_bytes) {
    v128_t x[kVecs];
    for (size_t u = 0; u < kVecs; u += 2) {
      const v128_t h = wasm_v128_load(v + 2 * (j + 4 * u));
      x[u] = wasm_i16x8_shuffle(z, h, 0, 8, 1, 9, 2, 10, 3, 11);
      x[u + 1] = wasm_i16x8_shuffle(z, h, 4, 12, 5, 13, 6, 14, 7, 15);
    }
    for (size_t r = 0; r < 2; ++r) {
      const v128_t w = wasm_f32x4_splat(ai[r * lda]);
      for (size_t u = 0; u < kVecs; ++u) {
        acc[r][u] = wasm_f32x4_add(wasm_f32x4_mul(w, x[u]), acc[r][u]);
      }
    }
  }
  for (size_t r = 0; r < 2; ++r) {
    for (size_t u = 0; u < kVecs; ++u) {
      wasm_v128_store(c + r * ldc + j + 4 * u, acc[r][u]);
    }
  }
}

// MatMulAddFourRows on value rows stored as bfloat16 (kv_storage.h:
// row_bytes apart), each row widened in registers as a pass reads it
// instead of into a float32 copy of the tile first: c[r][0, width) +=
// sum_{i < depth} a[r][i] · v_i for four rows; width (the value width) is a
// multiple of 8. Down the value rows 16 at a time, in passes of 16 columns
// for two rows (as MatMulAddFourRows). Every c element adds its products
// in key order with a mul and an add, as MatMulAddFourRows does on the
// converted tile without relaxed SIMD: the same bits. (The same kernel for
// int8 values, converted and scaled in registers, did not beat the int8
// step's own route: not kept; docs/performance.md.)
HWY_NOINLINE inline void MatMulAddFourRowsBf16(const float* HWY_RESTRICT a,
                                               size_t lda, size_t depth,
                                               const uint8_t* HWY_RESTRICT v,
                                               size_t row_bytes, size_t width,
                                               float* HWY_RESTRICT c,
                                               size_t ldc) {
  constexpr size_t kKeys = 16;
  for (size_t i = 0; i < depth; i += kKeys) {
    const size_t n = HWY_MIN(kKeys, depth - i);
    for (size_t r = 0; r < 4; r += 2) {
      size_t j = 0;
      for (; j + 16 <= width; j += 16) {
        AccumulateBf16<true>(a + r * lda + i, lda, n, v + i * row_bytes,
                             row_bytes, j, c + r * ldc, ldc);
      }
      if (j < width) {
        AccumulateBf16<false>(a + r * lda + i, lda, n, v + i * row_bytes,
                              row_bytes, j, c + r * ldc, ldc);
      }
    }
  }
}
#endif  // HWY_TARGET == HWY_WASM

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
