// Reading a bfloat16 or int8 KV cache's rows (kv_storage.h) as float32, one
// key tile at a time into a workspace the kernels then read as they read a
// float32 tile: the cache itself is never copied. bfloat16 -> float32 is a
// widen and a shift; int8 -> float32 two widens, a convert and the block's
// scale (one multiply, so the values equal LoadKvRow's exactly).

// Per-target include guard (the toggle pattern of Highway's -inl.h files).
#if defined(CAUSAL_ATTENTION_SRC_KV_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CAUSAL_ATTENTION_SRC_KV_ROWS_INL_H_
#undef CAUSAL_ATTENTION_SRC_KV_ROWS_INL_H_
#else
#define CAUSAL_ATTENTION_SRC_KV_ROWS_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hwy/highway.h"
#include "src/kv/kv_storage.h"
#include "src/base/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// Reads one byte of every 64-byte line of [src, src + bytes) and adds
// their sum to *sink (which keeps the loads): a software prefetch, which
// wasm lacks, of rows that a kernel will read next, made between the small
// steps of another kernel so that the lines arrive while it computes.
HWY_INLINE void ReadAhead(const uint8_t* HWY_RESTRICT src, size_t bytes,
                          uint32_t* HWY_RESTRICT sink) {
  uint32_t sum = 0;
  for (size_t x = 0; x < bytes; x += 64) sum += src[x];
  *sink += sum;
}

// dst[r][0, padded) = the values of the stored rows src + r·row_bytes for
// r < rows (kv_storage.h's bfloat16 or int8 rows of `width` values), zeros
// in [width, padded). In 128-bit vectors on every target (the lane order of
// a zip or a half is then the memory order): bfloat16 is a zip with zeros
// (8 values from one load, no shift); int8 16 values from one load, widened
// twice (wasm: each byte shuffled to the top of a lane and shifted back
// down), converted and scaled. Its own function: inlined into the
// forward's tile loops, V8 compiles it slower in a decode step once the
// tile loop is large (docs/performance.md).
HWY_NOINLINE inline void DequantRows(KvDtype dtype,
                                     const uint8_t* HWY_RESTRICT src,
                                     size_t rows, size_t width,
                                     size_t row_bytes, size_t padded,
                                     float* HWY_RESTRICT dst) {
#if HWY_TARGET == HWY_SCALAR
  for (size_t r = 0; r < rows; ++r, src += row_bytes, dst += padded) {
    LoadKvRow(dtype, src, width, dst);  // one lane: the oracle's loop
    if (padded > width)
      memset(dst + width, 0, (padded - width) * sizeof(float));
  }
#else
  const hn::Full128<float> d4;
  const hn::Full128<uint16_t> du16;
  const hn::Full128<uint32_t> du32;
  const hn::Full128<int8_t> di8;
  const hn::Full64<int8_t> di8h;
  const hn::Full128<int16_t> di16;
  const hn::Full64<int16_t> di16h;
  const hn::Full128<int32_t> di32;
  for (size_t r = 0; r < rows; ++r, src += row_bytes, dst += padded) {
    size_t i = 0;
    if (dtype == KvDtype::kBFloat16) {
      const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
      const auto zero = hn::Zero(du16);
      for (; i + 8 <= width; i += 8) {
        const auto v = hn::LoadU(du16, h + i);
        hn::StoreU(hn::BitCast(d4, hn::ZipLower(du32, zero, v)), d4, dst + i);
        hn::StoreU(hn::BitCast(d4, hn::ZipUpper(du32, zero, v)), d4,
                   dst + i + 4);
      }
      for (; i < width; ++i) {
        const uint32_t bits = static_cast<uint32_t>(h[i]) << 16;
        memcpy(dst + i, &bits, sizeof(float));
      }
    } else {
      const int8_t* q = reinterpret_cast<const int8_t*>(src);
      for (size_t b0 = 0; b0 < width; b0 += kInt8Block) {
        const size_t b1 = HWY_MIN(b0 + kInt8Block, width);
        float scale;
        memcpy(&scale, src + width + b0 / kInt8Block * sizeof(float),
               sizeof(scale));
        const auto vs = hn::Set(d4, scale);
        for (i = b0; i + 16 <= b1; i += 16) {
#if HWY_TARGET == HWY_WASM
          // Each byte to the top of a 32-bit lane (a shuffle with zeros),
          // shifted back down with its sign: clang 14 folds the widenings
          // below and the convert into one i16 -> f32 convert, which it
          // then does lane by lane (extract, f32.convert_i32_s, replace):
          // that made the int8 step slower than the float32 one.
          const v128_t v = wasm_v128_load(q + i);
          const v128_t z = wasm_i32x4_splat(0);
          const v128_t x[4] = {
              wasm_i8x16_shuffle(z, v, 0, 0, 0, 16, 0, 0, 0, 17, 0, 0, 0, 18,
                                 0, 0, 0, 19),
              wasm_i8x16_shuffle(z, v, 0, 0, 0, 20, 0, 0, 0, 21, 0, 0, 0, 22,
                                 0, 0, 0, 23),
              wasm_i8x16_shuffle(z, v, 0, 0, 0, 24, 0, 0, 0, 25, 0, 0, 0, 26,
                                 0, 0, 0, 27),
              wasm_i8x16_shuffle(z, v, 0, 0, 0, 28, 0, 0, 0, 29, 0, 0, 0, 30,
                                 0, 0, 0, 31)};
          for (size_t k = 0; k < 4; ++k) {
            const v128_t f = wasm_f32x4_convert_i32x4(wasm_i32x4_shr(x[k], 24));
            wasm_v128_store(dst + i + 4 * k, wasm_f32x4_mul(f, vs.raw));
          }
#else
          const auto v = hn::LoadU(di8, q + i);
          const hn::Vec<decltype(di16)> w[2] = {
              hn::PromoteTo(di16, hn::LowerHalf(di8h, v)),
              hn::PromoteTo(di16, hn::UpperHalf(di8h, v))};
          for (size_t k = 0; k < 2; ++k) {
            const auto lo = hn::PromoteTo(di32, hn::LowerHalf(di16h, w[k]));
            const auto hi = hn::PromoteTo(di32, hn::UpperHalf(di16h, w[k]));
            hn::StoreU(hn::Mul(hn::ConvertTo(d4, lo), vs), d4, dst + i + 8 * k);
            hn::StoreU(hn::Mul(hn::ConvertTo(d4, hi), vs), d4,
                       dst + i + 8 * k + 4);
          }
#endif  // HWY_TARGET == HWY_WASM
        }
        for (; i < b1; ++i) dst[i] = static_cast<float>(q[i]) * scale;
      }
    }
    if (padded > width)
      memset(dst + width, 0, (padded - width) * sizeof(float));
  }
#endif  // HWY_TARGET == HWY_SCALAR
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
