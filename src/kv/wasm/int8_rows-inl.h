// A decode step's GQA group of four query rows on an int8 KV cache
// (kv_storage.h: int8 values, a float scale per block of kInt8Block = 32
// values of a row) in integer arithmetic, SIMD128 only (other targets run
// src/kv/int8_rows-inl.h's portable copy, bit for bit the same results;
// include that header, which chooses): i32x4.dot_i16x8_s
// does 8 multiply-adds per instruction where float32 needs a mul and an
// add per 4 (no FMA in Node 20). The float32 route dequantised each tile
// into a workspace and ran the float32 kernels: slower than a float32 cache.
//
// Prefill blocks (precision 'int8', more than 8 rows) share each tile's
// packing instead: DotRowsInt8Packed and ValuesRowsInt8Packed at the end.
//
// Shapes: 4 query rows of depth d (a multiple of 16) against nb <= 64 key
// rows; P·V: 4 rows of nb weights against nb value rows of width dv (a
// multiple of 16).
// Passes:
//   1. QuantizeQueryRows (once per work item): each query row to int16 with
//      one scale per row, s_q = max|q| / 32767 (round to nearest even).
//   2. DotFourRowsInt8 (Q·Kᵀ per tile): per key and block of 32 values,
//      int8 keys widened to int16, dot_i16x8 with each query row, summed in
//      int32 (|sum| <= 32 · 127 · 32767 < 2^27: no overflow), converted at
//      the block's end and scaled by the key's block scale; each score times
//      s_q at the end.
//   3. ValuesFourRowsInt8 (P·V per tile): each weight times its value row's
//      block scale, w = p · s_v, quantised to int16 per (query row, column
//      block) over the tile against the bound max p · max s_v (scale
//      bound / 32767); two keys' 8 values interleaved and widened to int16
//      pairs, dot_i16x8 with the pair of weights: 8 multiply-adds per
//      instruction. int32 sums over at most 64 keys: |sum| <= 64 · 32767 ·
//      127 < 2^28 (no overflow below 516 keys); then converted and added to
//      the float accumulators once per tile.
// Accuracy: besides the cache's own rounding, the int16 queries and weights
// carry a rounding of 2^-16 of their row's (or tile's bound) largest
// magnitude: against the float64 reference on the stored values, 0.6-2.4e-6
// of 1 + |ref| at D 128 on N(0, 1) data (tests/node/kv-dtype.test.mjs
// asserts 1e-5); a token with values 200x the others' makes every weight of
// its tiles coarser (the bound max p · max s): 2.0e-4 of the output's
// largest value (the test prints it and asserts 1e-3).
// Faster than dequantising each tile into float32 (bench/studies/ab.mjs
// --decode; docs/performance.md). Deterministic: every result depends on its own row, key and
// tile only (tiles are fixed: chunks of the split decode are multiples of
// 64 keys), so the bits do not depend on thread count or chunking.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_KV_WASM_INT8_ROWS_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_KV_WASM_INT8_ROWS_INL_H_
#undef CAUSAL_ATTENTION_SRC_KV_WASM_INT8_ROWS_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_KV_WASM_INT8_ROWS_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmath>

#include "hwy/highway.h"
#include "src/kv/int8_rows-inl.h"  // Int8Queries, kInt16Max, LargestMagnitude
#include "src/kv/wasm/packed_tiles-inl.h"  // RoundedInt16, the packed tiles' loops
#include "src/kv/kv_storage.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_WASM


// x[0, n) · inv rounded to nearest even, as int16 (|x · inv| <= 32767; n
// a multiple of 8; RoundedInt16).
HWY_INLINE void RoundToInt16(const float* HWY_RESTRICT x, size_t n, float inv,
                             int16_t* HWY_RESTRICT out) {
  const v128_t vi = wasm_f32x4_splat(inv);
  for (size_t i = 0; i < n; i += 8) {
    const v128_t a = wasm_f32x4_mul(wasm_v128_load(x + i), vi);
    const v128_t b = wasm_f32x4_mul(wasm_v128_load(x + i + 4), vi);
    wasm_v128_store(out + i, RoundedInt16(a, b));
  }
}

// Pass 1: rows [0, rows) of q (stride ldq, d values) into out (rows of d
// int16 values, then rows scales), each within ±limit (<= 32767). Returns
// false (nothing usable) when a query value is not finite: the float32
// route then gives the NaN rows.
HWY_INLINE bool QuantizeQueryRows(const float* HWY_RESTRICT q, size_t ldq,
                                  size_t rows, size_t d, int16_t* HWY_RESTRICT
                                      out, float* HWY_RESTRICT scale,
                                  float limit = kInt16Max) {
  for (size_t r = 0; r < rows; ++r) {
    const float m = LargestMagnitude(q + r * ldq, d);
    if (!(m == m)) return false;
    scale[r] = m / limit;
    RoundToInt16(q + r * ldq, d, m > 0.0f ? limit / m : 0.0f,
                 out + r * d);
  }
  return true;
}

// The i32x4 lanes [sum(a), sum(b), sum(c), sum(d)].
HWY_INLINE v128_t SumOfFourI32(v128_t a, v128_t b, v128_t c, v128_t d) {
  const v128_t ab = wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 1, 5),
                                   wasm_i32x4_shuffle(a, b, 2, 6, 3, 7));
  const v128_t cd = wasm_i32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 1, 5),
                                   wasm_i32x4_shuffle(c, d, 2, 6, 3, 7));
  return wasm_i32x4_add(wasm_i64x2_shuffle(ab, cd, 0, 2),
                        wasm_i64x2_shuffle(ab, cd, 1, 3));
}

// acc[t][r] (= if kFirst) += the products of query row r and key t's
// values [x, x + 16) (kr[t]: the key's stored row), two dots each.
template <bool kFirst>
HWY_INLINE void AddKeyProducts(const Int8Queries& qi, size_t d,
                               const uint8_t* const* kr, size_t x,
                               v128_t (*acc)[4]) {
  v128_t kv[2][2];
  for (size_t t = 0; t < 2; ++t) {
    const v128_t raw = wasm_v128_load(kr[t] + x);
    kv[t][0] = wasm_i16x8_extend_low_i8x16(raw);
    kv[t][1] = wasm_i16x8_extend_high_i8x16(raw);
  }
  for (size_t r = 0; r < 4; ++r) {
    const int16_t* qr = qi.q + r * d + x;
    const v128_t q0 = wasm_v128_load(qr), q1 = wasm_v128_load(qr + 8);
    for (size_t t = 0; t < 2; ++t) {
      const v128_t sum = wasm_i32x4_add(wasm_i32x4_dot_i16x8(q0, kv[t][0]),
                                        wasm_i32x4_dot_i16x8(q1, kv[t][1]));
      acc[t][r] = kFirst ? sum : wasm_i32x4_add(acc[t][r], sum);
    }
  }
}

// Pass 2: c[r][j] = (query row r) · key j for r < 4 and the stored int8 key
// rows k + j·row_bytes, j < nb (written up to a multiple of 2). d is a
// multiple of 16. Two keys at a time share each query load.
HWY_NOINLINE inline void DotFourRowsInt8(const Int8Queries& qi,
                                         const uint8_t* HWY_RESTRICT k,
                                         size_t row_bytes, size_t nb, size_t d,
                                         float* HWY_RESTRICT c, size_t ldc) {
  for (size_t j = 0; j < nb; j += 2) {
    const uint8_t* kr[2] = {k + j * row_bytes,
                            k + (j + 1 < nb ? j + 1 : j) * row_bytes};
    v128_t score[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
    for (size_t b0 = 0; b0 < d; b0 += kInt8Block) {
      const size_t b1 = HWY_MIN(b0 + kInt8Block, d);
      // The block's 16 or 32 values, 16 at a time (so that keys, sums and
      // queries fit x86's 16 vector registers).
      v128_t acc[2][4];
      AddKeyProducts<true>(qi, d, kr, b0, acc);
      if (b1 - b0 > 16) AddKeyProducts<false>(qi, d, kr, b0 + 16, acc);
      for (size_t t = 0; t < 2; ++t) {
        const v128_t sum =
            SumOfFourI32(acc[t][0], acc[t][1], acc[t][2], acc[t][3]);
        const v128_t ks = wasm_v128_load32_splat(
            kr[t] + d + b0 / kInt8Block * sizeof(float));
        score[t] = wasm_f32x4_add(
            score[t], wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sum), ks));
      }
    }
    // Lanes r of score[t]: row r's score of key j + t.
    const v128_t qs = wasm_v128_load(qi.scale);
    const v128_t s0 = wasm_f32x4_mul(score[0], qs);
    const v128_t s1 = wasm_f32x4_mul(score[1], qs);
    const v128_t lo = wasm_i32x4_shuffle(s0, s1, 0, 4, 1, 5);  // rows 0, 1
    const v128_t hi = wasm_i32x4_shuffle(s0, s1, 2, 6, 3, 7);  // rows 2, 3
    wasm_v128_store64_lane(c + j, lo, 0);
    wasm_v128_store64_lane(c + ldc + j, lo, 1);
    wasm_v128_store64_lane(c + 2 * ldc + j, hi, 0);
    wasm_v128_store64_lane(c + 3 * ldc + j, hi, 1);
  }
}

// A prefill block's key tile: rows k + j·row_bytes (j < nb; nb - 1 repeated
// up to a multiple of 8) as int16 pairs along d interleaved across keys (x86
// VNNI's layout), kp[(x / 2)·64 + j][2] = (k_j[x], k_j[x + 1]), and the block
// scales ks[b·64 + j]: one dot_i16x8 of a query pair splat gives four keys'
// partial sums in four lanes, no horizontal sum. 64·(2d + 4·blocks) bytes.
HWY_INLINE void PackKeyTileInt8(const uint8_t* HWY_RESTRICT k,
                                size_t row_bytes, size_t nb, size_t d,
                                int16_t* HWY_RESTRICT kp,
                                float* HWY_RESTRICT ks) {
  const size_t n8 = (nb + 7) & ~size_t{7};
  for (size_t j = 0; j < n8; j += 4) {
    const uint8_t* r[4];
    for (size_t t = 0; t < 4; ++t) r[t] = k + HWY_MIN(j + t, nb - 1) * row_bytes;
    for (size_t x = 0; x < d; x += 16) {
      const v128_t a = wasm_v128_load(r[0] + x), b = wasm_v128_load(r[1] + x);
      const v128_t c = wasm_v128_load(r[2] + x), e = wasm_v128_load(r[3] + x);
      // 16-bit units are pairs: (a0 b0 a1 b1 ...), then 32-bit: pairs 0-1
      // of the four keys, 2-3, ...
      const v128_t ab0 = wasm_i16x8_shuffle(a, b, 0, 8, 1, 9, 2, 10, 3, 11);
      const v128_t ab1 = wasm_i16x8_shuffle(a, b, 4, 12, 5, 13, 6, 14, 7, 15);
      const v128_t ce0 = wasm_i16x8_shuffle(c, e, 0, 8, 1, 9, 2, 10, 3, 11);
      const v128_t ce1 = wasm_i16x8_shuffle(c, e, 4, 12, 5, 13, 6, 14, 7, 15);
      const v128_t u[4] = {wasm_i32x4_shuffle(ab0, ce0, 0, 4, 1, 5),
                           wasm_i32x4_shuffle(ab0, ce0, 2, 6, 3, 7),
                           wasm_i32x4_shuffle(ab1, ce1, 0, 4, 1, 5),
                           wasm_i32x4_shuffle(ab1, ce1, 2, 6, 3, 7)};
      int16_t* dst = kp + (x / 2 * kPackedKeys + j) * 2;
      for (size_t t = 0; t < 4; ++t) {
        wasm_v128_store(dst + 2 * t * kPackedKeys * 2,
                        wasm_i16x8_extend_low_i8x16(u[t]));
        wasm_v128_store(dst + (2 * t + 1) * kPackedKeys * 2,
                        wasm_i16x8_extend_high_i8x16(u[t]));
      }
    }
  }
  const size_t blocks = (d + kInt8Block - 1) / kInt8Block;
  for (size_t j = 0; j < n8; ++j) {
    const uint8_t* src = k + HWY_MIN(j, nb - 1) * row_bytes + d;
    for (size_t b = 0; b < blocks; ++b) {
      memcpy(ks + b * kPackedKeys + j, src + b * sizeof(float), sizeof(float));
    }
  }
}

// Pass 2, `rows` (a multiple of 4) rows: c[r][j], j < nb (written up to a
// multiple of 8), 4 rows × 8 keys of int32 sums in registers; work (16-byte
// aligned): PackKeyTileInt8's bytes, then 8·d (a group's query pairs). The
// same integer sums and float operations as DotFourRowsInt8: the same bits.
HWY_NOINLINE inline void DotRowsInt8Packed(const Int8Queries& qi, size_t rows,
                                           const uint8_t* HWY_RESTRICT k,
                                           size_t row_bytes, size_t nb,
                                           size_t d, void* work,
                                           float* HWY_RESTRICT c, size_t ldc) {
  int16_t* kp = static_cast<int16_t*>(work);
  float* ks = reinterpret_cast<float*>(kp + d * kPackedKeys);
  // A group's four query rows, pair by pair: qg[x / 2][r] (32-bit pairs).
  uint32_t* qg = reinterpret_cast<uint32_t*>(
      ks + (d + kInt8Block - 1) / kInt8Block * kPackedKeys);
  PackKeyTileInt8(k, row_bytes, nb, d, kp, ks);
  DotPackedKeyTile(qi, rows, kp, ks, (nb + 7) & ~size_t{7}, d, qg, c, ldc);
}

// c[r][j, j + 8) += sum_{i < n} wq[r][i] · v_i[j, j + 8) in int32 for the
// four rows r of wq (row stride ldw, whole pairs of weights as one 32-bit
// lane each: an odd n's row holds a zero weight past its last key), then
// times scale[r] into c (float, stride ldc). Two
// keys' 8 values interleaved byte by byte and widened: the int16 pairs
// (v_i[c], v_i+1[c]) that dot_i16x8 multiplies with (w_i, w_i+1).
HWY_INLINE void AccumulateInt8(const int16_t* HWY_RESTRICT wq, size_t ldw,
                               const float* scale, size_t n,
                               const uint8_t* HWY_RESTRICT v, size_t row_bytes,
                               size_t j, float* HWY_RESTRICT c, size_t ldc) {
  v128_t acc[4][2];
  for (size_t r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = wasm_i32x4_splat(0);
  // Keys (i, i + 1) at va and vb, their weights at w.
  const auto step = [&](const uint8_t* va, const uint8_t* vb,
                        const int16_t* w) {
    const v128_t a = wasm_v128_load64_zero(va);
    const v128_t b = wasm_v128_load64_zero(vb);
    const v128_t ab = wasm_i8x16_shuffle(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4,
                                         20, 5, 21, 6, 22, 7, 23);
    const v128_t x0 = wasm_i16x8_extend_low_i8x16(ab);
    const v128_t x1 = wasm_i16x8_extend_high_i8x16(ab);
    for (size_t r = 0; r < 4; ++r) {
      const v128_t wr = wasm_v128_load32_splat(w + r * ldw);
      acc[r][0] = wasm_i32x4_add(acc[r][0], wasm_i32x4_dot_i16x8(x0, wr));
      acc[r][1] = wasm_i32x4_add(acc[r][1], wasm_i32x4_dot_i16x8(x1, wr));
    }
  };
  // Stepped pointers over the whole pairs (no multiply or clamp per key:
  // V8 computes those addresses at every step), then an odd tile's last
  // pair, which reads its key twice (the weight of the second is 0).
  const uint8_t* va = v + j;
  const int16_t* wi = wq;
  for (const int16_t* const w_end = wq + n / 2 * 2; wi != w_end;
       wi += 2, va += 2 * row_bytes) {
    step(va, va + row_bytes, wi);
  }
  if (n % 2) step(va, va, wi);
  for (size_t r = 0; r < 4; ++r) {
    const v128_t s = wasm_f32x4_splat(scale[r]);
    for (size_t u = 0; u < 2; ++u) {
      float* o = c + r * ldc + j + 4 * u;
      wasm_v128_store(
          o, wasm_f32x4_add(wasm_v128_load(o),
                            wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc[r][u]),
                                           s)));
    }
  }
}

// Pass 3: c[r][0, dv) += sum_{i < n} p[r][i] · v_i for four rows of p
// (stride ldp, at least 64 floats each, p >= 0) and the stored int8 value
// rows v + i·row_bytes, 0 < n <= 64; dv a multiple of 16. work: 16-byte
// aligned, (blocks · 788 + 1024) bytes for blocks = ceil(dv / 32) (within a
// 64-row float tile of dv values). Returns false (nothing done) when a value
// block's scale is not finite (a stored NaN or Inf): the float32 route then
// gives its NaN.
// The weight of key i in column block b, p_i · s_ib, is quantised against
// the bound max_i p_i · max_i s_ib (the row's largest weight times the
// block's largest scale) rather than its own largest magnitude: one
// multiply per weight instead of a pass for each (row, block)'s maximum.
HWY_NOINLINE inline bool ValuesFourRowsInt8(const float* HWY_RESTRICT p,
                                            size_t ldp, size_t n,
                                            const uint8_t* HWY_RESTRICT v,
                                            size_t row_bytes, size_t dv,
                                            void* work, float* HWY_RESTRICT c,
                                            size_t ldc) {
  constexpr size_t kMaxKeys = 64;
  const size_t blocks = (dv + kInt8Block - 1) / kInt8Block;
  const size_t n8 = (n + 7) & ~size_t{7};  // <= 64: p's rows hold 64
  float* sv = static_cast<float*>(work);        // [blocks][64] value scales
  float* pr = sv + blocks * kMaxKeys;           // [4][64] p, zero past n
  float* wscale = pr + 4 * kMaxKeys;            // [blocks][4]
  float* smax = wscale + 4 * blocks;            // [blocks]
  int16_t* wq = reinterpret_cast<int16_t*>(smax + blocks);  // [4·blocks][64]
  // The tile's value scales by block (zeros past n), checked and maxed:
  // four blocks of four keys at a time, transposed in registers (the
  // scalar loop of 4·64 loads per tile cost a tenth of the step).
  size_t b4 = 0;
  if (blocks % 4 == 0 && n % 4 == 0) {
    const v128_t big = wasm_f32x4_splat(3.4e38f);
    v128_t finite = wasm_i32x4_splat(-1);
    for (; b4 < blocks; b4 += 4) {
      v128_t m = wasm_f32x4_splat(0.0f);
      for (size_t i = 0; i < n; i += 4) {
        const uint8_t* src = v + i * row_bytes + dv + b4 * sizeof(float);
        v128_t x[4];
        for (size_t t = 0; t < 4; ++t) {
          x[t] = wasm_v128_load(src + t * row_bytes);  // key i + t's blocks
          finite = wasm_v128_and(finite, wasm_f32x4_le(x[t], big));
          m = wasm_f32x4_pmax(m, x[t]);
        }
        const v128_t lo01 = wasm_i32x4_shuffle(x[0], x[1], 0, 4, 1, 5);
        const v128_t hi01 = wasm_i32x4_shuffle(x[0], x[1], 2, 6, 3, 7);
        const v128_t lo23 = wasm_i32x4_shuffle(x[2], x[3], 0, 4, 1, 5);
        const v128_t hi23 = wasm_i32x4_shuffle(x[2], x[3], 2, 6, 3, 7);
        float* dst = sv + b4 * kMaxKeys + i;
        wasm_v128_store(dst, wasm_i64x2_shuffle(lo01, lo23, 0, 2));
        wasm_v128_store(dst + kMaxKeys, wasm_i64x2_shuffle(lo01, lo23, 1, 3));
        wasm_v128_store(dst + 2 * kMaxKeys, wasm_i64x2_shuffle(hi01, hi23, 0, 2));
        wasm_v128_store(dst + 3 * kMaxKeys, wasm_i64x2_shuffle(hi01, hi23, 1, 3));
      }
      wasm_v128_store(smax + b4, m);
      for (size_t t = 0; t < 4; ++t) {
        for (size_t i = n; i < n8; ++i) sv[(b4 + t) * kMaxKeys + i] = 0.0f;
      }
    }
    if (!wasm_i32x4_all_true(finite)) return false;
  }
  for (size_t b = b4; b < blocks; ++b) {
    if (!GatherValueScales(v, dv, row_bytes, b, n, n8, sv, kMaxKeys, smax)) {
      return false;
    }
  }
  // p's rows, zero past n, and their largest values.
  const v128_t tail = wasm_i32x4_lt(
      wasm_i32x4_make(0, 1, 2, 3),
      wasm_i32x4_splat(static_cast<int32_t>(n % 4)));
  const size_t n4 = n & ~size_t{3};
  float pmax[4];
  for (size_t r = 0; r < 4; ++r) {
    const float* HWY_RESTRICT src = p + r * ldp;
    float* HWY_RESTRICT dst = pr + r * kMaxKeys;
    v128_t m = wasm_f32x4_splat(0.0f);
    size_t i = 0;
    for (; i < n4; i += 4) {
      const v128_t x = wasm_v128_load(src + i);
      wasm_v128_store(dst + i, x);
      m = wasm_f32x4_pmax(m, x);  // maxps: p is finite
    }
    if (i < n) {
      const v128_t x = wasm_v128_and(wasm_v128_load(src + i), tail);
      wasm_v128_store(dst + i, x);
      m = wasm_f32x4_pmax(m, x);
      i += 4;
    }
    if (i < n8) wasm_v128_store(dst + i, wasm_f32x4_splat(0.0f));
    m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 2, 3, 0, 1));
    m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2));
    pmax[r] = wasm_f32x4_extract_lane(m, 0);
  }
  // wq = round(p_i · s_ib · 32767 / (pmax_r · smax_b)) (RoundedInt16):
  // |.| <= 32767.
  for (size_t b = 0; b < blocks; ++b) {
    const float* HWY_RESTRICT s = sv + b * kMaxKeys;
    for (size_t r = 0; r < 4; ++r) {
      const float bound = pmax[r] * smax[b];
      float inv = kInt16Max / bound;
      if (!(bound > 0.0f) || !(inv <= 3.4e38f)) inv = 0.0f;  // all ~0
      wscale[b * 4 + r] = bound / kInt16Max;
      const v128_t vi = wasm_f32x4_splat(inv);
      const float* HWY_RESTRICT x = pr + r * kMaxKeys;
      int16_t* HWY_RESTRICT out = wq + (b * 4 + r) * kMaxKeys;
      for (size_t i = 0; i < n8; i += 8) {
        const v128_t lo = wasm_f32x4_mul(
            wasm_f32x4_mul(wasm_v128_load(x + i), wasm_v128_load(s + i)), vi);
        const v128_t hi = wasm_f32x4_mul(
            wasm_f32x4_mul(wasm_v128_load(x + i + 4),
                           wasm_v128_load(s + i + 4)),
            vi);
        wasm_v128_store(out + i, RoundedInt16(lo, hi));
      }
    }
  }
  for (size_t j = 0; j < dv; j += 8) {
    const size_t b = j / kInt8Block;
    AccumulateInt8(wq + b * 4 * kMaxKeys, kMaxKeys, wscale + b * 4, n, v,
                   row_bytes, j, c, ldc);
  }
  return true;
}

// Pass 3, `rows` (a multiple of 4) rows of p: ValuesFourRowsInt8's
// arithmetic (the same bits), the value tile packed once for all rows as
// int16 key pairs along the columns, vp[(i / 2)·dv + x][2] = (v_i[x],
// v_i+1[x]) (an odd n's last key repeated, weight 0), its scales checked
// once. work: 16-byte aligned, 128·dv + 788·blocks bytes. Returns false
// (nothing done) when a value block's scale is not finite.
HWY_NOINLINE inline bool ValuesRowsInt8Packed(
    const float* HWY_RESTRICT p, size_t ldp, size_t rows, size_t n,
    const uint8_t* HWY_RESTRICT v, size_t row_bytes, size_t dv, void* work,
    float* HWY_RESTRICT c, size_t ldc) {
  const size_t n2 = (n + 1) & ~size_t{1};
  PackedValueWork w;
  if (!PreparePackedValues(work, v, dv, row_bytes, n, &w)) return false;
  int16_t* vp = w.vp;
  for (size_t i = 0; i < n2; i += 2) {
    const uint8_t* a = v + i * row_bytes;
    const uint8_t* e = v + HWY_MIN(i + 1, n - 1) * row_bytes;
    int16_t* dst = vp + i * dv;  // (i / 2)·dv pairs
    for (size_t x = 0; x < dv; x += 16) {
      const v128_t ra = wasm_v128_load(a + x), re = wasm_v128_load(e + x);
      const v128_t lo = wasm_i8x16_shuffle(ra, re, 0, 16, 1, 17, 2, 18, 3, 19,
                                           4, 20, 5, 21, 6, 22, 7, 23);
      const v128_t hi = wasm_i8x16_shuffle(ra, re, 8, 24, 9, 25, 10, 26, 11,
                                           27, 12, 28, 13, 29, 14, 30, 15, 31);
      wasm_v128_store(dst + 2 * x, wasm_i16x8_extend_low_i8x16(lo));
      wasm_v128_store(dst + 2 * x + 8, wasm_i16x8_extend_high_i8x16(lo));
      wasm_v128_store(dst + 2 * x + 16, wasm_i16x8_extend_low_i8x16(hi));
      wasm_v128_store(dst + 2 * x + 24, wasm_i16x8_extend_high_i8x16(hi));
    }
  }
  ValuesPackedTile(p, ldp, rows, n, vp, w.sv, w.smax, dv, kInt16Max, w.wq,
                   w.wscale, c, ldc);
  return true;
}

#endif  // HWY_TARGET == HWY_WASM

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
