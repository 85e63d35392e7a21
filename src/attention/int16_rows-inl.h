// The integer kernels of a Precision::kInt8 forward on its wide rows
// (int8_operands.h: int16 values, keys 13-bit and values 12-bit, a float
// scale per block of kInt8Block = 32 values), portable: plain C++ that
// performs the same integer and float operations as the SIMD128 kernels of
// src/attention/wasm/int16_rows-inl.h, in the same order, so that every
// target gives their bits (tests/data/int8-attention-golden.json, which the
// wasm build wrote). An int8 KV cache's rows keep src/kv/int8_rows-inl.h.
//
// Shapes: `rows` (a multiple of 4) query rows of depth d (a multiple of 16)
// against nb <= 64 key rows; P·V: `rows` rows of n <= 64 weights against n
// value rows of width dv (a multiple of 16).
// Passes:
//   1. QuantizeQueryRows (src/kv/int8_rows-inl.h) with limit kWideQueryMax:
//      each query row to 15 bits, s_q = max|q| / 16383 (round to nearest
//      even).
//   2. DotRowsWide (Q·Kᵀ per tile): per key and block of 32 values, the
//      int32 sum of query times key values (|sum| <= 32 · 16383 · 4095 <
//      2^31: no overflow), converted, times the key's block scale, added to
//      the score (0 first); each score times s_q at the end.
//   3. ValuesRowsWide (P·V per tile): each weight times its value row's
//      block scale, w = p · s_v, rounded to 15 bits per (query row, column
//      block) against the bound max p · max s_v (scale bound / 16383); per
//      column the int32 sum over the tile's keys (|sum| <= 64 · 16383 · 2047
//      < 2^31), converted, times the scale and added to the output.
// Accuracy (float64 reference, q, k, v N(0, 1), causal, largest |out − ref|
// over the largest |ref|): 2-4e-4 with N(0, 1) keys or keys with large
// per-channel offsets, 1-3.2e-3 with outlier key channels x50
// (int8_operands.h says where it comes from).
// Integer sums are exact, so their order is free; the float operations are
// one per statement, in the wasm kernels' order, in functions where no
// compiler contracts a multiply and an add into one fused multiply-add
// (CA_WIDE_REF_NO_CONTRACT, as src/kv/int8_rows-inl.h's).

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_ATTENTION_INT16_ROWS_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_ATTENTION_INT16_ROWS_INL_H_
#undef CAUSAL_ATTENTION_SRC_ATTENTION_INT16_ROWS_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_ATTENTION_INT16_ROWS_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hwy/highway.h"
#include "src/attention/int8_operands.h"  // WideRowValuesBytes
#include "src/kv/int8_rows-inl.h"  // Int8Queries, RoundedInt16Ref, LargestMagnitude
#include "src/kv/kv_storage.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// The 15-bit limits of the queries and the P·V weights (the sums' bounds
// above).
constexpr float kWideQueryMax = 16383.0f;
constexpr float kWideWeightMax = 16383.0f;

#if defined(__GNUC__) && !defined(__clang__)
#define CA_WIDE_REF_NO_CONTRACT \
  HWY_NOINLINE inline __attribute__((optimize("fp-contract=off")))
#define CA_WIDE_REF_CONTRACT_OFF
#else
#define CA_WIDE_REF_NO_CONTRACT HWY_NOINLINE inline
#define CA_WIDE_REF_CONTRACT_OFF _Pragma("clang fp contract(off)")
#endif

// Value x of a wide row (int16, not aligned).
HWY_INLINE int32_t WideValue(const uint8_t* HWY_RESTRICT row, size_t x) {
  int16_t v;
  memcpy(&v, row + x * sizeof(int16_t), sizeof(v));
  return v;
}

// Block b's scale of a wide row of `width` values.
HWY_INLINE float WideScale(const uint8_t* HWY_RESTRICT row, size_t width,
                           size_t b) {
  float s;
  memcpy(&s, row + internal::WideRowValuesBytes(width) + b * sizeof(float), sizeof(s));
  return s;
}

// Pass 2: c[r][j] = (query row r) · key j for r < rows and the wide key rows
// k + j·row_bytes, j < nb.
CA_WIDE_REF_NO_CONTRACT void DotRowsWideRef(const Int8Queries& qi,
                                            size_t rows,
                                            const uint8_t* HWY_RESTRICT k,
                                            size_t row_bytes, size_t nb,
                                            size_t d, float* HWY_RESTRICT c,
                                            size_t ldc) {
  CA_WIDE_REF_CONTRACT_OFF
  for (size_t j = 0; j < nb; ++j) {
    const uint8_t* kr = k + j * row_bytes;
    for (size_t r = 0; r < rows; ++r) {
      const int16_t* qr = qi.q + r * d;
      float score = 0.0f;
      for (size_t b0 = 0; b0 < d; b0 += kInt8Block) {
        const size_t b1 = HWY_MIN(b0 + kInt8Block, d);
        int32_t sum = 0;
        for (size_t x = b0; x < b1; ++x) sum += qr[x] * WideValue(kr, x);
        const float block =
            static_cast<float>(sum) * WideScale(kr, d, b0 / kInt8Block);
        score = score + block;
      }
      c[r * ldc + j] = score * qi.scale[r];
    }
  }
}

// One value block b of ValuesRowsWideRef / ValuesLanesWideRef for one row
// of weights p_i = w[i·stride], i < n: each p_i times value i's block scale,
// rounded to int16 against `bound` (the row's largest p times the tile's
// largest scale of the block), the integer sums with the block's values,
// scaled back and added to c[x] for the block's x.
CA_WIDE_REF_NO_CONTRACT void AddWideValueBlockRef(
    const float* HWY_RESTRICT w, size_t stride, float bound, size_t n,
    const uint8_t* HWY_RESTRICT v, size_t row_bytes, size_t dv, size_t b,
    int16_t* HWY_RESTRICT wq, float* HWY_RESTRICT c) {
  CA_WIDE_REF_CONTRACT_OFF
  float inv = kWideWeightMax / bound;
  if (!(bound > 0.0f) || !(inv <= 3.4e38f)) inv = 0.0f;  // all ~0
  const float wscale = bound / kWideWeightMax;
  for (size_t i = 0; i < n; ++i) {
    const float weight = w[i * stride] * WideScale(v + i * row_bytes, dv, b);
    const float scaled = weight * inv;
    wq[i] = RoundedInt16Ref(scaled);
  }
  const size_t x1 = HWY_MIN((b + 1) * kInt8Block, dv);
  for (size_t x = b * kInt8Block; x < x1; ++x) {
    int32_t sum = 0;
    for (size_t i = 0; i < n; ++i) {
      sum += wq[i] * WideValue(v + i * row_bytes, x);
    }
    const float term = static_cast<float>(sum) * wscale;
    c[x] = c[x] + term;
  }
}

// Pass 3: c[r][0, dv) += sum_{i < n} p[r][i] · v_i for r < rows (p's stride
// ldp, p >= 0 and finite) and the wide value rows v + i·row_bytes,
// 0 < n <= 64. work: 4 · blocks + 128 bytes (blocks = ceil(dv / 32)), 4-byte
// aligned. Returns false (nothing done) when a value
// block's scale in the tile is not finite (or above 3.4e38): the float32
// route then gives its NaN.
CA_WIDE_REF_NO_CONTRACT bool ValuesRowsWideRef(
    const float* HWY_RESTRICT p, size_t ldp, size_t rows, size_t n,
    const uint8_t* HWY_RESTRICT v, size_t row_bytes, size_t dv, void* work,
    float* HWY_RESTRICT c, size_t ldc) {
  CA_WIDE_REF_CONTRACT_OFF
  const size_t blocks = (dv + kInt8Block - 1) / kInt8Block;
  float* smax = static_cast<float*>(work);           // [blocks]
  int16_t* wq = reinterpret_cast<int16_t*>(smax + blocks);  // [64]
  for (size_t b = 0; b < blocks; ++b) {
    float m = 0.0f;
    for (size_t i = 0; i < n; ++i) {
      const float x = WideScale(v + i * row_bytes, dv, b);
      if (!(x <= 3.4e38f)) return false;  // scales are >= 0 or NaN
      m = HWY_MAX(m, x);
    }
    smax[b] = m;
  }
  for (size_t r = 0; r < rows; ++r) {
    const float* HWY_RESTRICT pr = p + r * ldp;
    float pmax = 0.0f;
    for (size_t i = 0; i < n; ++i) pmax = HWY_MAX(pmax, pr[i]);
    for (size_t b = 0; b < blocks; ++b) {
      AddWideValueBlockRef(pr, 1, pmax * smax[b], n, v, row_bytes, dv, b, wq,
                           c + r * ldc);
    }
  }
  return true;
}

// s[r][j] += sum_{o < n} q[r][o] · k[o][j] for r < rows, j < kn (q's
// stride ldq, k's ldk, s's lds), one product and add per statement, o in
// order: the outlier channels' part of the scores (int8_operands.h's
// OutlierChannels), the same bits on every target.
CA_WIDE_REF_NO_CONTRACT void AddOutlierScores(const float* HWY_RESTRICT q,
                                              size_t ldq, size_t rows,
                                              const float* HWY_RESTRICT k,
                                              size_t ldk, size_t n, size_t kn,
                                              float* HWY_RESTRICT s,
                                              size_t lds) {
  CA_WIDE_REF_CONTRACT_OFF
  for (size_t r = 0; r < rows; ++r) {
    float* HWY_RESTRICT sr = s + r * lds;
    for (size_t o = 0; o < n; ++o) {
      const float qo = q[r * ldq + o];
      const float* HWY_RESTRICT ko = k + o * ldk;
      for (size_t j = 0; j < kn; ++j) {
        const float product = qo * ko[j];
        sr[j] = sr[j] + product;
      }
    }
  }
}

// --- Queries in lanes (forward_lanes_int8-inl.h) ------------------------
// The same passes with a block's queries in the lanes of S and P ([key][lane]
// rows of lds floats, as forward_transposed-inl.h's float32 tiles): the
// integer sums and float operations of each score and each output are the
// ones above, in the same order; only the layout differs.

// A block's quantised queries (QuantizeQueryRows, limit kWideQueryMax):
// rows of d int16 values and their scales, zeros in the lanes past the
// block's rows up to `lanes`; wasm's kernels read `pairs` instead,
// pairs[(x / 2)·kLaneStride + i] = (q_i[x], q_i[x + 1]) (PackLaneQueries).
struct LaneQueries {
  const int16_t* q;
  const float* scale;
  const uint32_t* pairs;
  size_t lanes;
};

// Pass 2 in lanes: s[j][i] = (query i) · key j for i < lanes and the wide key
// rows k + j·row_bytes, j < nb (wasm writes up to a multiple of 2 keys),
// plus shift[i] last where shift is not null (the q·mean shift of a head
// without outlier channels, whose part comes before it).
CA_WIDE_REF_NO_CONTRACT void ScoreLanesWideRef(const LaneQueries& lq,
                                               const float* shift,
                                               const uint8_t* HWY_RESTRICT k,
                                               size_t row_bytes, size_t nb,
                                               size_t d, float* HWY_RESTRICT s,
                                               size_t lds) {
  CA_WIDE_REF_CONTRACT_OFF
  for (size_t j = 0; j < nb; ++j) {
    const uint8_t* kr = k + j * row_bytes;
    for (size_t i = 0; i < lq.lanes; ++i) {
      const int16_t* qr = lq.q + i * d;
      float score = 0.0f;
      for (size_t b0 = 0; b0 < d; b0 += kInt8Block) {
        const size_t b1 = HWY_MIN(b0 + kInt8Block, d);
        int32_t sum = 0;
        for (size_t x = b0; x < b1; ++x) sum += qr[x] * WideValue(kr, x);
        const float block =
            static_cast<float>(sum) * WideScale(kr, d, b0 / kInt8Block);
        score = score + block;
      }
      score = score * lq.scale[i];
      if (shift) score = score + shift[i];
      s[j * lds + i] = score;
    }
  }
}

// Pass 3 in lanes: c[i][0, dv) += sum_{j < n} p[j][i] · v_j for lanes
// i < lanes (a multiple of 4; p's rows of stride ldp, p >= 0, zero where a
// lane does not see the key) and the wide value rows v + j·row_bytes,
// 0 < n <= 64: ValuesRowsWideRef's weights, bounds and sums per lane.
// Returns false (nothing done) when a value block's scale in the tile is
// not finite.
CA_WIDE_REF_NO_CONTRACT bool ValuesLanesWideRef(
    const float* HWY_RESTRICT p, size_t ldp, size_t lanes, size_t n,
    const uint8_t* HWY_RESTRICT v, size_t row_bytes, size_t dv,
    float* HWY_RESTRICT c, size_t ldc) {
  CA_WIDE_REF_CONTRACT_OFF
  const size_t blocks = (dv + kInt8Block - 1) / kInt8Block;
  int16_t wq[64];
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t j = 0; j < n; ++j) {
      const float x = WideScale(v + j * row_bytes, dv, b);
      if (!(x <= 3.4e38f)) return false;  // scales are >= 0 or NaN
    }
  }
  for (size_t i = 0; i < lanes; ++i) {
    float pmax = 0.0f;
    for (size_t j = 0; j < n; ++j) pmax = HWY_MAX(pmax, p[j * ldp + i]);
    for (size_t b = 0; b < blocks; ++b) {
      float smax = 0.0f;  // the block's largest scale in the tile
      for (size_t j = 0; j < n; ++j) {
        smax = HWY_MAX(smax, WideScale(v + j * row_bytes, dv, b));
      }
      AddWideValueBlockRef(p + i, ldp, pmax * smax, n, v, row_bytes, dv, b, wq,
                           c + i * ldc);
    }
  }
  return true;
}

// AddOutlierScores in lanes: s[j][i] += sum_{o < n} q[i][o] · k[o][j] for
// i < rows, j < kn, one product and add per statement, o in order.
CA_WIDE_REF_NO_CONTRACT void AddOutlierScoresLanes(
    const float* HWY_RESTRICT q, size_t ldq, size_t rows,
    const float* HWY_RESTRICT k, size_t ldk, size_t n, size_t kn,
    float* HWY_RESTRICT s, size_t lds) {
  CA_WIDE_REF_CONTRACT_OFF
  for (size_t j = 0; j < kn; ++j) {
    float* HWY_RESTRICT sj = s + j * lds;
    for (size_t o = 0; o < n; ++o) {
      const float ko = k[o * ldk + j];
      for (size_t i = 0; i < rows; ++i) {
        const float product = q[i * ldq + o] * ko;
        sj[i] = sj[i] + product;
      }
    }
  }
}

#undef CA_WIDE_REF_NO_CONTRACT
#undef CA_WIDE_REF_CONTRACT_OFF

// dst[r][0, padded) = the values of the wide rows src + r·row_bytes for
// r < rows (value times its block's scale), zeros in [width, padded): the
// tile route's float32 rows (blocks the integer kernels do not take).
HWY_INLINE void DequantWideRows(const uint8_t* HWY_RESTRICT src, size_t rows,
                                size_t width, size_t row_bytes, size_t padded,
                                float* HWY_RESTRICT dst) {
  for (size_t r = 0; r < rows; ++r, src += row_bytes, dst += padded) {
    for (size_t x = 0; x < width; ++x) {
      dst[x] = static_cast<float>(WideValue(src, x)) *
               WideScale(src, width, x / kInt8Block);
    }
    for (size_t x = width; x < padded; ++x) dst[x] = 0.0f;
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

// The SIMD128 kernels (compiled for wasm only).
#include "src/attention/wasm/int16_rows-inl.h"

#if HWY_TARGET != HWY_WASM
HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// The entry points elsewhere: the portable kernels.
HWY_INLINE void DotRowsWide(const Int8Queries& qi, size_t rows,
                            const uint8_t* HWY_RESTRICT k, size_t row_bytes,
                            size_t nb, size_t d, void* work,
                            float* HWY_RESTRICT c, size_t ldc) {
  (void)work;
  DotRowsWideRef(qi, rows, k, row_bytes, nb, d, c, ldc);
}
HWY_INLINE bool ValuesRowsWide(const float* HWY_RESTRICT p, size_t ldp,
                               size_t rows, size_t n,
                               const uint8_t* HWY_RESTRICT v, size_t row_bytes,
                               size_t dv, void* work, float* HWY_RESTRICT c,
                               size_t ldc) {
  return ValuesRowsWideRef(p, ldp, rows, n, v, row_bytes, dv, work, c, ldc);
}
HWY_INLINE void PackLaneQueries(size_t d, void* work, LaneQueries* lq) {
  (void)d, (void)work, (void)lq;
}
HWY_INLINE void ScoreLanesWide(const LaneQueries& lq, const float* shift,
                               const uint8_t* HWY_RESTRICT k, size_t row_bytes,
                               size_t nb, size_t d, float* HWY_RESTRICT s,
                               size_t lds) {
  ScoreLanesWideRef(lq, shift, k, row_bytes, nb, d, s, lds);
}
HWY_INLINE bool ValuesLanesWide(const float* HWY_RESTRICT p, size_t ldp,
                                size_t lanes, size_t n,
                                const uint8_t* HWY_RESTRICT v,
                                size_t row_bytes, size_t dv, void* work,
                                void* lane_work, float* HWY_RESTRICT c,
                                size_t ldc) {
  (void)work, (void)lane_work;
  return ValuesLanesWideRef(p, ldp, lanes, n, v, row_bytes, dv, c, ldc);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();
#endif  // HWY_TARGET != HWY_WASM

#endif  // per-target include guard
