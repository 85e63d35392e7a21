// Holds the SIMD128 kernels of a Precision::kInt8 prefill in lanes
// (ScoreLanesWide, ValuesLanesWide: src/attention/wasm/int16_rows-inl.h) to
// their portable copies (ScoreLanesWideRef, ValuesLanesWideRef:
// src/attention/int16_rows-inl.h, which the native targets, the sanitizers
// and the fuzzer run) and to the row kernels (DotRowsWide, ValuesRowsWide),
// bit for bit, on random wide rows, queries and weights of many shapes.
// Prints one line per case and exits 1 when any result differs. npm test
// runs it (tests/wasm/run.mjs). By hand, built in
// build/wasm (not part of the package):
//   cmake --build build/wasm --target int16_lanes_check
//   node --no-experimental-fetch build/wasm/tests/int16_lanes_check.js
// (--no-experimental-fetch: emcc 3.1.6's glue would fetch() the .wasm path.)

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "hwy/highway.h"
#include "src/attention/int16_rows-inl.h"

#if HWY_TARGET != HWY_WASM
#error "int16_lanes_check is built for wasm SIMD128 (-msimd128)"
#endif

namespace causal_attention {
namespace HWY_NAMESPACE {
namespace {

struct Lcg {
  uint32_t s;
  uint32_t Next() { return s = s * 1664525u + 1013904223u; }
  float Uniform() { return (Next() >> 8) * (1.0f / 16777216.0f); }
  int16_t Int(int32_t limit) {
    return static_cast<int16_t>(static_cast<int32_t>(Next() >> 8) %
                                    (2 * limit + 1) - limit);
  }
};

// n wide rows of width values within ±limit, a positive scale per block.
std::vector<uint8_t> WideRows(Lcg* u, size_t n, size_t width, int32_t limit) {
  const size_t bytes = internal::WideRowBytes(width);
  std::vector<uint8_t> rows(n * bytes + 16);
  for (size_t j = 0; j < n; ++j) {
    uint8_t* r = rows.data() + j * bytes;
    for (size_t x = 0; x < width; ++x) {
      const int16_t v = u->Int(limit);
      memcpy(r + 2 * x, &v, 2);
    }
    for (size_t b = 0; b * kInt8Block < width; ++b) {
      const float s = 0.001f + u->Uniform();
      memcpy(r + internal::WideRowValuesBytes(width) + 4 * b, &s, 4);
    }
  }
  return rows;
}

bool Same(const float* a, const float* b, size_t n) {
  return memcmp(a, b, n * sizeof(float)) == 0;
}

// One case; returns the number of differing results (0, 1 or 2 each).
int Check(size_t lanes, size_t d, size_t dv, size_t n, uint32_t seed) {
  Lcg u{seed};
  std::vector<int16_t> q(kLaneStride * d, 0);
  std::vector<float> qscale(kLaneStride, 0.0f), shift(kLaneStride);
  for (size_t i = 0; i < lanes * d; ++i) q[i] = u.Int(16383);
  for (size_t i = 0; i < lanes; ++i) qscale[i] = u.Uniform() * 1e-3f;
  for (float& x : shift) x = u.Uniform() * 8.0f - 4.0f;
  const std::vector<uint8_t> k = WideRows(&u, n, d, 4095);
  const std::vector<uint8_t> v = WideRows(&u, n, dv, 2047);
  alignas(16) static uint32_t pairs[kLaneStride * 512];
  LaneQueries lq{q.data(), qscale.data(), nullptr, lanes};
  PackLaneQueries(d, pairs, &lq);
  const size_t lds = kLaneStride, rows_n = (n + 7) & ~size_t{7};
  int differ = 0;
  // Scores: with and without the shift, against the portable copy; without,
  // against the row kernel's transposed.
  const float* shifts[2] = {nullptr, shift.data()};
  for (const float* sh : shifts) {
    std::vector<float> simd(64 * lds, 0.0f), ref(64 * lds, 0.0f);
    ScoreLanesWide(lq, sh, k.data(), internal::WideRowBytes(d), n, d,
                   simd.data(), lds);
    ScoreLanesWideRef(lq, sh, k.data(), internal::WideRowBytes(d), n, d,
                      ref.data(), lds);
    for (size_t j = 0; j < n; ++j) {
      differ += !Same(simd.data() + j * lds, ref.data() + j * lds, lanes);
    }
    if (sh) continue;
    alignas(16) static uint8_t work[1 << 20];
    std::vector<float> rows(kLaneStride * rows_n);
    const size_t lanes4 = (lanes + 3) & ~size_t{3};
    DotRowsWide({q.data(), qscale.data()}, lanes4, k.data(),
                internal::WideRowBytes(d), n, d, work, rows.data(), rows_n);
    for (size_t j = 0; j < n; ++j) {
      for (size_t i = 0; i < lanes; ++i) {
        differ += !Same(&rows[i * rows_n + j], &simd[j * lds + i], 1);
      }
    }
  }
  // Values: weights in [0, 1] with zeros (keys a lane does not see).
  std::vector<float> p(64 * lds, 0.0f), pr(kLaneStride * 64, 0.0f);
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < lanes; ++i) {
      const float w = u.Next() % 5 == 0 ? 0.0f : u.Uniform();
      p[j * lds + i] = w;
      pr[i * 64 + j] = w;
    }
  }
  std::vector<float> c0(kLaneStride * dv);
  for (float& x : c0) x = u.Uniform();
  std::vector<float> simd = c0, ref = c0, rows = c0;
  alignas(16) static uint8_t work[1 << 20], lane_work[1 << 20];
  const bool a = ValuesLanesWide(p.data(), lds, lanes, n, v.data(),
                                 internal::WideRowBytes(dv), dv, work,
                                 lane_work, simd.data(), dv);
  const bool b = ValuesLanesWideRef(p.data(), lds, lanes, n, v.data(),
                                    internal::WideRowBytes(dv), dv, ref.data(),
                                    dv);
  const bool c = ValuesRowsWide(pr.data(), 64, lanes, n, v.data(),
                                internal::WideRowBytes(dv), dv, work,
                                rows.data(), dv);
  differ += !(a && b && c);
  differ += !Same(simd.data(), ref.data(), lanes * dv);
  differ += !Same(simd.data(), rows.data(), lanes * dv);
  return differ;
}

int Main() {
  int cases = 0, failed = 0;
  uint32_t seed = 1;
  for (size_t lanes : {4, 8, 12, 16, 20, 32}) {
    for (size_t d : {16, 48, 64, 128}) {
      for (size_t n : {1, 2, 7, 33, 64}) {
        const size_t dv = d == 48 ? 80 : d;
        const int differ = Check(lanes, d, dv, n, seed++);
        ++cases;
        if (differ) {
          ++failed;
          printf("lanes %zu d %zu dv %zu n %zu: %d results differ\n", lanes, d,
                 dv, n, differ);
        }
      }
    }
  }
  printf("%d cases, %d with differences\n", cases, failed);
  return failed ? 1 : 0;
}

}  // namespace
// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace causal_attention

int main() { return causal_attention::HWY_NAMESPACE::Main(); }
