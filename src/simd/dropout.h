// Counter-based dropout mask: the decision for weight (row, key) is a pure
// hash of (seed, row, key), so a tiled kernel, the untiled kernel, the scalar
// reference, any thread count and any SIMD width all drop the same weights.
//
// row = (batch * heads + head) * query_len + query; key = key index.
// A row key (two 32-bit words) is derived once per row with SplitMix64;
// each weight then costs two rounds of MurmurHash3's 32-bit finaliser, which
// vectorises with plain 32-bit integer lanes (see dropout-inl.h).
// The top 24 bits of the hash are compared with round(p · 2^24).

#ifndef CAUSAL_ATTENTION_SRC_DROPOUT_H_
#define CAUSAL_ATTENTION_SRC_DROPOUT_H_

#include <stdint.h>

#include <cmath>

namespace causal_attention {
namespace dropout {

constexpr uint32_t kKeyMul = 0x9E3779B9u;  // 2^32 / golden ratio, odd
constexpr uint32_t kFmixMul1 = 0x85EBCA6Bu;
constexpr uint32_t kFmixMul2 = 0xC2B2AE35u;
constexpr int kHashBits = 24;

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct RowKey {
  uint32_t k0;
  uint32_t k1;
};

inline RowKey MakeRowKey(uint64_t seed, uint64_t row) {
  const uint64_t h = SplitMix64(SplitMix64(seed) ^ row);
  return RowKey{static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32)};
}

inline uint32_t Fmix32(uint32_t x) {
  x ^= x >> 16;
  x *= kFmixMul1;
  x ^= x >> 13;
  x *= kFmixMul2;
  x ^= x >> 16;
  return x;
}

// Uniform in [0, 2^24).
inline uint32_t Hash24(RowKey key, uint32_t col) {
  uint32_t x = (col * kKeyMul) ^ key.k0;
  x = Fmix32(x) ^ key.k1;
  return Fmix32(x) >> (32 - kHashBits);
}

// Weights whose Hash24 is below this are dropped. p in [0, 1).
inline uint32_t Threshold(float p) {
  constexpr double kRange = static_cast<double>(1u << kHashBits);
  const double t = std::floor(static_cast<double>(p) * kRange + 0.5);
  if (!(t > 0)) return 0;
  return static_cast<uint32_t>(t > kRange ? kRange : t);
}

// What a kept weight is multiplied by.
inline float KeepScale(float p) {
  return static_cast<float>(1.0 / (1.0 - static_cast<double>(p)));
}

}  // namespace dropout
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_DROPOUT_H_
