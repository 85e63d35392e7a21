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
  const size_t n2 = (n + 1) & ~size_t{1};
  // Wide rows: the scales follow 2·dv bytes (PreparePackedValues reads them
  // dv bytes past its row pointer).
  PackedValueWork w;
  if (!PreparePackedValues(work, v + dv, dv, row_bytes, n, &w)) return false;
  int16_t* vp = w.vp;
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
  ValuesPackedTile(p, ldp, rows, n, vp, w.sv, w.smax, dv, kWideWeightMax, w.wq,
                   w.wscale, c, ldc);
  return true;
}

#endif  // HWY_TARGET == HWY_WASM

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
