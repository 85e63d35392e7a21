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
#include "src/kv_storage.h"
#include "src/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace causal_attention {
namespace HWY_NAMESPACE {

// dst[r][0, padded) = the values of the stored rows src + r·row_bytes for
// r < rows (kv_storage.h's bfloat16 or int8 rows of `width` values), zeros
// in [width, padded).
HWY_INLINE void DequantRows(KvDtype dtype, const uint8_t* HWY_RESTRICT src,
                            size_t rows, size_t width, size_t row_bytes,
                            size_t padded, float* HWY_RESTRICT dst) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const hn::Rebind<uint16_t, DF> du16;
  const hn::RebindToUnsigned<DF> du32;
  const hn::Rebind<int8_t, DF> di8;
  const hn::RebindToSigned<DF> di32;
  for (size_t r = 0; r < rows; ++r, src += row_bytes, dst += padded) {
    size_t i = 0;
    if (dtype == KvDtype::kBFloat16) {
      const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
      for (; i + N <= width; i += N) {
        const auto wide = hn::PromoteTo(du32, hn::LoadU(du16, h + i));
        hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(wide)), df, dst + i);
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
        const auto vs = hn::Set(df, scale);
        // kInt8Block is a multiple of every target's lane count.
        for (i = b0; i + N <= b1; i += N) {
          const auto wide = hn::PromoteTo(di32, hn::LoadU(di8, q + i));
          hn::StoreU(hn::Mul(hn::ConvertTo(df, wide), vs), df, dst + i);
        }
        for (; i < b1; ++i) dst[i] = static_cast<float>(q[i]) * scale;
      }
    }
    if (padded > width) memset(dst + width, 0, (padded - width) * sizeof(float));
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
