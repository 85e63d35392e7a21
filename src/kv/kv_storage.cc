// Storing KV cache rows in their dtype, and the scalar reading of them that
// the reference uses (kv_storage.h). Appends are not the hot path of a
// decode step (one token per KV head): scalar code.

#include "src/kv/kv_storage.h"

#include <string.h>

#include <cmath>

namespace causal_attention {

uint16_t RoundToBFloat16(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof(bits));
  if (std::isnan(x)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

namespace {

// One int8 row: values, then a scale per block (kv_storage.h).
void StoreInt8Row(const float* x, size_t width, uint8_t* dst) {
  int8_t* q = reinterpret_cast<int8_t*>(dst);
  for (size_t b0 = 0; b0 < width; b0 += kInt8Block) {
    const size_t b1 = b0 + kInt8Block < width ? b0 + kInt8Block : width;
    float max_abs = 0.0f;
    bool finite = true;
    for (size_t i = b0; i < b1; ++i) {
      finite = finite && std::isfinite(x[i]);
      max_abs = std::fmax(max_abs, std::fabs(x[i]));
    }
    const float scale = finite ? max_abs / 127.0f : std::nanf("");
    for (size_t i = b0; i < b1; ++i) {
      // x / scale is in [-127, 127] up to rounding: clamp the rounding's
      // possible 127.00001. nearbyint: ties to even (the default mode).
      const float r = scale > 0.0f ? std::nearbyint(x[i] / scale) : 0.0f;
      q[i] = static_cast<int8_t>(std::fmin(127.0f, std::fmax(-127.0f, r)));
    }
    memcpy(dst + width + b0 / kInt8Block * sizeof(float), &scale,
           sizeof(scale));
  }
}

}  // namespace

void StoreKvRows(KvDtype dtype, const float* src, size_t rows, size_t width,
                 void* dst) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  const size_t row_bytes = KvRowBytes(dtype, width);
  for (size_t r = 0; r < rows; ++r, src += width, out += row_bytes) {
    switch (dtype) {
      case KvDtype::kBFloat16:
        for (size_t i = 0; i < width; ++i) {
          const uint16_t h = RoundToBFloat16(src[i]);
          memcpy(out + 2 * i, &h, sizeof(h));
        }
        break;
      case KvDtype::kInt8:
        StoreInt8Row(src, width, out);
        break;
      case KvDtype::kFloat32:
      default:
        memcpy(out, src, width * sizeof(float));
        break;
    }
  }
}

void LoadKvRow(KvDtype dtype, const void* src, size_t width, float* dst) {
  const uint8_t* in = static_cast<const uint8_t*>(src);
  switch (dtype) {
    case KvDtype::kBFloat16:
      for (size_t i = 0; i < width; ++i) {
        uint16_t h;
        memcpy(&h, in + 2 * i, sizeof(h));
        const uint32_t bits = static_cast<uint32_t>(h) << 16;
        memcpy(dst + i, &bits, sizeof(float));
      }
      break;
    case KvDtype::kInt8: {
      const int8_t* q = reinterpret_cast<const int8_t*>(in);
      for (size_t i = 0; i < width; ++i) {
        float scale;
        memcpy(&scale, in + width + i / kInt8Block * sizeof(float),
               sizeof(scale));
        dst[i] = static_cast<float>(q[i]) * scale;
      }
      break;
    }
    case KvDtype::kFloat32:
    default:
      memcpy(dst, in, width * sizeof(float));
      break;
  }
}

}  // namespace causal_attention
