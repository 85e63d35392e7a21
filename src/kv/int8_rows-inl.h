// The integer route of a decode step's query rows (GQA groups of four, and
// one row at a time: MHA's lone row, a group's remainder) on an
// int8 KV cache (kv_storage.h: int8 values, a float scale per block of
// kInt8Block = 32 values of a row), portable: plain C++ that performs the
// same integer and float operations as the SIMD128 kernels of
// src/kv/wasm/int8_rows-inl.h, in the same order, so that every target gives
// their bits (tests/native/kv/int8_rows_test.cc compares both with
// tests/data/int8-rows-golden.json, which the wasm kernels wrote). The
// passes, shapes, bounds and accuracy are those of the wasm file's top
// comment:
//   1. QuantizeQueryRowsRef: query rows to int16, one scale per row.
//   2. DotRowsInt8Ref (1 to 4 rows): Q·Kᵀ per tile, int32 sums per block
//      of 32 values times the key's block scale, float sums over blocks,
//      times s_q.
//   3. ValuesRowsInt8Ref (1 to 4 rows): P·V per tile, weights p · s_v
//      rounded to int16 against the bound max p · max s_v, int32 sums over
//      the tile's keys, times the bound / 32767, added to the float output.
// Integer sums are exact (the wasm file's bounds: no overflow), so their
// order is free; the float operations are one per statement, in the wasm
// kernels' order, in functions where no compiler contracts a multiply and an
// add into one fused multiply-add (CA_INT8_REF_NO_CONTRACT): SIMD128 has no
// FMA, and gcc contracts across statements by default (-ffp-contract=fast,
// with -std=c++17 too) on the targets that have one.
// This header chooses: QuantizeQueryRows, DotFourRowsInt8,
// ValuesFourRowsInt8, DotFewRowsInt8 and ValuesFewRowsInt8 (1 to 3 rows:
// MHA's lone row, a group's remainder; src/kv/wasm/int8_one_row-inl.h) (and
// the prefill blocks' DotRowsInt8Packed and ValuesRowsInt8Packed: the same
// arithmetic, the key or value tile packed once for all rows; here four rows
// at a time through the kernels above)
// are the SIMD128 kernels on wasm and these elsewhere
// (native targets, so that ctest, the sanitizers and the fuzzer run the
// route); kInt8IntegerRoute says whether the current target takes the route.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_KV_INT8_ROWS_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_KV_INT8_ROWS_INL_H_
#undef CAUSAL_ATTENTION_SRC_KV_INT8_ROWS_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_KV_INT8_ROWS_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmath>

#include "hwy/highway.h"
#include "src/kv/kv_storage.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// A group's query rows as DotFourRowsInt8 reads them: rows of d int16
// values (q + r·d) and each row's scale (scale[r]).
struct Int8Queries {
  const int16_t* q;
  const float* scale;
};

// Whether the current target runs an int8 cache's decode groups on the
// integer route (ChooseRoute, src/attention/decode_route-inl.h): wasm with
// its SIMD128 kernels, the other vector targets with the portable ones
// below. HWY_SCALAR keeps
// the float32 tile route: its ScoreKeyTile is the one-lane transposed-tile
// kernel, without the four-row kernels' branches.
constexpr bool kInt8IntegerRoute = HWY_TARGET != HWY_SCALAR;

constexpr float kInt16Max = 32767.0f;
// Keys per packed key tile (DotRowsInt8Packed: a forward tile's keys).
constexpr size_t kPackedKeys = 64;

// The portable kernels' attributes: not inlined (called once per tile or
// work item), and, under gcc, compiled with -ffp-contract=off, which an
// always-inline function would not keep inside its caller. clang contracts
// within one expression only (its default, -ffp-contract=on); the pragma
// at the top of each body keeps that off too.
#if defined(__GNUC__) && !defined(__clang__)
#define CA_INT8_REF_NO_CONTRACT \
  HWY_NOINLINE inline __attribute__((optimize("fp-contract=off")))
#define CA_INT8_REF_CONTRACT_OFF
#else
#define CA_INT8_REF_NO_CONTRACT HWY_NOINLINE inline
#define CA_INT8_REF_CONTRACT_OFF _Pragma("clang fp contract(off)")
#endif

// x (|x| <= 32767) rounded to nearest even, as the wasm kernels' RoundedInt16
// does it: x + 1.5 · 2^23 is rounded to an integer by the add itself, and for
// |x| < 2^22 the low 16 bits of its float's mantissa are that integer's two's
// complement.
HWY_INLINE int16_t RoundedInt16Ref(float x) {
  const float shifted = x + 12582912.0f;
  uint32_t bits;
  memcpy(&bits, &shifted, sizeof(bits));
  return static_cast<int16_t>(static_cast<uint16_t>(bits & 0xFFFFu));
}

// Largest |x[i]| for i < n, or NaN when some x[i] is not finite (both
// routes).
HWY_INLINE float LargestMagnitude(const float* HWY_RESTRICT x, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) return std::nanf("");
    m = HWY_MAX(m, std::fabs(x[i]));
  }
  return m;
}

// Pass 1: rows [0, rows) of q (stride ldq, d values, d a multiple of 8) into
// out (rows of d int16 values) and scale[rows]: scale = max|q| / limit, out =
// round(q · (limit / max|q|)) (0 for an all-zero row); limit <= 32767. Returns false
// (nothing usable) when a query value is not finite: the float32 route then
// gives the NaN rows.
CA_INT8_REF_NO_CONTRACT bool QuantizeQueryRowsRef(const float* HWY_RESTRICT q,
                                                  size_t ldq, size_t rows,
                                                  size_t d,
                                                  int16_t* HWY_RESTRICT out,
                                                  float* HWY_RESTRICT scale,
                                                  float limit = kInt16Max) {
  CA_INT8_REF_CONTRACT_OFF
  for (size_t r = 0; r < rows; ++r) {
    const float* HWY_RESTRICT x = q + r * ldq;
    const float m = LargestMagnitude(x, d);
    if (!(m == m)) return false;
    scale[r] = m / limit;
    const float inv = m > 0.0f ? limit / m : 0.0f;
    for (size_t i = 0; i < d; ++i) {
      const float scaled = x[i] * inv;
      out[r * d + i] = RoundedInt16Ref(scaled);
    }
  }
  return true;
}

// Pass 2: c[r][j] = (query row r) · key j for r < 4 and the stored int8 key
// rows k + j·row_bytes, j < nb (written up to a multiple of 2: an odd nb's
// last column repeats key nb - 1, as the wasm kernel's pairs do). d is a
// multiple of 16. Per block of 32 values: the exact int32 sum of the int16
// query times the int8 key values, converted, times the key's block scale
// and added to the score (0 first); the score times the row's scale last.
// DotRowsInt8Ref takes rows r < `rows` (1 to 4; the remainder rows of a
// group that is not a multiple of four): each row's scores are the same
// operations on its own query row, so the same bits as in a group of four.
CA_INT8_REF_NO_CONTRACT void DotRowsInt8Ref(const Int8Queries& qi, size_t rows,
                                            const uint8_t* HWY_RESTRICT k,
                                            size_t row_bytes, size_t nb,
                                            size_t d, float* HWY_RESTRICT c,
                                            size_t ldc) {
  CA_INT8_REF_CONTRACT_OFF
  const size_t written = (nb + 1) & ~size_t{1};
  for (size_t j = 0; j < written; ++j) {
    const uint8_t* kr = k + (j < nb ? j : nb - 1) * row_bytes;
    const int8_t* kv = reinterpret_cast<const int8_t*>(kr);
    for (size_t r = 0; r < rows; ++r) {
      const int16_t* qr = qi.q + r * d;
      float score = 0.0f;
      for (size_t b0 = 0; b0 < d; b0 += kInt8Block) {
        const size_t b1 = HWY_MIN(b0 + kInt8Block, d);
        int32_t sum = 0;
        for (size_t x = b0; x < b1; ++x) {
          sum += static_cast<int32_t>(qr[x]) * static_cast<int32_t>(kv[x]);
        }
        float ks;
        memcpy(&ks, kr + d + b0 / kInt8Block * sizeof(float), sizeof(ks));
        const float block = static_cast<float>(sum) * ks;
        score = score + block;
      }
      c[r * ldc + j] = score * qi.scale[r];
    }
  }
}

// Pass 3: c[r][0, dv) += sum_{i < n} p[r][i] · v_i for four rows of p
// (stride ldp, p >= 0 and finite) and the stored int8 value rows v +
// i·row_bytes, 0 < n <= 64; dv a multiple of 16. work: (blocks · 788 +
// 1024) bytes for blocks = ceil(dv / 32), 4-byte aligned. Returns false
// (nothing done) when a value block's scale in the tile is not finite (or
// above 3.4e38): the float32 route then gives its NaN.
// The weight of key i in column block b, p_i · s_ib, is rounded to int16
// against the bound max_i p_i · max_i s_ib (wscale = bound / 32767); per
// column, the exact int32 sum of weights times int8 values, converted, times
// wscale and added to c.
// ValuesRowsInt8Ref takes rows r < `rows` (1 to 4): a row's weights are
// quantised against its own largest weight and the tile's value scales, so
// each row's output has the same bits as in a group of four.
CA_INT8_REF_NO_CONTRACT bool ValuesRowsInt8Ref(
    const float* HWY_RESTRICT p, size_t ldp, size_t rows, size_t n,
    const uint8_t* HWY_RESTRICT v, size_t row_bytes, size_t dv, void* work,
    float* HWY_RESTRICT c, size_t ldc) {
  CA_INT8_REF_CONTRACT_OFF
  constexpr size_t kMaxKeys = 64;
  const size_t blocks = (dv + kInt8Block - 1) / kInt8Block;
  float* sv = static_cast<float*>(work);  // [blocks][64] value scales
  float* smax = sv + blocks * kMaxKeys;   // [blocks]
  int16_t* wq = reinterpret_cast<int16_t*>(smax + blocks);       // [4][64]
  int32_t* acc = reinterpret_cast<int32_t*>(wq + 4 * kMaxKeys);  // [4][32]
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* src = v + dv + b * sizeof(float);
    float m = 0.0f;
    for (size_t i = 0; i < n; ++i, src += row_bytes) {
      float x;
      memcpy(&x, src, sizeof(x));
      if (!(x <= 3.4e38f)) return false;  // scales are >= 0 or NaN
      m = HWY_MAX(m, x);
      sv[b * kMaxKeys + i] = x;
    }
    smax[b] = m;
  }
  float pmax[4];  // rows <= 4
  for (size_t r = 0; r < rows; ++r) {
    float m = 0.0f;
    for (size_t i = 0; i < n; ++i) m = HWY_MAX(m, p[r * ldp + i]);
    pmax[r] = m;
  }
  for (size_t b = 0; b < blocks; ++b) {
    const size_t j0 = b * kInt8Block;
    const size_t j1 = HWY_MIN(j0 + kInt8Block, dv);
    const float* HWY_RESTRICT s = sv + b * kMaxKeys;
    float wscale[4];
    for (size_t r = 0; r < rows; ++r) {
      const float bound = pmax[r] * smax[b];
      float inv = kInt16Max / bound;
      if (!(bound > 0.0f) || !(inv <= 3.4e38f)) inv = 0.0f;  // all ~0
      wscale[r] = bound / kInt16Max;
      for (size_t i = 0; i < n; ++i) {
        const float weight = p[r * ldp + i] * s[i];
        const float scaled = weight * inv;
        wq[r * kMaxKeys + i] = RoundedInt16Ref(scaled);
      }
    }
    for (size_t r = 0; r < rows; ++r) {
      int32_t* HWY_RESTRICT a = acc + r * kInt8Block;
      for (size_t x = 0; x < j1 - j0; ++x) a[x] = 0;
      for (size_t i = 0; i < n; ++i) {
        const int32_t w = wq[r * kMaxKeys + i];
        const int8_t* vi = reinterpret_cast<const int8_t*>(v + i * row_bytes);
        for (size_t x = 0; x < j1 - j0; ++x) {
          a[x] += w * static_cast<int32_t>(vi[j0 + x]);
        }
      }
      float* HWY_RESTRICT o = c + r * ldc + j0;
      for (size_t x = 0; x < j1 - j0; ++x) {
        const float term = static_cast<float>(a[x]) * wscale[r];
        o[x] = o[x] + term;
      }
    }
  }
  return true;
}

// The four-row group's kernels (the golden files' and the SIMD128 kernels'
// shapes).
HWY_INLINE void DotFourRowsInt8Ref(const Int8Queries& qi,
                                   const uint8_t* HWY_RESTRICT k,
                                   size_t row_bytes, size_t nb, size_t d,
                                   float* HWY_RESTRICT c, size_t ldc) {
  DotRowsInt8Ref(qi, 4, k, row_bytes, nb, d, c, ldc);
}
HWY_INLINE bool ValuesFourRowsInt8Ref(const float* HWY_RESTRICT p, size_t ldp,
                                      size_t n, const uint8_t* HWY_RESTRICT v,
                                      size_t row_bytes, size_t dv, void* work,
                                      float* HWY_RESTRICT c, size_t ldc) {
  return ValuesRowsInt8Ref(p, ldp, 4, n, v, row_bytes, dv, work, c, ldc);
}

#undef CA_INT8_REF_NO_CONTRACT
#undef CA_INT8_REF_CONTRACT_OFF

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

// The SIMD128 kernels (compiled for wasm only).
#include "src/kv/wasm/int8_rows-inl.h"
#include "src/kv/wasm/int8_one_row-inl.h"

#if HWY_TARGET != HWY_WASM
HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// The route's entry points elsewhere: the portable kernels.
HWY_INLINE bool QuantizeQueryRows(const float* HWY_RESTRICT q, size_t ldq,
                                  size_t rows, size_t d,
                                  int16_t* HWY_RESTRICT out,
                                  float* HWY_RESTRICT scale,
                                  float limit = kInt16Max) {
  return QuantizeQueryRowsRef(q, ldq, rows, d, out, scale, limit);
}
HWY_INLINE void DotFourRowsInt8(const Int8Queries& qi,
                                const uint8_t* HWY_RESTRICT k, size_t row_bytes,
                                size_t nb, size_t d, float* HWY_RESTRICT c,
                                size_t ldc) {
  DotFourRowsInt8Ref(qi, k, row_bytes, nb, d, c, ldc);
}
// Elsewhere the packed kernel's rows are DotFourRowsInt8Ref's, four at a
// time: the same integer sums and float operations, so the same bits.
HWY_INLINE void DotRowsInt8Packed(const Int8Queries& qi, size_t rows,
                                  const uint8_t* HWY_RESTRICT k,
                                  size_t row_bytes, size_t nb, size_t d,
                                  void* work, float* HWY_RESTRICT c,
                                  size_t ldc) {
  (void)work;
  for (size_t r = 0; r < rows; r += 4) {
    DotFourRowsInt8Ref({qi.q + r * d, qi.scale + r}, k, row_bytes, nb, d,
                       c + r * ldc, ldc);
  }
}
HWY_INLINE bool ValuesRowsInt8Packed(const float* HWY_RESTRICT p, size_t ldp,
                                     size_t rows, size_t n,
                                     const uint8_t* HWY_RESTRICT v,
                                     size_t row_bytes, size_t dv, void* work,
                                     float* HWY_RESTRICT c, size_t ldc) {
  // A non-finite scale fails the first group, before it adds anything.
  for (size_t r = 0; r < rows; r += 4) {
    if (!ValuesFourRowsInt8Ref(p + r * ldp, ldp, n, v, row_bytes, dv, work,
                               c + r * ldc, ldc)) {
      return false;
    }
  }
  return true;
}
HWY_INLINE bool ValuesFourRowsInt8(const float* HWY_RESTRICT p, size_t ldp,
                                   size_t n, const uint8_t* HWY_RESTRICT v,
                                   size_t row_bytes, size_t dv, void* work,
                                   float* HWY_RESTRICT c, size_t ldc) {
  return ValuesFourRowsInt8Ref(p, ldp, n, v, row_bytes, dv, work, c, ldc);
}
// The remainder rows (1 to 3) of a decode item whose rows are not a
// multiple of four (wasm: int8_one_row-inl.h, a row at a time).
HWY_INLINE void DotFewRowsInt8(const Int8Queries& qi, size_t rows,
                               const uint8_t* HWY_RESTRICT k, size_t row_bytes,
                               size_t nb, size_t d, float* HWY_RESTRICT c,
                               size_t ldc) {
  DotRowsInt8Ref(qi, rows, k, row_bytes, nb, d, c, ldc);
}
HWY_INLINE bool ValuesFewRowsInt8(const float* HWY_RESTRICT p, size_t ldp,
                                  size_t rows, size_t n,
                                  const uint8_t* HWY_RESTRICT v,
                                  size_t row_bytes, size_t dv, void* work,
                                  float* HWY_RESTRICT c, size_t ldc) {
  return ValuesRowsInt8Ref(p, ldp, rows, n, v, row_bytes, dv, work, c, ldc);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();
#endif  // HWY_TARGET != HWY_WASM

#endif  // per-target include guard
