// The loops that the packed prefill kernels share once their tiles are
// packed (SIMD128 only): Q·Kᵀ over a key tile packed as int16 pairs along d
// interleaved across keys, and P·V over a value tile packed as int16 key
// pairs along the columns, with that tile's workspace and value scales
// (also the int8 decode kernels' GatherValueScales). Their callers pack: src/kv/wasm/int8_rows-inl.h
// (an int8 cache's rows, widened) and src/attention/wasm/int16_rows-inl.h
// (a Precision::kInt8 call's wide rows). Inlined into each: V8 compiles
// each caller's copy as before.

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_KV_WASM_PACKED_TILES_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_KV_WASM_PACKED_TILES_INL_H_
#undef CAUSAL_ATTENTION_SRC_KV_WASM_PACKED_TILES_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_KV_WASM_PACKED_TILES_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hwy/highway.h"
#include "src/kv/int8_rows-inl.h"  // Int8Queries, kPackedKeys
#include "src/kv/kv_storage.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_WASM

// The eight values a and b (each |.| <= 32767) rounded to nearest even, as
// int16 lanes. Not through i32x4.trunc_sat_f32x4 (about eight x86
// instructions in V8): x + 1.5 · 2^23 is rounded to an integer by the add
// itself, and for |x| < 2^22 the low 16 bits of its float's mantissa are
// that integer's two's complement.
HWY_INLINE v128_t RoundedInt16(v128_t a, v128_t b) {
  const v128_t magic = wasm_f32x4_splat(12582912.0f);
  return wasm_i8x16_shuffle(wasm_f32x4_add(a, magic), wasm_f32x4_add(b, magic),
                            0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25,
                            28, 29);
}

// Four int16 rows q, q + d, q + 2d, q + 3d (d values each, d a multiple of
// 8) as pairs transposed: dst[(x / 2)·stride + r] = (q_r[x], q_r[x + 1]),
// 4·4 pairs at a time. dst 16-byte aligned, stride a multiple of 4.
HWY_INLINE void TransposeFourRowsOfPairs(const int16_t* HWY_RESTRICT q,
                                         size_t d, size_t stride,
                                         uint32_t* HWY_RESTRICT dst) {
  for (size_t x = 0; x < d; x += 8) {
    const v128_t a = wasm_v128_load(q + x), b = wasm_v128_load(q + d + x);
    const v128_t e = wasm_v128_load(q + 2 * d + x);
    const v128_t f = wasm_v128_load(q + 3 * d + x);
    const v128_t ab0 = wasm_i32x4_shuffle(a, b, 0, 4, 1, 5);
    const v128_t ab1 = wasm_i32x4_shuffle(a, b, 2, 6, 3, 7);
    const v128_t ef0 = wasm_i32x4_shuffle(e, f, 0, 4, 1, 5);
    const v128_t ef1 = wasm_i32x4_shuffle(e, f, 2, 6, 3, 7);
    uint32_t* at = dst + x / 2 * stride;
    wasm_v128_store(at, wasm_i64x2_shuffle(ab0, ef0, 0, 2));
    wasm_v128_store(at + stride, wasm_i64x2_shuffle(ab0, ef0, 1, 3));
    wasm_v128_store(at + 2 * stride, wasm_i64x2_shuffle(ab1, ef1, 0, 2));
    wasm_v128_store(at + 3 * stride, wasm_i64x2_shuffle(ab1, ef1, 1, 3));
  }
}

// c[r][j], r < rows (a multiple of 4), j < n8 (a multiple of 8): query rows
// qi against the packed key tile kp[(x / 2)·64 + j][2] = (k_j[x], k_j[x + 1])
// with block scales ks[b·64 + j]; 4 rows × 8 keys of int32 sums in
// registers. qg: 8·d bytes of scratch (a group's query pairs).
HWY_INLINE void DotPackedKeyTile(const Int8Queries& qi, size_t rows,
                                 const int16_t* HWY_RESTRICT kp,
                                 const float* HWY_RESTRICT ks, size_t n8,
                                 size_t d, uint32_t* HWY_RESTRICT qg,
                                 float* HWY_RESTRICT c, size_t ldc) {
  for (size_t r0 = 0; r0 < rows; r0 += 4) {
    TransposeFourRowsOfPairs(qi.q + r0 * d, d, 4, qg);  // the group's pairs
    float* cr = c + r0 * ldc;
    for (size_t j = 0; j < n8; j += 8) {
      for (size_t b0 = 0; b0 < d; b0 += kInt8Block) {
        const size_t b1 = HWY_MIN(b0 + kInt8Block, d);
        v128_t acc[4][2];
        for (size_t r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = wasm_i32x4_splat(0);
        // Stepped pointers: constant offsets, which V8 folds into the loads.
        const uint32_t* qx = qg + b0 / 2 * 4;
        const uint32_t* const q_end = qg + b1 / 2 * 4;
        const int16_t* kx = kp + (b0 / 2 * kPackedKeys + j) * 2;
        for (; qx < q_end; qx += 4, kx += 2 * kPackedKeys) {
          const v128_t k0 = wasm_v128_load(kx), k1 = wasm_v128_load(kx + 8);
          for (size_t r = 0; r < 4; ++r) {
            const v128_t qp = wasm_v128_load32_splat(qx + r);
            acc[r][0] = wasm_i32x4_add(acc[r][0], wasm_i32x4_dot_i16x8(qp, k0));
            acc[r][1] = wasm_i32x4_add(acc[r][1], wasm_i32x4_dot_i16x8(qp, k1));
          }
        }
        const float* kb = ks + b0 / kInt8Block * kPackedKeys + j;
        const v128_t s0 = wasm_v128_load(kb), s1 = wasm_v128_load(kb + 4);
        const bool first = b0 == 0, last = b1 == d;
        for (size_t r = 0; r < 4; ++r) {
          const v128_t qs = wasm_f32x4_splat(qi.scale[r0 + r]);
          for (size_t u = 0; u < 2; ++u) {
            float* o = cr + r * ldc + j + 4 * u;
            const v128_t block = wasm_f32x4_mul(
                wasm_f32x4_convert_i32x4(acc[r][u]), u == 0 ? s0 : s1);
            v128_t score = wasm_f32x4_add(
                first ? wasm_f32x4_splat(0.0f) : wasm_v128_load(o), block);
            if (last) score = wasm_f32x4_mul(score, qs);
            wasm_v128_store(o, score);
          }
        }
      }
    }
  }
}

// Block b's value scales of rows [0, n) (each row's float after its dv
// int8 values) into sv[b·ldsv ..], zeros up to n8, and their largest in
// smax[b]; false if one is not finite.
HWY_INLINE bool GatherValueScales(const uint8_t* HWY_RESTRICT v, size_t dv,
                                  size_t row_bytes, size_t b, size_t n,
                                  size_t n8, float* HWY_RESTRICT sv,
                                  size_t ldsv, float* HWY_RESTRICT smax) {
  const uint8_t* src = v + dv + b * sizeof(float);
  float* dst = sv + b * ldsv;
  float m = 0.0f;
  bool finite = true;
  for (size_t i = 0; i < n; ++i, src += row_bytes) {
    float x;
    memcpy(&x, src, sizeof(x));
    finite &= x <= 3.4e38f;  // scales are >= 0 or NaN
    m = HWY_MAX(m, x);
    dst[i] = x;
  }
  if (!finite) return false;
  for (size_t i = n; i < n8; ++i) dst[i] = 0.0f;
  smax[b] = m;
  return true;
}

// The packed P·V's workspace, carved from 16-byte aligned `work` of
// 128·dv + 788·blocks bytes (blocks = ceil(dv / 32)).
struct PackedValueWork {
  int16_t* vp;      // [32][dv][2]: the value tile, packed by the caller
  float* sv;        // [blocks][64]: its block scales, zeros past n
  int16_t* wq;      // [blocks][4][64]: ValuesPackedTile's weights
  float* wscale;    // [blocks][4]
  float* smax;      // [blocks]: each block's largest scale
};

// Carves `work` into *w and gathers every block's scales of rows [0, n)
// (GatherValueScales: each row's scales dv bytes past `v`); false, nothing
// usable, when one is not finite.
HWY_INLINE bool PreparePackedValues(void* work, const uint8_t* HWY_RESTRICT v,
                                    size_t dv, size_t row_bytes, size_t n,
                                    PackedValueWork* w) {
  const size_t blocks = (dv + kInt8Block - 1) / kInt8Block;
  const size_t n8 = (n + 7) & ~size_t{7};
  w->vp = static_cast<int16_t*>(work);
  w->sv = reinterpret_cast<float*>(w->vp + kPackedKeys * dv);
  w->wq = reinterpret_cast<int16_t*>(w->sv + blocks * kPackedKeys);
  w->wscale = reinterpret_cast<float*>(w->wq + blocks * 4 * kPackedKeys);
  w->smax = w->wscale + 4 * blocks;
  for (size_t b = 0; b < blocks; ++b) {
    if (!GatherValueScales(v, dv, row_bytes, b, n, n8, w->sv, kPackedKeys,
                           w->smax)) {
      return false;
    }
  }
  return true;
}

// c[r][0, dv) += sum_{i < n} p[r][i] · v_i, r < rows (a multiple of 4; p's
// stride ldp, at least 64 floats a row, p >= 0) over the packed value tile
// vp[(i / 2)·dv + x][2] = (v_i[x], v_i+1[x]) with block scales sv[b·64 + i]
// (zeros past n) and their largest smax[b]: each weight p_i · s_ib rounded
// to an integer within ±limit against the bound max_i p_i · smax_b.
// wq ([blocks][4][64] int16) and wscale ([blocks][4]): scratch.
HWY_INLINE void ValuesPackedTile(const float* HWY_RESTRICT p, size_t ldp,
                                 size_t rows, size_t n,
                                 const int16_t* HWY_RESTRICT vp,
                                 const float* HWY_RESTRICT sv,
                                 const float* HWY_RESTRICT smax, size_t dv,
                                 float limit, int16_t* HWY_RESTRICT wq,
                                 float* HWY_RESTRICT wscale,
                                 float* HWY_RESTRICT c, size_t ldc) {
  constexpr size_t kMaxKeys = kPackedKeys;
  const size_t blocks = (dv + kInt8Block - 1) / kInt8Block;
  const size_t n2 = (n + 1) & ~size_t{1};
  const size_t n8 = (n + 7) & ~size_t{7};
  const v128_t tail = wasm_i32x4_lt(
      wasm_i32x4_make(0, 1, 2, 3),
      wasm_i32x4_splat(static_cast<int32_t>(n % 4)));
  const size_t n4 = n & ~size_t{3};
  for (size_t r0 = 0; r0 < rows; r0 += 4) {
    // The rows' weights (ValuesFourRowsInt8: p zero past n, its maximum).
    for (size_t r = 0; r < 4; ++r) {
      const float* HWY_RESTRICT src = p + (r0 + r) * ldp;
      v128_t m = wasm_f32x4_splat(0.0f);
      for (size_t i = 0; i < n4; i += 4) {
        m = wasm_f32x4_pmax(m, wasm_v128_load(src + i));
      }
      if (n4 < n) {
        m = wasm_f32x4_pmax(m, wasm_v128_and(wasm_v128_load(src + n4), tail));
      }
      m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 2, 3, 0, 1));
      m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2));
      const float pmax = wasm_f32x4_extract_lane(m, 0);
      for (size_t b = 0; b < blocks; ++b) {
        const float bound = pmax * smax[b];
        float inv = limit / bound;
        if (!(bound > 0.0f) || !(inv <= 3.4e38f)) inv = 0.0f;  // all ~0
        wscale[b * 4 + r] = bound / limit;
        const v128_t vi = wasm_f32x4_splat(inv);
        const float* HWY_RESTRICT sb = sv + b * kMaxKeys;
        int16_t* HWY_RESTRICT out = wq + (b * 4 + r) * kMaxKeys;
        for (size_t i = 0; i < n8; i += 8) {
          v128_t x0 = wasm_v128_load(src + i), x1 = wasm_v128_load(src + i + 4);
          if (i + 4 > n) x0 = wasm_v128_and(x0, i + 4 - n >= 4 ? wasm_i32x4_splat(0) : tail);
          if (i + 8 > n) x1 = i + 4 >= n ? wasm_i32x4_splat(0) : wasm_v128_and(x1, tail);
          const v128_t lo = wasm_f32x4_mul(
              wasm_f32x4_mul(x0, wasm_v128_load(sb + i)), vi);
          const v128_t hi = wasm_f32x4_mul(
              wasm_f32x4_mul(x1, wasm_v128_load(sb + i + 4)), vi);
          wasm_v128_store(out + i, RoundedInt16(lo, hi));
        }
      }
    }
    for (size_t x = 0; x < dv; x += 8) {
      const size_t b = x / kInt8Block;
      const int16_t* w = wq + b * 4 * kMaxKeys;
      v128_t acc[4][2];
      for (size_t r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = wasm_i32x4_splat(0);
      // Stepped pointers: constant offsets, which V8 folds into the loads.
      const int16_t* vx = vp + 2 * x;
      const int16_t* const w_end = w + n2;
      for (; w < w_end; w += 2, vx += 2 * dv) {
        const v128_t v0 = wasm_v128_load(vx), v1 = wasm_v128_load(vx + 8);
        for (size_t r = 0; r < 4; ++r) {
          const v128_t wp = wasm_v128_load32_splat(w + r * kMaxKeys);
          acc[r][0] = wasm_i32x4_add(acc[r][0], wasm_i32x4_dot_i16x8(v0, wp));
          acc[r][1] = wasm_i32x4_add(acc[r][1], wasm_i32x4_dot_i16x8(v1, wp));
        }
      }
      for (size_t r = 0; r < 4; ++r) {
        const v128_t s = wasm_f32x4_splat(wscale[b * 4 + r]);
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
}

#endif  // HWY_TARGET == HWY_WASM

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
