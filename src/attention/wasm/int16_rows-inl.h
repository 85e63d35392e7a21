// The integer kernels of a Precision::kInt8 forward on its wide rows
// (int8_operands.h), SIMD128 only: src/attention/int16_rows-inl.h's passes
// and bounds, the same integer sums and float operations in the same order
// (other targets run that file's portable copy; include it, which chooses).
// The layouts and loops are src/kv/wasm/packed_tiles-inl.h's, which the
// int8 cache's packed prefill kernels share (they widen int8 values to int16
// while packing): here the int16 values are packed as they are.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_ATTENTION_WASM_INT16_ROWS_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_ATTENTION_WASM_INT16_ROWS_INL_H_
#undef CAUSAL_ATTENTION_SRC_ATTENTION_WASM_INT16_ROWS_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_ATTENTION_WASM_INT16_ROWS_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hwy/highway.h"
#include "src/attention/int16_rows-inl.h"
#include "src/gemm/matmul-inl.h"  // kLaneStride
#include "src/kv/wasm/packed_tiles-inl.h"  // the packed tiles' loops

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_WASM

// A key tile of wide rows k + j·row_bytes (j < nb; nb - 1 repeated up to a
// multiple of 8) as int16 pairs along d interleaved across keys,
// kp[(x / 2)·64 + j][2] = (k_j[x], k_j[x + 1]), and the block scales
// ks[b·64 + j]. 64·(2d + 4·blocks) bytes.
HWY_INLINE void PackWideKeyTile(const uint8_t* HWY_RESTRICT k,
                                size_t row_bytes, size_t nb, size_t d,
                                int16_t* HWY_RESTRICT kp,
                                float* HWY_RESTRICT ks) {
  const size_t n8 = (nb + 7) & ~size_t{7};
  for (size_t j = 0; j < n8; j += 4) {
    const uint8_t* r[4];
    for (size_t t = 0; t < 4; ++t) r[t] = k + HWY_MIN(j + t, nb - 1) * row_bytes;
    for (size_t x = 0; x < d; x += 8) {  // four pairs of each of four keys
      const v128_t a = wasm_v128_load(r[0] + 2 * x);
      const v128_t b = wasm_v128_load(r[1] + 2 * x);
      const v128_t c = wasm_v128_load(r[2] + 2 * x);
      const v128_t e = wasm_v128_load(r[3] + 2 * x);
      const v128_t ab0 = wasm_i32x4_shuffle(a, b, 0, 4, 1, 5);
      const v128_t ab1 = wasm_i32x4_shuffle(a, b, 2, 6, 3, 7);
      const v128_t ce0 = wasm_i32x4_shuffle(c, e, 0, 4, 1, 5);
      const v128_t ce1 = wasm_i32x4_shuffle(c, e, 2, 6, 3, 7);
      int16_t* dst = kp + (x / 2 * kPackedKeys + j) * 2;
      wasm_v128_store(dst, wasm_i64x2_shuffle(ab0, ce0, 0, 2));
      wasm_v128_store(dst + 2 * kPackedKeys, wasm_i64x2_shuffle(ab0, ce0, 1, 3));
      wasm_v128_store(dst + 4 * kPackedKeys, wasm_i64x2_shuffle(ab1, ce1, 0, 2));
      wasm_v128_store(dst + 6 * kPackedKeys, wasm_i64x2_shuffle(ab1, ce1, 1, 3));
    }
  }
  const size_t blocks = (d + kInt8Block - 1) / kInt8Block;
  for (size_t j = 0; j < n8; ++j) {
    const uint8_t* src = k + HWY_MIN(j, nb - 1) * row_bytes + 2 * d;
    for (size_t b = 0; b < blocks; ++b) {
      memcpy(ks + b * kPackedKeys + j, src + b * sizeof(float), sizeof(float));
    }
  }
}

// Pass 2, `rows` (a multiple of 4) rows: c[r][j], j < nb (written up to a
// multiple of 8), 4 rows × 8 keys of int32 sums in registers; work (16-byte
// aligned): PackWideKeyTile's bytes, then 8·d (a group's query pairs).
HWY_NOINLINE inline void DotRowsWide(const Int8Queries& qi, size_t rows,
                                     const uint8_t* HWY_RESTRICT k,
                                     size_t row_bytes, size_t nb, size_t d,
                                     void* work, float* HWY_RESTRICT c,
                                     size_t ldc) {
  int16_t* kp = static_cast<int16_t*>(work);
  float* ks = reinterpret_cast<float*>(kp + d * kPackedKeys);
  // A group's four query rows, pair by pair: qg[x / 2][r] (32-bit pairs).
  uint32_t* qg = reinterpret_cast<uint32_t*>(
      ks + (d + kInt8Block - 1) / kInt8Block * kPackedKeys);
  PackWideKeyTile(k, row_bytes, nb, d, kp, ks);
  DotPackedKeyTile(qi, rows, kp, ks, (nb + 7) & ~size_t{7}, d, qg, c, ldc);
}

// The value tile of wide rows v + i·row_bytes (i < n) as int16 key pairs
// along the columns, vp[(i / 2)·dv + x][2] = (v_i[x], v_i+1[x]) (an odd n's
// last key repeated, weight 0).
HWY_INLINE void PackWideValueTile(const uint8_t* HWY_RESTRICT v,
                                  size_t row_bytes, size_t n, size_t dv,
                                  int16_t* HWY_RESTRICT vp) {
  const size_t n2 = (n + 1) & ~size_t{1};
  for (size_t i = 0; i < n2; i += 2) {
    const uint8_t* a = v + i * row_bytes;
    const uint8_t* e = v + HWY_MIN(i + 1, n - 1) * row_bytes;
    int16_t* dst = vp + i * dv;  // (i / 2)·dv pairs
    for (size_t x = 0; x < dv; x += 8) {
      const v128_t ra = wasm_v128_load(a + 2 * x);
      const v128_t re = wasm_v128_load(e + 2 * x);
      wasm_v128_store(dst + 2 * x,
                      wasm_i16x8_shuffle(ra, re, 0, 8, 1, 9, 2, 10, 3, 11));
      wasm_v128_store(dst + 2 * x + 8,
                      wasm_i16x8_shuffle(ra, re, 4, 12, 5, 13, 6, 14, 7, 15));
    }
  }
}

// Pass 3, `rows` (a multiple of 4) rows of p (stride ldp, at least 64
// floats each, p >= 0, zero past each row's own keys), the value tile packed
// once for all rows as int16 key pairs along the columns, vp[(i / 2)·dv +
// x][2] = (v_i[x], v_i+1[x]) (an odd n's last key repeated, weight 0).
// work: 16-byte aligned, 128·dv + 788·blocks bytes. Returns false (nothing
// done) when a value block's scale is not finite.
HWY_NOINLINE inline bool ValuesRowsWide(const float* HWY_RESTRICT p,
                                        size_t ldp, size_t rows, size_t n,
                                        const uint8_t* HWY_RESTRICT v,
                                        size_t row_bytes, size_t dv,
                                        void* work, float* HWY_RESTRICT c,
                                        size_t ldc) {
  // Wide rows: the scales follow 2·dv bytes (PreparePackedValues reads them
  // dv bytes past its row pointer).
  PackedValueWork w;
  if (!PreparePackedValues(work, v + dv, dv, row_bytes, n, &w)) return false;
  PackWideValueTile(v, row_bytes, n, dv, w.vp);
  ValuesPackedTile(p, ldp, rows, n, w.vp, w.sv, w.smax, dv, kWideWeightMax, w.wq,
                   w.wscale, c, ldc);
  return true;
}


// --- Queries in lanes (int16_rows-inl.h's LaneQueries) ---------------------

// lq->pairs = work: pairs[(x / 2)·kLaneStride + i] = (q_i[x], q_i[x + 1])
// for the lanes i < lq->lanes (a multiple of 4), four lanes at a time.
// work: 2·d·kLaneStride bytes, 16-byte aligned.
HWY_INLINE void PackLaneQueries(size_t d, void* work, LaneQueries* lq) {
  uint32_t* pairs = static_cast<uint32_t*>(work);
  for (size_t i = 0; i < lq->lanes; i += 4) {
    TransposeFourRowsOfPairs(lq->q + i * d, d, kLaneStride, pairs + i);
  }
  lq->pairs = pairs;
}

// Two keys' scores (wide rows kr0, kr1) for lanes [g, g + 4·kVecs): s0 and
// s1 their rows at lane g. Per block of 32 values, 2 keys × kVecs vectors of
// int32 sums in registers: each key pair splat once against the lanes'
// query pairs (constant steps: V8 folds the offsets into the loads).
template <size_t kVecs>
HWY_INLINE void ScoreLaneGroup(const LaneQueries& lq, const float* shift,
                               size_t g,
                               const uint8_t* HWY_RESTRICT kr0,
                               const uint8_t* HWY_RESTRICT kr1, size_t d,
                               float* HWY_RESTRICT s0,
                               float* HWY_RESTRICT s1) {
  for (size_t b0 = 0; b0 < d; b0 += kInt8Block) {
    const size_t b1 = HWY_MIN(b0 + kInt8Block, d);
    v128_t acc[2][kVecs];
    for (size_t u = 0; u < kVecs; ++u) {
      acc[0][u] = acc[1][u] = wasm_i32x4_splat(0);
    }
    const uint32_t* qx = lq.pairs + b0 / 2 * kLaneStride + g;
    const uint32_t* const q_end = lq.pairs + b1 / 2 * kLaneStride + g;
    const uint8_t* k0 = kr0 + 2 * b0;
    const uint8_t* k1 = kr1 + 2 * b0;
    for (; qx < q_end; qx += kLaneStride, k0 += 4, k1 += 4) {
      const v128_t a = wasm_v128_load32_splat(k0);
      const v128_t c = wasm_v128_load32_splat(k1);
      for (size_t u = 0; u < kVecs; ++u) {
        const v128_t qv = wasm_v128_load(qx + 4 * u);
        acc[0][u] = wasm_i32x4_add(acc[0][u], wasm_i32x4_dot_i16x8(qv, a));
        acc[1][u] = wasm_i32x4_add(acc[1][u], wasm_i32x4_dot_i16x8(qv, c));
      }
    }
    const size_t at = 2 * d + b0 / kInt8Block * sizeof(float);
    const v128_t ks[2] = {wasm_v128_load32_splat(kr0 + at),
                          wasm_v128_load32_splat(kr1 + at)};
    const bool first = b0 == 0, last = b1 == d;
    for (size_t t = 0; t < 2; ++t) {
      for (size_t u = 0; u < kVecs; ++u) {
        float* o = (t == 0 ? s0 : s1) + 4 * u;
        const v128_t block =
            wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc[t][u]), ks[t]);
        v128_t score = wasm_f32x4_add(
            first ? wasm_f32x4_splat(0.0f) : wasm_v128_load(o), block);
        if (last) {
          score = wasm_f32x4_mul(score, wasm_v128_load(lq.scale + g + 4 * u));
          if (shift) {
            score = wasm_f32x4_add(score, wasm_v128_load(shift + g + 4 * u));
          }
        }
        wasm_v128_store(o, score);
      }
    }
  }
}

// Pass 2 in lanes (ScoreLanesWideRef's sums and float operations, the
// shift too): s[j][i] for j < nb (written up to a multiple of 2), lanes
// i < lq.lanes (a multiple of 4), from lq.pairs (PackLaneQueries) and the
// wide key rows as stored: no key tile is packed.
HWY_NOINLINE inline void ScoreLanesWide(const LaneQueries& lq,
                                        const float* shift,
                                        const uint8_t* HWY_RESTRICT k,
                                        size_t row_bytes, size_t nb, size_t d,
                                        float* HWY_RESTRICT s, size_t lds) {
  for (size_t j = 0; j < nb; j += 2) {
    const uint8_t* kr0 = k + j * row_bytes;
    const uint8_t* kr1 = k + HWY_MIN(j + 1, nb - 1) * row_bytes;
    float* s0 = s + j * lds;
    size_t g = 0;
    for (; g + 16 <= lq.lanes; g += 16) {
      ScoreLaneGroup<4>(lq, shift, g, kr0, kr1, d, s0 + g, s0 + lds + g);
    }
    for (; g + 8 <= lq.lanes; g += 8) {
      ScoreLaneGroup<2>(lq, shift, g, kr0, kr1, d, s0 + g, s0 + lds + g);
    }
    if (g < lq.lanes) ScoreLaneGroup<1>(lq, shift, g, kr0, kr1, d, s0 + g, s0 + lds + g);
  }
}

// Pass 3 in lanes (ValuesLanesWideRef's weights, sums and float
// operations): c[i][0, dv) += sum_{j < n} p[j][i] · v_j for lanes i < lanes
// (a multiple of 4). The value tile packed once (PackWideValueTile) into
// work (ValuesRowsWide's); the weights of each column block quantised four
// lanes at a time into lane_work as pairs of keys per lane, wq[b][j / 2][i]
// = (w_ji, w_j+1,i), then [blocks][kLaneStride] scales: blocks·4224 bytes,
// 16-byte aligned. Returns false (nothing done) when a value block's scale
// is not finite.
HWY_NOINLINE inline bool ValuesLanesWide(const float* HWY_RESTRICT p,
                                         size_t ldp, size_t lanes, size_t n,
                                         const uint8_t* HWY_RESTRICT v,
                                         size_t row_bytes, size_t dv,
                                         void* work, void* lane_work,
                                         float* HWY_RESTRICT c, size_t ldc) {
  PackedValueWork w;
  if (!PreparePackedValues(work, v + dv, dv, row_bytes, n, &w)) return false;
  PackWideValueTile(v, row_bytes, n, dv, w.vp);
  const size_t blocks = (dv + kInt8Block - 1) / kInt8Block;
  const size_t n2 = (n + 1) & ~size_t{1};
  constexpr size_t kPairRows = kPackedKeys / 2 * kLaneStride;  // per block
  uint32_t* wq = static_cast<uint32_t*>(lane_work);
  float* wscale = reinterpret_cast<float*>(wq + blocks * kPairRows);
  const v128_t zero = wasm_f32x4_splat(0.0f);
  const v128_t limit = wasm_f32x4_splat(kWideWeightMax);
  const v128_t largest = wasm_f32x4_splat(3.4e38f);
  const v128_t magic = wasm_f32x4_splat(12582912.0f);
  // Each pair's two lanes' weights as one 32-bit pair (RoundedInt16's low
  // halves of lo and hi).
  const auto pair = [&](v128_t x0, v128_t x1, const float* s, v128_t inv) {
    const v128_t lo = wasm_f32x4_add(
        wasm_f32x4_mul(wasm_f32x4_mul(x0, wasm_v128_load32_splat(s)), inv),
        magic);
    const v128_t hi = wasm_f32x4_add(
        wasm_f32x4_mul(wasm_f32x4_mul(x1, wasm_v128_load32_splat(s + 1)),
                       inv),
        magic);
    return wasm_i8x16_shuffle(lo, hi, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24,
                              25, 12, 13, 28, 29);
  };
  // Stepped pointers below (no multiply per key); an odd n's last pair
  // after its loop (its second weight 0: p holds no row n).
  const size_t full = n / 2;  // whole pairs
  for (size_t g = 0; g < lanes; g += 4) {
    v128_t pmax = zero;
    const float* pj = p + g;
    for (const float* const p_end = pj + n * ldp; pj < p_end; pj += ldp) {
      pmax = wasm_f32x4_pmax(pmax, wasm_v128_load(pj));
    }
    for (size_t b = 0; b < blocks; ++b) {
      const v128_t bound = wasm_f32x4_mul(pmax, wasm_f32x4_splat(w.smax[b]));
      v128_t inv = wasm_f32x4_div(limit, bound);
      inv = wasm_v128_and(inv, wasm_v128_and(wasm_f32x4_gt(bound, zero),
                                             wasm_f32x4_le(inv, largest)));
      wasm_v128_store(wscale + b * kLaneStride + g,
                      wasm_f32x4_div(bound, limit));
      const float* sb = w.sv + b * kPackedKeys;
      uint32_t* out = wq + b * kPairRows + g;
      const float* pr = p + g;
      for (uint32_t* const out_end = out + full * kLaneStride; out < out_end;
           out += kLaneStride, pr += 2 * ldp, sb += 2) {
        wasm_v128_store(out, pair(wasm_v128_load(pr),
                                  wasm_v128_load(pr + ldp), sb, inv));
      }
      if (n % 2) wasm_v128_store(out, pair(wasm_v128_load(pr), zero, sb, inv));
    }
  }
  for (size_t r0 = 0; r0 < lanes; r0 += 4) {
    for (size_t x = 0; x < dv; x += 8) {
      const size_t b = x / kInt8Block;
      v128_t acc[4][2];
      for (size_t r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = wasm_i32x4_splat(0);
      // Stepped pointers: constant offsets, which V8 folds into the loads.
      const uint32_t* wp = wq + b * kPairRows + r0;
      const uint32_t* const w_end = wp + n2 / 2 * kLaneStride;
      const int16_t* vx = w.vp + 2 * x;
      for (; wp < w_end; wp += kLaneStride, vx += 2 * dv) {
        const v128_t v0 = wasm_v128_load(vx), v1 = wasm_v128_load(vx + 8);
        for (size_t r = 0; r < 4; ++r) {
          const v128_t pair = wasm_v128_load32_splat(wp + r);
          acc[r][0] = wasm_i32x4_add(acc[r][0], wasm_i32x4_dot_i16x8(v0, pair));
          acc[r][1] = wasm_i32x4_add(acc[r][1], wasm_i32x4_dot_i16x8(v1, pair));
        }
      }
      for (size_t r = 0; r < 4; ++r) {
        const v128_t s =
            wasm_v128_load32_splat(wscale + b * kLaneStride + r0 + r);
        for (size_t u = 0; u < 2; ++u) {
          float* o = c + (r0 + r) * ldc + x + 4 * u;
          wasm_v128_store(
              o, wasm_f32x4_add(wasm_v128_load(o),
                                wasm_f32x4_mul(
                                    wasm_f32x4_convert_i32x4(acc[r][u]), s)));
        }
      }
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
