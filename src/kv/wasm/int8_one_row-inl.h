// A decode step's query rows on an int8 KV cache one row at a time, SIMD128
// only: MHA's lone row per KV head (GPT-2), and the rows of a group that is
// not a multiple of four (1 to 3 after the four-row kernels of
// int8_rows-inl.h). Other targets run src/kv/int8_rows-inl.h's portable
// DotRowsInt8Ref and ValuesRowsInt8Ref, bit for bit the same results; include
// that header, which chooses (DotFewRowsInt8, ValuesFewRowsInt8).
//
// The arithmetic is the four-row kernels' (int8_rows-inl.h's top comment:
// int16 queries and weights, exact int32 sums per block of 32 values, the
// float operations in the same order), so a row gives the bits it would give
// in a group of four; only the loops differ:
//   - DotOneRowInt8 (Q·Kᵀ per tile): four keys at a time, the query's int16
//     values shared by the four keys' dots, their block sums side by side in
//     one vector (SumOfFourI32) times the four keys' block scales.
//   - ValuesOneRowInt8 (P·V per tile): the weights of one row quantised per
//     column block as in ValuesFourRowsInt8; two keys' 16 values interleaved
//     byte by byte and widened to the int16 pairs that dot_i16x8 multiplies
//     with the pair of weights, 16 columns per pass over the tile's keys.
// The float32 route this replaces dequantised each key and value tile into
// float32 and ran the float32 kernels: more work than a float32 cache.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_KV_WASM_INT8_ONE_ROW_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_KV_WASM_INT8_ONE_ROW_INL_H_
#undef CAUSAL_ATTENTION_SRC_KV_WASM_INT8_ONE_ROW_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_KV_WASM_INT8_ONE_ROW_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>

#include "hwy/highway.h"
#include "src/kv/kv_storage.h"
#include "src/kv/wasm/int8_rows-inl.h"     // SumOfFourI32, Int8Queries
#include "src/kv/wasm/packed_tiles-inl.h"  // RoundedInt16, GatherValueScales

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_WASM

// Pass 2 for one query row (qi.q: d int16 values, qi.scale[0]): c[j] = the
// row's score of the stored int8 key row k + j·row_bytes, j < nb (written
// up to a multiple of 4: key nb - 1 repeated; c holds 64 floats). d is a
// multiple of 16.
HWY_NOINLINE inline void DotOneRowInt8(const Int8Queries& qi,
                                       const uint8_t* HWY_RESTRICT k,
                                       size_t row_bytes, size_t nb, size_t d,
                                       float* HWY_RESTRICT c) {
  const v128_t qs = wasm_f32x4_splat(qi.scale[0]);
  for (size_t j = 0; j < nb; j += 4) {
    const uint8_t* kr[4];
    for (size_t t = 0; t < 4; ++t) {
      kr[t] = k + HWY_MIN(j + t, nb - 1) * row_bytes;
    }
    v128_t score = wasm_f32x4_splat(0.0f);
    for (size_t b0 = 0; b0 < d; b0 += kInt8Block) {
      const size_t b1 = HWY_MIN(b0 + kInt8Block, d);
      v128_t acc[4];
      for (size_t x = b0; x < b1; x += 16) {
        const v128_t q0 = wasm_v128_load(qi.q + x);
        const v128_t q1 = wasm_v128_load(qi.q + x + 8);
        for (size_t t = 0; t < 4; ++t) {
          const v128_t raw = wasm_v128_load(kr[t] + x);
          const v128_t sum = wasm_i32x4_add(
              wasm_i32x4_dot_i16x8(q0, wasm_i16x8_extend_low_i8x16(raw)),
              wasm_i32x4_dot_i16x8(q1, wasm_i16x8_extend_high_i8x16(raw)));
          acc[t] = x == b0 ? sum : wasm_i32x4_add(acc[t], sum);
        }
      }
      // Lane t: key j + t's block sum, times its block scale.
      const v128_t sum = SumOfFourI32(acc[0], acc[1], acc[2], acc[3]);
      const size_t at = d + b0 / kInt8Block * sizeof(float);
      v128_t ks = wasm_v128_load32_zero(kr[0] + at);
      ks = wasm_v128_load32_lane(kr[1] + at, ks, 1);
      ks = wasm_v128_load32_lane(kr[2] + at, ks, 2);
      ks = wasm_v128_load32_lane(kr[3] + at, ks, 3);
      score = wasm_f32x4_add(score,
                             wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sum), ks));
    }
    wasm_v128_store(c + j, wasm_f32x4_mul(score, qs));
  }
}

// The tile's value scales by block, sv[b·64 + i] for keys i < n (zeros up
// to n8), and each block's largest in smax[b]; false if one is not finite.
// Two or four blocks (dv 64 or 128) and n a multiple of 4: four keys'
// scales loaded and transposed in registers (the scalar gather costs a
// load, a compare and a max per key and block); else GatherValueScales.
HWY_INLINE bool GatherScalesOneRow(const uint8_t* HWY_RESTRICT v, size_t dv,
                                   size_t row_bytes, size_t n, size_t n8,
                                   float* HWY_RESTRICT sv,
                                   float* HWY_RESTRICT smax) {
  constexpr size_t kMaxKeys = 64;
  const size_t blocks = (dv + kInt8Block - 1) / kInt8Block;
  if ((blocks == 2 || blocks == 4) && n % 4 == 0) {
    const v128_t big = wasm_f32x4_splat(3.4e38f);
    v128_t finite = wasm_i32x4_splat(-1);
    v128_t m = wasm_f32x4_splat(0.0f);  // lane b: block b's largest
    for (size_t i = 0; i < n; i += 4) {
      const uint8_t* src = v + i * row_bytes + dv;
      v128_t x[4];
      for (size_t t = 0; t < 4; ++t) {
        x[t] = blocks == 4 ? wasm_v128_load(src + t * row_bytes)
                           : wasm_v128_load64_zero(src + t * row_bytes);
        finite = wasm_v128_and(finite, wasm_f32x4_le(x[t], big));
        m = wasm_f32x4_pmax(m, x[t]);
      }
      const v128_t lo01 = wasm_i32x4_shuffle(x[0], x[1], 0, 4, 1, 5);
      const v128_t lo23 = wasm_i32x4_shuffle(x[2], x[3], 0, 4, 1, 5);
      wasm_v128_store(sv + i, wasm_i64x2_shuffle(lo01, lo23, 0, 2));
      wasm_v128_store(sv + kMaxKeys + i, wasm_i64x2_shuffle(lo01, lo23, 1, 3));
      if (blocks == 4) {
        const v128_t hi01 = wasm_i32x4_shuffle(x[0], x[1], 2, 6, 3, 7);
        const v128_t hi23 = wasm_i32x4_shuffle(x[2], x[3], 2, 6, 3, 7);
        wasm_v128_store(sv + 2 * kMaxKeys + i,
                        wasm_i64x2_shuffle(hi01, hi23, 0, 2));
        wasm_v128_store(sv + 3 * kMaxKeys + i,
                        wasm_i64x2_shuffle(hi01, hi23, 1, 3));
      }
    }
    if (!wasm_i32x4_all_true(finite)) return false;
    float lanes[4];
    wasm_v128_store(lanes, m);
    for (size_t b = 0; b < blocks; ++b) {
      smax[b] = lanes[b];
      for (size_t i = n; i < n8; ++i) sv[b * kMaxKeys + i] = 0.0f;
    }
    return true;
  }
  for (size_t b = 0; b < blocks; ++b) {
    if (!GatherValueScales(v, dv, row_bytes, b, n, n8, sv, kMaxKeys, smax)) {
      return false;
    }
  }
  return true;
}

// Pass 3 for one row of weights p[0, n) (p >= 0 and finite; p holds 64
// floats): c[0, dv) += sum_{i < n} p[i] · v_i over the stored int8 value
// rows v + i·row_bytes, 0 < n <= 64, dv a multiple of 16. work: as
// ValuesFourRowsInt8's. Returns false (nothing done) when a value block's
// scale in the tile is not finite: the float32 route then gives its NaN.
HWY_NOINLINE inline bool ValuesOneRowInt8(const float* HWY_RESTRICT p,
                                          size_t n,
                                          const uint8_t* HWY_RESTRICT v,
                                          size_t row_bytes, size_t dv,
                                          void* work, float* HWY_RESTRICT c) {
  constexpr size_t kMaxKeys = 64;
  const size_t blocks = (dv + kInt8Block - 1) / kInt8Block;
  const size_t n8 = (n + 7) & ~size_t{7};
  float* sv = static_cast<float*>(work);  // [blocks][64] value scales
  float* pr = sv + blocks * kMaxKeys;     // [64] p, zero past n
  float* smax = pr + kMaxKeys;            // [blocks]
  float* wscale = smax + blocks;          // [blocks]
  int16_t* wq = reinterpret_cast<int16_t*>(wscale + blocks);  // [blocks][64]
  if (!GatherScalesOneRow(v, dv, row_bytes, n, n8, sv, smax)) return false;
  // p, zero past n (what lies there may not be finite), and its largest.
  v128_t m = wasm_f32x4_splat(0.0f);
  for (size_t i = 0; i < n8; i += 4) {
    v128_t x = wasm_v128_load(p + i);
    if (i + 4 > n) {
      const v128_t keep = wasm_i32x4_lt(
          wasm_i32x4_make(0, 1, 2, 3),
          wasm_i32x4_splat(static_cast<int32_t>(n > i ? n - i : 0)));
      x = wasm_v128_and(x, keep);
    }
    wasm_v128_store(pr + i, x);
    m = wasm_f32x4_pmax(m, x);  // maxps: p is finite
  }
  m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 2, 3, 0, 1));
  m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2));
  const float pmax = wasm_f32x4_extract_lane(m, 0);
  // wq = round(p_i · s_ib · 32767 / (pmax · smax_b)): |.| <= 32767.
  for (size_t b = 0; b < blocks; ++b) {
    const float bound = pmax * smax[b];
    float inv = kInt16Max / bound;
    if (!(bound > 0.0f) || !(inv <= 3.4e38f)) inv = 0.0f;  // all ~0
    wscale[b] = bound / kInt16Max;
    const v128_t vi = wasm_f32x4_splat(inv);
    const float* HWY_RESTRICT s = sv + b * kMaxKeys;
    for (size_t i = 0; i < n8; i += 8) {
      const v128_t lo = wasm_f32x4_mul(
          wasm_f32x4_mul(wasm_v128_load(pr + i), wasm_v128_load(s + i)), vi);
      const v128_t hi = wasm_f32x4_mul(
          wasm_f32x4_mul(wasm_v128_load(pr + i + 4), wasm_v128_load(s + i + 4)),
          vi);
      wasm_v128_store(wq + b * kMaxKeys + i, RoundedInt16(lo, hi));
    }
  }
  for (size_t j = 0; j < dv; j += 16) {
    const size_t b = j / kInt8Block;
    const int16_t* HWY_RESTRICT w = wq + b * kMaxKeys;
    v128_t acc[4];
    for (size_t u = 0; u < 4; ++u) acc[u] = wasm_i32x4_splat(0);
    // Keys (i, i + 1) at va and ve, their weights at wi.
    const auto step = [&](const uint8_t* va, const uint8_t* ve,
                          const int16_t* wi) {
      const v128_t a = wasm_v128_load(va);
      const v128_t e = wasm_v128_load(ve);
      const v128_t lo = wasm_i8x16_shuffle(a, e, 0, 16, 1, 17, 2, 18, 3, 19, 4,
                                           20, 5, 21, 6, 22, 7, 23);
      const v128_t hi = wasm_i8x16_shuffle(a, e, 8, 24, 9, 25, 10, 26, 11, 27,
                                           12, 28, 13, 29, 14, 30, 15, 31);
      const v128_t wp = wasm_v128_load32_splat(wi);
      acc[0] = wasm_i32x4_add(
          acc[0], wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(lo), wp));
      acc[1] = wasm_i32x4_add(
          acc[1], wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(lo), wp));
      acc[2] = wasm_i32x4_add(
          acc[2], wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(hi), wp));
      acc[3] = wasm_i32x4_add(
          acc[3], wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(hi), wp));
    };
    // Stepped pointers over the whole pairs (AccumulateInt8 says why), then
    // an odd tile's last pair, which reads its key twice (the second weight
    // is 0).
    const uint8_t* va = v + j;
    const int16_t* wi = w;
    for (const int16_t* const w_end = w + n / 2 * 2; wi != w_end;
         wi += 2, va += 2 * row_bytes) {
      step(va, va + row_bytes, wi);
    }
    if (n % 2) step(va, va, wi);
    const v128_t s = wasm_f32x4_splat(wscale[b]);
    for (size_t u = 0; u < 4; ++u) {
      float* o = c + j + 4 * u;
      const v128_t term = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc[u]), s);
      wasm_v128_store(o, wasm_f32x4_add(wasm_v128_load(o), term));
    }
  }
  return true;
}

// The route's entry points for 1 to 3 rows (stride d for the queries, ldc /
// ldp for scores, weights and outputs): the one-row kernels, row by row.
HWY_INLINE void DotFewRowsInt8(const Int8Queries& qi, size_t rows,
                               const uint8_t* HWY_RESTRICT k, size_t row_bytes,
                               size_t nb, size_t d, float* HWY_RESTRICT c,
                               size_t ldc) {
  for (size_t r = 0; r < rows; ++r) {
    DotOneRowInt8({qi.q + r * d, qi.scale + r}, k, row_bytes, nb, d,
                  c + r * ldc);
  }
}
// A non-finite scale fails the first row, before anything is added.
HWY_INLINE bool ValuesFewRowsInt8(const float* HWY_RESTRICT p, size_t ldp,
                                  size_t rows, size_t n,
                                  const uint8_t* HWY_RESTRICT v,
                                  size_t row_bytes, size_t dv, void* work,
                                  float* HWY_RESTRICT c, size_t ldc) {
  for (size_t r = 0; r < rows; ++r) {
    if (!ValuesOneRowInt8(p + r * ldp, n, v, row_bytes, dv, work,
                          c + r * ldc)) {
      return false;
    }
  }
  return true;
}

#endif  // HWY_TARGET == HWY_WASM

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
