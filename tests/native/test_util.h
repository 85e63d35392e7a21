// Helpers shared by the native tests.

#ifndef CAUSAL_ATTENTION_TESTS_NATIVE_TEST_UTIL_H_
#define CAUSAL_ATTENTION_TESTS_NATIVE_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/attention.h"

namespace causal_attention {
namespace testing_util {

inline std::vector<float> RandomVector(size_t n, std::mt19937* rng,
                                       float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(*rng);
  return v;
}

// The tolerance every fast path is held to: |a - ref| <= 1e-5 (1 + |ref|).
constexpr double kTolerance = 1e-5;

// Compares element-wise; NaN must match NaN. Reports the worst element.
inline ::testing::AssertionResult NearReference(const std::vector<float>& got,
                                                const std::vector<float>& ref,
                                                double tol = kTolerance) {
  if (got.size() != ref.size()) {
    return ::testing::AssertionFailure()
           << "size " << got.size() << " vs " << ref.size();
  }
  double worst = 0.0;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool gn = std::isnan(got[i]), rn = std::isnan(ref[i]);
    if (gn || rn) {
      if (gn != rn) {
        return ::testing::AssertionFailure()
               << "NaN mismatch at " << i << ": " << got[i] << " vs " << ref[i];
      }
      continue;
    }
    const double excess = std::fabs(static_cast<double>(got[i]) - ref[i]) /
                          (1.0 + std::fabs(static_cast<double>(ref[i])));
    if (excess > worst) {
      worst = excess;
      worst_i = i;
    }
  }
  if (worst > tol) {
    return ::testing::AssertionFailure()
           << "element " << worst_i << ": " << got[worst_i] << " vs "
           << ref[worst_i] << " (error/(1+|ref|) = " << worst << " > " << tol
           << ")";
  }
  return ::testing::AssertionSuccess();
}

inline std::string Describe(const AttentionShape& s,
                            const AttentionOptions& o) {
  return "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) +
         " Tq=" + std::to_string(s.query_len) +
         " Tk=" + std::to_string(s.key_len) +
         " D=" + std::to_string(s.head_dim) +
         " Dv=" + std::to_string(s.value_dim) +
         " causal=" + std::to_string(static_cast<int>(o.causal)) +
         " strategy=" + std::to_string(static_cast<int>(o.mask_strategy)) +
         " dropout=" + std::to_string(o.dropout) +
         " training=" + std::to_string(o.training) +
         " scale=" + (o.scale ? std::to_string(*o.scale) : "default") +
         (s.kv_heads ? " kv_heads=" + std::to_string(s.kv_heads) : "") +
         (s.kv_capacity ? " kv_capacity=" + std::to_string(s.kv_capacity) : "");
}

// [heads, rows, d] -> [heads, cap, d], rows rows.. cap of each head NaN: a KV
// cache's unused capacity, which no computation may read.
inline std::vector<float> PadRows(const std::vector<float>& dense,
                                  int64_t heads, int64_t rows, int64_t cap,
                                  int64_t d) {
  std::vector<float> out(static_cast<size_t>(heads * cap * d),
                         std::numeric_limits<float>::quiet_NaN());
  for (int64_t h = 0; h < heads; ++h) {
    std::copy(dense.begin() + h * rows * d, dense.begin() + (h + 1) * rows * d,
              out.begin() + h * cap * d);
  }
  return out;
}

// Inputs and outputs of one attention call: q [B, H, Tq, D], k and v
// [B, Hkv, cap, ·] (with GQA and a cache's capacity; rows past key_len NaN).
struct Problem {
  AttentionShape shape;
  AttentionOptions options;
  std::vector<float> q, k, v;

  Problem(const AttentionShape& s, const AttentionOptions& o, std::mt19937* rng)
      : shape(s), options(o) {
    const int64_t kvh = s.batch * (s.kv_heads ? s.kv_heads : s.heads);
    const int64_t cap = s.kv_capacity ? s.kv_capacity : s.key_len;
    q = RandomVector(s.batch * s.heads * s.query_len * s.head_dim, rng);
    k = PadRows(RandomVector(kvh * s.key_len * s.head_dim, rng), kvh, s.key_len,
                cap, s.head_dim);
    v = PadRows(RandomVector(kvh * s.key_len * s.value_dim, rng), kvh,
                s.key_len, cap, s.value_dim);
  }
  size_t OutSize() const {
    return static_cast<size_t>(shape.batch * shape.heads * shape.query_len *
                               shape.value_dim);
  }
  size_t WeightsSize() const {
    return static_cast<size_t>(shape.batch * shape.heads * shape.query_len *
                               shape.key_len);
  }
  // Runs `fn` (Attention or AttentionReference); weights only if asked.
  template <class Fn>
  Status Run(Fn fn, std::vector<float>* out, std::vector<float>* weights) {
    out->assign(OutSize(), -7.0f);  // poison: every element must be written
    if (weights) weights->assign(WeightsSize(), -7.0f);
    return fn(shape, options, q.data(), k.data(), v.data(), out->data(),
              weights ? weights->data() : nullptr);
  }
};

// The SIMD kernel, with and without weights, against the reference (use
// with ASSERT_NO_FATAL_FAILURE or check HasFailure()).
inline void ExpectMatchesReference(Problem& p) {
  SCOPED_TRACE(Describe(p.shape, p.options));
  std::vector<float> ref_out, ref_w, out, w, out_tiled;
  ASSERT_EQ(p.Run(AttentionReference, &ref_out, &ref_w), Status::kOk);
  ASSERT_EQ(p.Run(Attention, &out, &w), Status::kOk);
  EXPECT_TRUE(NearReference(out, ref_out)) << "output, with weights";
  EXPECT_TRUE(NearReference(w, ref_w)) << "weights";
  ASSERT_EQ(p.Run(Attention, &out_tiled, nullptr), Status::kOk);
  EXPECT_TRUE(NearReference(out_tiled, ref_out)) << "output, no weights";
}

}  // namespace testing_util
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_TESTS_NATIVE_TEST_UTIL_H_
